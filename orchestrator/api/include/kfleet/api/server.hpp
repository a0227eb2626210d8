#pragma once
// kfleetd's HTTP/1.1 API (Boost.Beast, C++20 coroutines) over the control plane: versioned
// REST under /api/v1, Server-Sent Events for live progress, the dashboards at /, and
// Prometheus metrics at /metrics. Runs on the control plane's io_context thread; with
// serve_reads(), a user's most read pages (the job list, one job, the agent list) are served on
// a thread and a store connection of their own.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "kfleet/common/clock.hpp"
#include "kfleet/common/result.hpp"
#include "kfleet/core/control_plane.hpp"

namespace kfleet::api {

struct ServerOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;                   // 0: any free port (tests)
  std::size_t max_body_bytes = 8u << 20;    // larger requests get 413
  std::string static_dir;                   // dashboards; "" serves a built-in page
  std::int64_t max_lease_wait_ms = 60'000;
  bool metrics_open = false;                // /metrics without a token (kfleetd --metrics-open)
  // TLS: with a certificate and key the server speaks HTTPS only (TLS 1.2 or newer).
  std::string tls_cert_file, tls_key_file;
  // With a client CA, agent calls (enrol, heartbeat, lease, events, finish) need a client
  // certificate it signed (mTLS); user calls stay on tokens.
  std::string tls_client_ca_file;
  // Rate limits: submissions per token and failed authentications per client address,
  // per minute (0: off). Over the limit: 429 with Retry-After.
  int submit_per_minute = 120;
  int auth_failures_per_minute = 30;
  ClockPtr clock;  // the rate limits' time; null: the system's (kfleetd passes the control plane's)
  // Several kfleetd on one PostgreSQL: "leader" or "standby", sent as X-Kfleet-Role on every
  // answer. A standby serves the reads from its (read-only) store and answers every write,
  // agent call and /metrics 503 with the leader's URL (standby_responder.hpp). "": one
  // kfleetd (SQLite), no header.
  std::string role;
};

// Whether this build can serve TLS (OpenSSL was found).
bool tls_available();

struct RouteInfo {
  std::string method;  // GET, POST
  std::string path;    // "/api/v1/jobs/{id}"
  std::string access;  // open | metrics | read | submit | admin | bundle | agent | agent_run | enrol
};
// Every route the server answers (the OpenAPI test compares this with openapi.yaml).
std::vector<RouteInfo> route_table();

class Server {
 public:
  Server(boost::asio::io_context& io, core::ControlPlane& cp, ServerOptions o);
  ~Server();
  // Binds and starts accepting; returns the bound port.
  Result<std::uint16_t> listen();
  void stop();
  std::uint16_t port() const;
  // A standby's view of who leads (for its 503 answers); "" while none serves.
  void set_leader(const std::string& url, std::int64_t epoch);
  // The standby now leads: from the next request on, everything goes to `cp` (the leader's
  // control plane over a writable store) and answers say `X-Kfleet-Role: leader`. The
  // listening socket stays open throughout. Streams already open keep reading through the
  // standby's control plane, which must outlive them (kfleetd keeps it to the end).
  void promote(core::ControlPlane& cp);
  // From now on the job list, one job and the agent list, asked by a user whose token this
  // leader has checked already, are served on a thread of their own that reads `reads` (a
  // second connection to the same database), so that they wait neither behind the agents'
  // calls nor behind the control plane's store round trips on the control plane's thread. A
  // plain-HTTP connection moves to the thread its request is for; over TLS every request stays
  // on the control plane's thread (a TLS session cannot change io_context). Call it on the
  // control plane's thread once the control plane started (and after promote()); stop() ends
  // the thread, which must end before the control plane goes.
  void serve_reads(store::StorePtr reads);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kfleet::api
