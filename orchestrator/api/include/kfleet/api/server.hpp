#pragma once
// kfleetd's HTTP/1.1 API (Boost.Beast, C++20 coroutines) over the control plane: versioned
// REST under /api/v1, Server-Sent Events for live progress, the dashboards at /, and
// Prometheus metrics at /metrics. Runs on the control plane's io_context thread.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kfleet::api
