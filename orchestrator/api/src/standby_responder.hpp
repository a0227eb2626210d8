#pragma once
// What a standby kfleetd answers instead of acting (several kfleetd on one PostgreSQL; the
// server serves as a standby until it leads, see kfleetd_main.cpp and the README's "SQLite or
// PostgreSQL").
//
// A standby listens on its --listen address with the leader's transport (TLS when
// --tls-cert/--tls-key are given) and authentication (tokens checked against the store on
// every call, so a token the leader revoked is refused here at once), and serves the reads
// straight from the store through a read-only connection: every GET under /api/v1, the event
// feeds and their SSE streams (polling the store), and the dashboards. Its GET /metrics is
// `kfleet_leader 0` alone (the fleet's figures are the leader's: its stockout counters live in
// its memory), so a scraper sees it up. Its answers carry `X-Kfleet-Role: standby` (a
// leader's on PostgreSQL: `leader`).
//
// Everything else gets standby_redirect(): every write (POST and any other method) and the
// agent calls (enrol, heartbeat, lease, events, finish: they are writes too). That answer is
// 503 with `X-Kfleet-Role: standby`, `Retry-After: 1` and the leader's URL in `Location` and
// in the JSON body, so agents and the CLI given several URLs move on to the leader, and a
// person sees where it is. The standby does nothing with such a request.
#include <cstdint>
#include <string>

#include "http.hpp"

namespace kfleet::api {

// The 503 a standby answers for what only the leader does; `leader_url` "" while none serves.
Response standby_redirect(const Request& req, const std::string& leader_url, std::int64_t epoch);

// Whether a standby serves this request itself (a GET or HEAD of a route that reads the
// store) rather than redirecting it to the leader. `route_access` is the matched route's
// access rule, nullptr for paths outside the route table (the dashboards' files).
bool standby_serves(http::verb method, const Access* route_access);

}  // namespace kfleet::api
