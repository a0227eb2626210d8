#pragma once
// The CA certificate kfleetd hands to the agents it provisions, so that they verify its TLS
// certificate (kfleet-agent --ca-file). It travels into shell scripts (a startup script's
// heredoc) and files on the instance, so only PEM certificates are accepted: BEGIN/END
// CERTIFICATE lines with base64 between them, and nothing else.
#include <string>
#include <string_view>

namespace kfleet {

// "" when `pem` is one or more PEM certificates and nothing else; otherwise what is wrong.
inline std::string pem_certificates_problem(std::string_view pem) {
  constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----";
  constexpr std::string_view kEnd = "-----END CERTIFICATE-----";
  int certs = 0;
  bool inside = false, body = false;
  std::size_t line_no = 0;
  while (!pem.empty()) {
    const std::size_t nl = pem.find('\n');
    std::string_view line = pem.substr(0, nl);
    pem.remove_prefix(nl == std::string_view::npos ? pem.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string at = "line " + std::to_string(line_no) + ": ";
    if (line.empty()) {
      if (inside) return at + "an empty line inside a certificate";
      continue;
    }
    if (!inside) {
      if (line != kBegin) return at + "expected " + std::string(kBegin) + " (a PEM CA certificate)";
      inside = true;
      body = false;
      continue;
    }
    if (line == kEnd) {
      if (!body) return at + "a certificate with no body";
      inside = false;
      ++certs;
      continue;
    }
    if (line.size() > 76) return at + "a line longer than 76 characters";
    for (char c : line)
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '+' || c == '/' || c == '='))
        return at + "a character that is not base64";
    body = true;
  }
  if (inside) return "the last certificate has no " + std::string(kEnd) + " line";
  if (certs == 0) return "no certificate (expected " + std::string(kBegin) + ")";
  return "";
}

}  // namespace kfleet
