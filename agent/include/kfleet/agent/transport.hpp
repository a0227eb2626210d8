#pragma once
// What the agent says to kfleetd (orchestrator/api/openapi.yaml), behind an interface so the
// pipeline, the spool uploader and the heartbeat logic are tested without a network.
// Every call is safe to make from several threads at once.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/agent/backend.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/event.hpp"
#include "kfleet/common/http_client.hpp"
#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/model.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::agent {

struct Enrolment {
  std::int64_t agent_id = 0;
  std::string token;
  int heartbeat_ms = 5000;
  int lease_ttl_ms = 30000;
};

struct Lease {
  std::int64_t run_id = 0;
  std::int64_t job_id = 0;
  std::int64_t fencing_token = 0;
  int ttl_ms = 30000;
  int attempt = 1;
  JobSpec spec;
  std::string bundle_hash;
  Comparison compare;
  // "": every stage; "compile": fetch, build, resources, then hand the job on (a compile
  // agent); "gpu": a compile agent built it, so the GPU stages only.
  std::string phase;
  std::string arch;        // compile phase: the arch to build for; "" when kfleetd knows none
  std::string spec_error;  // the spec did not parse: the run is reported as an error at once
};
// Errc::invalid_argument when the lease has no run; a spec that does not parse is kept in
// spec_error so that the run can still be ended instead of waiting out its TTL.
Result<Lease> lease_from_json(const nlohmann::json& j);

struct HeartbeatReply {
  bool lease_valid = true;
  bool cancel = false;
};

struct UploadAck {
  std::int64_t contiguous = 0;  // every seq 1..contiguous is stored
};

// Errc::unavailable is the fleet's side: kfleetd unreachable or restarting, a reset, a call
// that stalled past its timeout, a 5xx or 429, an answer cut short or garbled. The caller
// retries it with backoff; it never ends a job (agent/README.md, "Whose failure is it").
// Every other code is kfleetd saying no on purpose, and the message says why.
class Transport {
 public:
  virtual ~Transport() = default;
  // Errc::unavailable: retry later; other codes: the server said no (message says why).
  virtual Result<Enrolment> enrol(const nlohmann::json& body) = 0;
  // Uses the agent token from then on.
  virtual void set_agent_token(const std::string& token) = 0;
  // nullopt: nothing for this agent within wait_ms.
  virtual Result<std::optional<Lease>> lease(std::int64_t agent_id, int wait_ms) = 0;
  // run_id 0: idle heartbeat.
  virtual Result<HeartbeatReply> heartbeat(std::int64_t agent_id, std::int64_t run_id,
                                           std::int64_t fencing_token) = 0;
  // Errc::conflict: the fencing token is stale (the run is no longer ours).
  virtual Result<UploadAck> upload_events(std::int64_t run_id, std::int64_t fencing_token,
                                          const std::vector<Event>& events) = 0;
  // Errc::conflict: stale token or the run already ended.
  virtual Result<void> finish(std::int64_t run_id, std::int64_t fencing_token,
                              const Verdict& v) = 0;
  // Checks the content against the hash.
  virtual Result<Bundle> fetch_bundle(const std::string& hash) = 0;
};
using TransportPtr = std::unique_ptr<Transport>;

// How long each call may take before it counts as a stall (Errc::unavailable, retried).
struct TransportTimeouts {
  std::chrono::milliseconds call{30000};         // enrol, event upload, finish
  std::chrono::milliseconds heartbeat{10000};
  std::chrono::milliseconds fetch{120000};       // a bundle of up to the size limit
  std::chrono::milliseconds lease_slack{15000};  // beyond the long poll's own wait_ms
};

// kfleetd over HTTP (libcurl); one connection per calling thread.
// `http` carries the TLS settings (CA file, client certificate).
TransportPtr make_http_transport(const std::string& server_url, const std::string& enrol_token,
                                 HttpOptions http = {}, TransportTimeouts timeouts = {});

}  // namespace kfleet::agent
