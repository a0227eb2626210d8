#include "http.hpp"

#include <charconv>

namespace kfleet::api {

std::int64_t Ctx::id() const {
  auto it = params.find("id");
  if (it == params.end()) return 0;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) return 0;
  return v;
}

std::int64_t Ctx::query_int(const std::string& k, std::int64_t dflt) const {
  auto it = query.find(k);
  if (it == query.end() || it->second.empty()) return dflt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) return dflt;
  return v;
}

bool Ctx::wants_sse() const {
  auto it = req.find(http::field::accept);
  return it != req.end() && it->value().find("text/event-stream") != std::string_view::npos;
}

Response json_response(const Request& req, http::status st, const nlohmann::json& body) {
  return json_text_response(req, st,
                            body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Response json_text_response(const Request& req, http::status st, std::string body) {
  Response res{st, req.version()};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

Response error_response(const Request& req, http::status st, const std::string& code,
                        const std::string& message, const nlohmann::json& details) {
  nlohmann::json err = {{"code", code}, {"message", message}};
  if (!details.empty()) err["details"] = details;
  return json_response(req, st, {{"error", err}});
}

http::status status_for(Errc c) {
  switch (c) {
    case Errc::invalid_argument: return http::status::bad_request;
    case Errc::not_found: return http::status::not_found;
    case Errc::conflict: return http::status::conflict;
    case Errc::unauthorized: return http::status::unauthorized;
    case Errc::forbidden: return http::status::forbidden;
    case Errc::too_large: return http::status::payload_too_large;
    case Errc::unavailable: return http::status::service_unavailable;
    case Errc::internal: return http::status::internal_server_error;
  }
  return http::status::internal_server_error;
}

Response error_response(const Request& req, const Error& e) {
  return error_response(req, status_for(e.code), errc_name(e.code), e.message);
}

namespace {
int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
std::string pct_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hexval(s[i + 1]) >= 0 &&
               hexval(s[i + 2]) >= 0) {
      out += static_cast<char>(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}
}  // namespace

std::map<std::string, std::string> parse_query(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    auto amp = q.find('&');
    auto part = q.substr(0, amp);
    auto eq = part.find('=');
    if (!part.empty())
      out[pct_decode(part.substr(0, eq))] =
          eq == std::string_view::npos ? "" : pct_decode(part.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return out;
}

bool match_path(const std::string& pattern, std::string_view path,
                std::map<std::string, std::string>& params) {
  std::string_view pat = pattern;
  while (true) {
    if (pat.empty() || path.empty()) return pat.empty() && path.empty();
    if (pat.front() != '/' || path.front() != '/') return false;
    pat.remove_prefix(1);
    path.remove_prefix(1);
    auto pe = pat.find('/');
    auto se = path.find('/');
    auto pseg = pat.substr(0, pe);
    auto sseg = path.substr(0, se);
    if (pseg.size() > 2 && pseg.front() == '{' && pseg.back() == '}') {
      if (sseg.empty()) return false;
      params[std::string(pseg.substr(1, pseg.size() - 2))] = pct_decode(sseg);
    } else if (pseg != sseg) {
      return false;
    }
    pat = pe == std::string_view::npos ? std::string_view{} : pat.substr(pe);
    path = se == std::string_view::npos ? std::string_view{} : path.substr(se);
  }
}

}  // namespace kfleet::api
