// PostgreSQL URL helpers, in every build (kfleetd tells a URL from a SQLite path with them).
#include "kfleet/store/postgres.hpp"

namespace kfleet::store {

bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

namespace {

// [begin, end) of the password in scheme://user:password@host..., or npos.
std::pair<std::size_t, std::size_t> password_span(const std::string& url) {
  const auto none = std::make_pair(std::string::npos, std::string::npos);
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return none;
  const std::size_t start = scheme + 3;
  auto at = url.find('@', start);
  auto slash = url.find('/', start);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return none;
  auto colon = url.find(':', start);
  if (colon == std::string::npos || colon > at) return none;
  return {colon + 1, at};
}

}  // namespace

std::string redact_postgres_url(const std::string& url) {
  std::string out = url;
  auto [b, e] = password_span(url);
  if (b != std::string::npos) out = url.substr(0, b) + "***" + url.substr(e);
  // A password given as a query parameter (?password=...) is hidden too.
  auto p = out.find("password=");
  if (p != std::string::npos && p > 0 && (out[p - 1] == '?' || out[p - 1] == '&')) {
    auto end = out.find('&', p);
    out = out.substr(0, p + 9) + "***" + (end == std::string::npos ? "" : out.substr(end));
  }
  return out;
}

bool postgres_url_has_password(const std::string& url) { return redact_postgres_url(url) != url; }

}  // namespace kfleet::store
