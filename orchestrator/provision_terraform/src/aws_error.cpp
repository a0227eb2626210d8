#include "kfleet/provision_terraform/aws_error.hpp"

#include <cstddef>
#include <initializer_list>
#include <optional>

namespace kfleet::provision {
namespace {

// The text comes from the cloud (and from whatever terraform relays), so it is searched with
// plain substring scans: linear in its length whatever its content. (A std::regex per rule took
// seconds on a few hundred crafted bytes: libstdc++'s backtracking engine.)

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool word_boundary_before(std::string_view text, std::size_t at) {
  return at == 0 || !is_word_char(text[at - 1]);
}

bool word_boundary_after(std::string_view text, std::size_t end) {
  return end >= text.size() || !is_word_char(text[end]);
}

struct Hit {
  std::size_t at = 0;
  std::string_view word;  // the code that matched, or empty for a phrase
};

// The leftmost place where one of `words` stands as a whole word (an AWS error code).
std::optional<Hit> leftmost_word(std::string_view text, std::initializer_list<std::string_view> words) {
  std::optional<Hit> best;
  for (std::string_view w : words) {
    for (std::size_t p = text.find(w); p != std::string_view::npos; p = text.find(w, p + 1)) {
      if (best && p >= best->at) break;
      if (word_boundary_before(text, p) && word_boundary_after(text, p + w.size())) {
        best = Hit{p, w};
        break;
      }
    }
  }
  return best;
}

// The leftmost place where one of `phrases` occurs anywhere.
std::optional<Hit> leftmost_phrase(std::string_view text, std::initializer_list<std::string_view> phrases) {
  std::optional<Hit> best;
  for (std::string_view ph : phrases) {
    const std::size_t p = text.find(ph);
    if (p != std::string_view::npos && (!best || p < best->at)) best = Hit{p, {}};
  }
  return best;
}

// "StatusCode: 5xx" / "status code: 5xx" (an HTTP 5xx from the AWS API, however it is worded).
std::optional<Hit> server_error_status(std::string_view text) {
  std::optional<Hit> best;
  for (std::string_view lead : {std::string_view("StatusCode: 5"), std::string_view("status code: 5")}) {
    for (std::size_t p = text.find(lead); p != std::string_view::npos; p = text.find(lead, p + 1)) {
      const std::size_t d = p + lead.size();
      if (d + 2 <= text.size() && text[d] >= '0' && text[d] <= '9' && text[d + 1] >= '0' &&
          text[d + 1] <= '9' && word_boundary_after(text, d + 2)) {
        if (!best || p < best->at) best = Hit{p, {}};
        break;
      }
    }
  }
  return best;
}

std::optional<Hit> earliest(std::optional<Hit> a, std::optional<Hit> b) {
  if (!a) return b;
  if (!b) return a;
  return b->at < a->at ? b : a;
}

// "api error <Code>:" as the AWS SDK v2 writes it: the code is letters, digits and dots.
std::string api_error_code(std::string_view text) {
  constexpr std::string_view kLead = "api error ";
  for (std::size_t p = text.find(kLead); p != std::string_view::npos; p = text.find(kLead, p + 1)) {
    std::size_t e = p + kLead.size();
    while (e < text.size() && (is_word_char(text[e]) || text[e] == '.') && text[e] != '_') ++e;
    if (e > p + kLead.size() && e < text.size() && text[e] == ':')
      return std::string(text.substr(p + kLead.size(), e - p - kLead.size()));
  }
  return {};
}

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

// Order matters: a text can hold several codes (an auth error reported after retries of a
// throttled call), and the one that changes what a person must do wins. Terraform's own
// configuration errors ("Unsupported argument") are matched before AWS's "Unsupported" code.
AwsFailure classify_aws_error(std::string_view text) {
  std::string code = api_error_code(text);
  auto decided = [&](Outcome o, const std::optional<Hit>& hit) {
    if (!hit->word.empty()) code = std::string(hit->word);  // the message starts with the code
    return AwsFailure{o, code, cloud_words(text, code)};
  };
  if (auto h = leftmost_word(text, {"AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId",
                                    "SignatureDoesNotMatch", "ExpiredToken", "OptInRequired",
                                    "Blocked", "PendingVerification"}))
    return decided(Outcome::fatal, h);
  if (auto h = leftmost_phrase(text, {"No valid credential sources", "failed to refresh cached credentials",
                                      "failed to retrieve credentials", "validating provider credentials"}))
    return decided(Outcome::fatal, h);
  if (auto h = leftmost_phrase(text, {"Unsupported argument", "Missing required argument",
                                      "Invalid value for variable", "Invalid provider configuration",
                                      "Unsupported block type", "Reference to undeclared",
                                      "Module not installed", "Inconsistent dependency lock file",
                                      "Required plugins are not installed",
                                      "Failed to query available provider packages"}))
    return decided(Outcome::fatal, h);
  if (auto h = leftmost_word(text, {"InsufficientInstanceCapacity", "InsufficientCapacity",
                                    "InsufficientHostCapacity", "InsufficientReservedInstanceCapacity"}))
    return decided(Outcome::stockout, h);
  if (auto h = leftmost_word(text, {"VcpuLimitExceeded", "InstanceLimitExceeded",
                                    "MaxSpotInstanceCountExceeded", "VolumeLimitExceeded",
                                    "AddressLimitExceeded"}))
    return decided(Outcome::quota, h);
  {
    // "Unsupported: " / "UnsupportedOperation: " as a code, or EC2's sentence for a zone.
    std::optional<Hit> as_code;
    for (std::string_view w : {std::string_view("Unsupported: "), std::string_view("UnsupportedOperation: ")})
      for (std::size_t p = text.find(w); p != std::string_view::npos; p = text.find(w, p + 1))
        if (word_boundary_before(text, p)) {
          if (!as_code || p < as_code->at) as_code = Hit{p, w.substr(0, w.size() - 2)};
          break;
        }
    if (auto h = earliest(as_code, leftmost_phrase(text, {"is not supported in your requested Availability Zone"})))
      return decided(Outcome::unsupported, h);
  }
  if (auto h = leftmost_word(text, {"RequestLimitExceeded", "Throttling", "ThrottlingException",
                                    "TooManyRequestsException", "InternalError", "InternalFailure",
                                    "ServiceUnavailable", "Unavailable", "RequestTimeout",
                                    "RequestTimeoutException", "IdempotentParameterMismatch"}))
    return decided(Outcome::transient, h);
  if (auto h = leftmost_phrase(text, {"connection reset by peer", "use of closed network connection",
                                      "unexpected EOF", "broken pipe", "i/o timeout", "TLS handshake timeout",
                                      "dial tcp"})) {
    AwsFailure f = decided(Outcome::transient, h);
    f.transport = true;
    return f;
  }
  if (auto h = earliest(server_error_status(text), leftmost_phrase(text, {"Error acquiring the state lock"})))
    return decided(Outcome::transient, h);
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
