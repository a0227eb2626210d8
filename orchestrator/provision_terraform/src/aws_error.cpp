#include "kfleet/provision_terraform/aws_error.hpp"

#include <array>
#include <regex>

namespace kfleet::provision {
namespace {

struct Rule {
  const char* pattern;  // ECMAScript regex over the whole error text
  Outcome outcome;
};

// Order matters: a text can hold several codes (an auth error reported after retries of a
// throttled call), and the one that changes what a person must do wins. Terraform's own
// configuration errors ("Unsupported argument") are matched before AWS's "Unsupported" code.
const std::array kRules{
    Rule{R"(\b(AuthFailure|UnauthorizedOperation|InvalidClientTokenId|SignatureDoesNotMatch|ExpiredToken|OptInRequired|Blocked|PendingVerification)\b)", Outcome::fatal},
    Rule{R"(No valid credential sources|failed to refresh cached credentials|failed to retrieve credentials|validating provider credentials)", Outcome::fatal},
    Rule{R"(Unsupported argument|Missing required argument|Invalid value for variable|Invalid provider configuration|Unsupported block type|Reference to undeclared|Module not installed|Inconsistent dependency lock file|Required plugins are not installed|Failed to query available provider packages)", Outcome::fatal},
    Rule{R"(\b(InsufficientInstanceCapacity|InsufficientCapacity|InsufficientHostCapacity|InsufficientReservedInstanceCapacity)\b)", Outcome::stockout},
    Rule{R"(\b(VcpuLimitExceeded|InstanceLimitExceeded|MaxSpotInstanceCountExceeded|VolumeLimitExceeded|AddressLimitExceeded)\b)", Outcome::quota},
    Rule{R"((api error |\b)(Unsupported|UnsupportedOperation): |is not supported in your requested Availability Zone)", Outcome::unsupported},
    Rule{R"(\b(RequestLimitExceeded|Throttling|ThrottlingException|TooManyRequestsException|InternalError|InternalFailure|ServiceUnavailable|Unavailable|RequestTimeout|RequestTimeoutException|IdempotentParameterMismatch)\b)", Outcome::transient},
    Rule{R"(StatusCode: 5[0-9][0-9]\b|status code: 5[0-9][0-9]\b|Error acquiring the state lock|connection reset by peer|i/o timeout|TLS handshake timeout|dial tcp)", Outcome::transient},
};

// The "Code: message" part of an AWS SDK error, or the first non-empty line otherwise.
std::string cloud_words(std::string_view text, const std::string& code) {
  std::string s(text);
  std::size_t start = std::string::npos;
  if (!code.empty()) start = s.find(code + ":");
  if (start == std::string::npos) start = s.find_first_not_of(" \n\t");
  if (start == std::string::npos) return {};
  std::size_t end = s.find('\n', start);
  std::string line = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
  constexpr std::size_t kMax = 400;  // events are short; the full text stays in the daemon's log
  if (line.size() > kMax) line = line.substr(0, kMax - 3) + "...";
  return line;
}

}  // namespace

AwsFailure classify_aws_error(std::string_view error_text) {
  const std::string text(error_text);
  static const std::regex kApiCode(R"(api error ([A-Za-z0-9.]+):)");
  std::smatch code_match;
  std::string code;
  if (std::regex_search(text, code_match, kApiCode)) code = code_match[1].str();

  for (const Rule& rule : kRules) {
    std::regex re(rule.pattern);
    std::smatch m;
    if (!std::regex_search(text, m, re)) continue;
    // Prefer the code that decided, so the message starts with it.
    for (std::size_t i = 1; i < m.size(); ++i) {
      std::string g = m[i].str();
      if (!g.empty() && g != "api error ") { code = g; break; }
    }
    return AwsFailure{rule.outcome, code, cloud_words(text, code)};
  }
  return AwsFailure{Outcome::fatal, code, cloud_words(text, code)};
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::ok: return "ok";
    case Outcome::stockout: return "stockout";
    case Outcome::unsupported: return "unsupported";
    case Outcome::quota: return "quota";
    case Outcome::fatal: return "fatal";
    case Outcome::transient: return "transient";
  }
  return "unknown";
}

}  // namespace kfleet::provision
