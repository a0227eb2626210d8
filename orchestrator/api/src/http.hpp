#pragma once
// HTTP plumbing shared by the handlers: request context, JSON responses, errors with the
// right status, query parsing and a small path router with {param} segments.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "kfleet/common/result.hpp"
#include "kfleet/core/control_plane.hpp"

namespace kfleet::api {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

struct Ctx {
  const Request& req;
  boost::beast::tcp_stream& stream;
  core::ControlPlane& cp;
  std::map<std::string, std::string> params;  // from the path
  std::map<std::string, std::string> query;
  std::string bearer;                         // the Authorization token, if any
  std::int64_t id() const;                    // params["id"] as an integer (0 if absent)
  std::int64_t query_int(const std::string& k, std::int64_t dflt) const;
  bool wants_sse() const;
};

Response json_response(const Request& req, http::status st, const nlohmann::json& body);
Response error_response(const Request& req, http::status st, const std::string& code,
                        const std::string& message,
                        const nlohmann::json& details = nlohmann::json::array());
// Maps an Error's code to a status (invalid_argument 400, not_found 404, conflict 409, ...).
Response error_response(const Request& req, const Error& e);
http::status status_for(Errc c);

// A handler returns its response, or nullopt when it wrote to the stream itself (SSE).
using Handler = std::function<boost::asio::awaitable<std::optional<Response>>(Ctx&)>;

struct Route {
  http::verb method;
  std::string pattern;  // "/api/v1/jobs/{id}/events"
  Handler handler;
};

// Splits "a=1&b=x%20y" into a map, percent-decoded.
std::map<std::string, std::string> parse_query(std::string_view q);
// Matches a path against a pattern; fills params.
bool match_path(const std::string& pattern, std::string_view path,
                std::map<std::string, std::string>& params);

std::vector<Route> make_routes();                  // routes.cpp
boost::asio::awaitable<std::optional<Response>> serve_static(Ctx& c, const std::string& dir);

}  // namespace kfleet::api
