#pragma once
// HTTP plumbing shared by the handlers: request context, JSON responses, errors with the
// right status, query parsing and a small path router with {param} segments.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "kfleet/common/result.hpp"
#include "kfleet/core/control_plane.hpp"

namespace kfleet::api {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// Who may call a route. The table in routes.cpp gives each route one; openapi.yaml declares
// the same as `x-kfleet-access` (tests/openapi_gtest.cpp keeps them equal) and the server
// enforces it in one place (authorizer.cpp, called by server.cpp) before any handler runs.
enum class Access {
  open,      // anyone (health)
  metrics,   // anyone with kfleetd --metrics-open, else a read token
  read,      // a user token of scope read or more
  submit,    // scope submit or admin
  admin,     // scope admin
  bundle,    // a read token, or the agent whose current lease is for this bundle
  agent,     // the agent named by {id} in the path, with its own token
  agent_run, // an agent token; the handler checks it holds run {id}
  enrol,     // the fleet's enrolment token
};
const char* to_string(Access a);

// Writes raw bytes to the connection (SSE), TLS or not.
using RawWriter = std::function<boost::asio::awaitable<void>(std::string)>;

struct Ctx {
  const Request& req;
  RawWriter write_raw;
  core::ControlPlane& cp;
  std::map<std::string, std::string> params;  // from the path
  std::map<std::string, std::string> query;
  std::string bearer;                         // the Authorization token, if any
  std::optional<core::Principal> user;        // set when a user token authenticated
  std::int64_t agent_id = 0;                  // set when an agent token authenticated
  std::string role;                           // X-Kfleet-Role of the answer ("": none, SQLite)
  // The store the handler reads: the control plane's, or on the API's read thread that
  // thread's own connection (server.hpp); the read thread's handlers read only through it.
  store::Store* reads = nullptr;
  store::Store& store() const { return reads ? *reads : cp.store(); }
  std::string user_name() const { return user ? user->user : std::string(); }
  std::int64_t id() const;                    // params["id"] as an integer (0 if absent)
  std::int64_t query_int(const std::string& k, std::int64_t dflt) const;
  bool wants_sse() const;
};

Response json_response(const Request& req, http::status st, const nlohmann::json& body);
// The same, for a body already written as JSON text (a listing's page: views.hpp's append_*).
Response json_text_response(const Request& req, http::status st, std::string body);
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
  Access access;
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
