#pragma once
// One blocking HTTPS call over libcurl with the headers Google's endpoints want (a bearer token,
// Metadata-Flavor). A transport failure is an error; any HTTP status is an answer.
#include <chrono>
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet::provision::gce {

struct Answer {
  long status = 0;
  std::string body;
};

Result<Answer> call(const std::string& method, const std::string& url, const std::vector<std::string>& headers,
                    const std::string& body, std::chrono::milliseconds timeout);

// application/x-www-form-urlencoded value.
std::string form_escape(const std::string& s);

}  // namespace kfleet::provision::gce
