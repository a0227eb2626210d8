#pragma once
// What the user reads when kfleetd cannot be reached or says no: one line they can act on,
// followed by the API's file:line:col details when it gave any. Pure, so the wording is tested.
#include <string>

#include "kfleet/common/result.hpp"

namespace kfleet::cli {

// A non-2xx answer: the Errc follows the status (400 invalid_argument, 401 unauthorized, ...)
// and the message carries the API's message and details.
Error describe_http_failure(long status, const std::string& body);

// A transport failure (refused, timeout, DNS): Errc::unavailable with the hint to start kfleetd.
// `message` is the transport's own error text, boiled down to its cause ("connection refused").
Error describe_transport_failure(const std::string& server, const std::string& message);

// "GET http://h/api failed: Failed to connect ...: Couldn't connect to server (is ...)" ->
// "connection refused"; unknown causes keep the transport's words.
std::string transport_cause(const std::string& message);

}  // namespace kfleet::cli
