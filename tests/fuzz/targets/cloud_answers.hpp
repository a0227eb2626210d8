#pragma once
// A fuzz input as a sequence of a cloud's answers, one per call the product makes, in order:
// answers are separated by a line "====", and each starts with its HTTP status as three digits
// ("200{...}"); an answer without one stands for a transport failure. Text, so that the seeds
// are a cloud's real answers written out by hand.
#include <cctype>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kfleet::fuzz {

struct CannedAnswer {
  std::optional<long> status;  // nullopt: the call failed in transport
  std::string body;
};

// The input's parts between "====" lines, as they are.
inline std::vector<std::string> split_parts(const std::string& in) {
  static const std::string sep = "\n====\n";
  std::vector<std::string> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t end = in.find(sep, at);
    out.push_back(in.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) return out;
    at = end + sep.size();
  }
}

inline std::vector<CannedAnswer> split_answers(const std::string& in) {
  static const std::string sep = "\n====\n";
  std::vector<CannedAnswer> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t end = in.find(sep, at);
    std::string part = in.substr(at, end == std::string::npos ? std::string::npos : end - at);
    CannedAnswer a;
    if (part.size() >= 3 && std::isdigit(static_cast<unsigned char>(part[0])) &&
        std::isdigit(static_cast<unsigned char>(part[1])) && std::isdigit(static_cast<unsigned char>(part[2]))) {
      a.status = std::stol(part.substr(0, 3));
      part.erase(0, 3);
    }
    a.body = std::move(part);
    out.push_back(std::move(a));
    if (end == std::string::npos) break;
    at = end + sep.size();
  }
  return out;
}

}  // namespace kfleet::fuzz
