#pragma once
// Scheduling as pure policy: (queue, fleet view, blocks, now) -> decisions. No I/O, no clock:
// the control plane takes a snapshot, calls plan(), and carries the decisions out.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kfleet/common/clock.hpp"
#include "kfleet/common/model.hpp"
#include "kfleet/store/store.hpp"

namespace kfleet::sched {

struct PendingJob {
  std::int64_t id = 0;
  int priority = 0;
  std::string gpu;                   // class or arch
  std::vector<std::string> regions;  // preference order; empty = any
  // Its build and resources gate go to a compile agent first (any region: a build needs no
  // GPU); false: a GPU agent of its class runs it, whole or after a compile agent built it.
  bool compile = false;
  bool host_exclusive = false;       // needs every other GPU slot of its host idle
  // kernel.language: triton and torch need an agent whose Python records them
  // (kfleet::gpu_runs_language); "" = any, the GPU class decides.
  std::string language;
};

// One agent serves one GPU: the slot `slot` of host `host`. An empty host is a host of its own.
struct AgentSlot {
  std::int64_t id = 0;
  std::string region;
  std::vector<GpuInfo> gpus;
  bool idle = false;                 // enrolled, alive, holding no run
  bool compiler = false;             // a compile agent (no GPU): takes only compile-phase jobs
  std::string host;
  int slot = 0;
};

// A running lease: the slot it holds, and whether it holds its whole host.
struct SlotUse {
  std::string host;
  int slot = 0;
  bool host_exclusive = false;
};

struct ProvisionerView {
  std::string name;                  // matches RegionBlock::provider
  bool can_grow = false;
  int capacity_budget = 0;           // instances it may still start now
  std::vector<std::string> regions;  // where it can provision (used when a job says "any")
  std::vector<std::string> gpu_classes;
  int gpus_per_instance = 1;         // GPU slots one request brings (one agent per GPU)
};

struct InFlight {                    // a capacity request under way
  std::int64_t job_id = 0;
  std::string region;
  std::string gpu;
  int gpus = 1;                      // GPU slots it brings; the rest serve other queued jobs
};

struct Snapshot {
  std::vector<PendingJob> queue;     // any order; plan() orders by priority desc, id asc
  std::vector<AgentSlot> agents;
  // The agents when the caller keeps them between plans (the control plane's live fleet, which
  // a pass would otherwise copy whole): plan() reads these instead of `agents`.
  const std::vector<AgentSlot>* fleet = nullptr;
  const std::vector<AgentSlot>& all_agents() const { return fleet ? *fleet : agents; }
  std::vector<SlotUse> running;      // leases held now (a lost agent's slot stays held)
  std::vector<store::RegionBlock> blocks;
  std::optional<ProvisionerView> provisioner;
  std::vector<InFlight> in_flight;
  TimeMs now = 0;
};

struct Assign {
  std::int64_t job_id = 0, agent_id = 0;
  std::string region;
  std::string reason;                // "idle L4 agent 3 in us-west1-b (2nd choice)"
};
struct RequestCapacity {
  std::int64_t job_id = 0;
  std::string region, gpu;
  std::string reason;                // "no idle L4; us-central1-a blocked (stockout) until ..."
  int gpus = 1;                      // GPUs it asks for: one instance of this many
};
struct Wait {
  std::int64_t job_id = 0;
  bool capacity = false;             // true: show waiting_capacity (every region out)
  std::string reason;
  TimeMs retry_at_ms = 0;            // earliest block expiry that could help; 0 = on any change
  std::string waits_for;             // "host": a whole host, not a GPU (host-exclusive jobs)
  std::string host;                  // which host, when waits_for is "host"
};
struct Plan {
  std::vector<Assign> assign;
  std::vector<RequestCapacity> provision;
  std::vector<Wait> wait;
};

// The whole decision for one snapshot. Its cost grows with the queued jobs planned and the
// agents once each, not their product: the idle agents that serve each kind of job (GPU,
// language, regions) are listed once per plan, best first, and jobs of that kind take them in
// turn.
Plan plan(const Snapshot& s);

// Could `a` run `j` at all: a GPU agent of the job's GPU (and language) in one of its regions?
// Host slots, idleness and other jobs aside: a cheap first question (does an agent that just
// asked for work need a pass?).
bool could_run(const AgentSlot& a, const PendingJob& j);

// Does an agent in `have` serve a job that lists `want`? Exact, or `have` is a zone of the
// region `want` ("us-east-1a" in "us-east-1", "us-central1-a" in "us-central1").
bool region_matches(const std::string& want, const std::string& have);

// Cool-downs after a failed capacity request. Stockouts grow (base * 2^(strikes-1), capped),
// each with +-jitter; jitter_unit in [0,1) comes from the caller's RNG (pure here).
struct BlockPolicy {
  TimeMs stockout_base_ms = 60'000;
  TimeMs stockout_max_ms = 30 * 60'000;
  TimeMs unsupported_ms = 24 * 3600'000;
  TimeMs quota_ms = 30 * 60'000;
  double jitter = 0.2;
};
// kind: stockout | unsupported | quota | fatal. `prev` is the current block for the same key
// (expired or not); its strikes carry over when the last block ended recently.
store::RegionBlock next_block(const BlockPolicy& p, const std::optional<store::RegionBlock>& prev,
                              const std::string& provider, const std::string& region,
                              const std::string& gpu_class, const std::string& kind,
                              const std::string& reason, TimeMs now, double jitter_unit);

}  // namespace kfleet::sched
