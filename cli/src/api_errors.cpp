#include "kfleet/cli/api_errors.hpp"

#include <nlohmann/json.hpp>

#include "json_fields.hpp"

namespace kfleet::cli {

namespace {

Errc errc_for_status(long status) {
  switch (status) {
    case 400: return Errc::invalid_argument;
    case 401: return Errc::unauthorized;
    case 403: return Errc::forbidden;
    case 404: return Errc::not_found;
    case 409: return Errc::conflict;
    case 413: return Errc::too_large;
    case 502: case 503: case 504: return Errc::unavailable;
    default: return Errc::internal;
  }
}

std::string detail_line(const nlohmann::json& d) {
  std::string loc = str_field(d, "file");
  if (auto line = str_field(d, "line"); !line.empty() && line != "0") {
    loc += ":" + line;
    if (auto col = str_field(d, "column"); !col.empty() && col != "0") loc += ":" + col;
  }
  std::string text = loc.empty() ? "" : loc + ": ";
  if (auto field = str_field(d, "field"); !field.empty()) text += field + ": ";
  return text + str_field(d, "message");
}

}  // namespace

Error describe_http_failure(long status, const std::string& body) {
  const Errc code = errc_for_status(status);
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  const auto& err = obj_field(j, "error");
  std::string message = str_field(err, "message");
  if (status == 401)
    return make_error(code, "kfleetd refused the token: set KFLEET_TOKEN or --token-file" +
                                (message.empty() ? "" : " (" + message + ")"));
  if (status == 403)
    return make_error(code, "kfleetd refused the token for this call" +
                                (message.empty() ? "" : " (" + message + ")") +
                                ": ask an admin for a token with that scope (kfleet token create)");
  if (status == 429) {
    if (message.empty()) message = "too many requests";
    return make_error(code, "kfleetd: " + message);
  }
  if (message.empty()) {
    std::string excerpt = body.substr(0, 200);
    message = "kfleetd answered HTTP " + std::to_string(status) +
              (excerpt.empty() ? "" : ": " + excerpt);
  }
  for (const auto& d : arr_field(err, "details")) message += "\n  " + detail_line(d);
  return make_error(code, message);
}

std::string transport_cause(const std::string& message) {
  auto has = [&](const char* needle) { return message.find(needle) != std::string::npos; };
  if (has("refused") || has("Couldn't connect")) return "connection refused";
  if (has("resolve")) return "host not found";
  if (has("imeout") || has("timed out")) return "timed out";
  // "GET <url> failed: <curl's words> (is kfleetd running ...?)": keep curl's words.
  std::string cause = message;
  if (auto at = cause.find(" failed: "); at != std::string::npos) cause = cause.substr(at + 9);
  if (auto hint = cause.find(" (is kfleetd"); hint != std::string::npos) cause.resize(hint);
  return cause;
}

Error describe_transport_failure(const std::string& server, const std::string& message) {
  return make_error(Errc::unavailable, "cannot reach kfleetd at " + server + " (" +
                                           transport_cause(message) +
                                           "); start it with `kfleetd` or pass --server");
}

}  // namespace kfleet::cli
