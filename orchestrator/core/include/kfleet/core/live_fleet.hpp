#pragma once
// What the leader holds in memory of its live agents and running leases: liveness (when each
// agent was last heard from) and each lease's expiry, which heartbeats move many times a
// minute, and a mirror of the durable state the control plane itself writes (an agent's state
// and run, a run's agent and GPU slot). The control plane is the store's only writer, so the
// mirror is kept by the calls that change the store; it is loaded from the store at start.
// What lives only here, and so dies with the process: the last-heard times and the lease
// expiries since their last write (docs/architecture.md, "what survives a crash").
//
// One writer, one other reader: the control plane's thread changes everything here and reads
// it without a lock; the API's read thread (server.hpp) reads an agent's last-heard time and a
// running lease's expiry for the pages it serves. So every change of what that thread reads (the
// agents and runs held, heard_ms, a run's fencing token and expiry) is made under mu_ (through
// add, remove, clear, freed, heard, put_run, erase_run, renew), and the other thread reads it
// only under mu_ (heard_shared, lease_shared).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "kfleet/scheduler/scheduler.hpp"
#include "kfleet/store/store.hpp"

namespace kfleet::core {

class LiveFleet {
 public:
  struct Agent {
    store::AgentRecord rec;  // as enrolled; its state and current_run_id as the store has them
    TimeMs heard_ms = 0;     // the last heartbeat, long poll or finish heard (memory only)
  };
  struct Run {
    std::int64_t agent_id = 0, job_id = 0, fencing_token = 0;
    TimeMs expires_ms = 0;         // the lease's expiry: the leader's word
    TimeMs stored_expires_ms = 0;  // what the store holds (written at the grant, then lazily)
    std::string host;              // the GPU slot it holds
    int slot = 0;
    bool host_exclusive = false;
  };

  void clear();
  // A live (not retired) agent, heard from at `heard_ms`; replaces one with the same id.
  void add(const store::AgentRecord& a, TimeMs heard_ms);
  void remove(std::int64_t agent_id);  // retired: no longer part of the fleet
  // The control plane's thread's view; heard_ms and the agents held change only through the
  // calls of this class (a write straight to heard_ms would race the read thread).
  Agent* find(std::int64_t agent_id);
  const Agent* find(std::int64_t agent_id) const;
  const std::map<std::int64_t, Agent>& agents() const { return agents_; }
  // One slice of a periodic sweep over the fleet, from agent id `from` on: the whole fleet when
  // it holds at most `at_once` agents, else `at_once` or a `slices`-th of it, whichever is more.
  // Calls f(id, agent) for each agent of the slice, in id order; returns the id the next slice
  // starts from (0 once the sweep reached the end: the next one starts again at the front).
  template <class F>
  std::int64_t sweep(std::int64_t from, std::size_t at_once, std::size_t slices, F&& f) const {
    const std::size_t n = agents_.size() <= at_once ? agents_.size()
                          : std::max(at_once, agents_.size() / slices + 1);
    auto it = agents_.lower_bound(from);
    for (std::size_t i = 0; it != agents_.end() && i < n; ++it, ++i) f(it->first, it->second);
    return it == agents_.end() ? 0 : it->first;
  }

  // The agent waits in a long poll (the scheduler's "idle"), or no longer does.
  void set_waiting(std::int64_t agent_id, bool waiting);
  std::size_t waiting() const { return waiting_; }
  // The agent took run `run_id` (the store made it busy).
  void leased(std::int64_t agent_id, std::int64_t run_id);
  // Run `run_id` ended and the store freed its agent as free_agent does: current_run_id 0, a
  // busy agent `s` (idle after a finish, lost after an expiry), last seen at least `now`.
  void freed(std::int64_t agent_id, std::int64_t run_id, store::AgentState s, TimeMs now);

  // The scheduler's view: a slot per live agent, in id order.
  const std::vector<sched::AgentSlot>& slots() const { return slots_; }
  int compile_agents() const { return compile_agents_; }

  // Heard from at `now` (a later time only).
  void heard(Agent& a, TimeMs now);

  // Running runs, by id.
  const std::map<std::int64_t, Run>& runs() const { return runs_; }
  const Run* run(std::int64_t run_id) const;
  Run* find_run(std::int64_t run_id);  // to change what the read thread does not read
  Run& put_run(std::int64_t run_id, Run r);
  void erase_run(std::int64_t run_id);
  void renew(Run& r, TimeMs expires_ms);  // the lease's expiry, in memory

  // For another thread: the agent's last-heard time, and a running run's fencing token and
  // lease expiry; nullopt for an agent or run not held. Each takes mu_.
  std::optional<TimeMs> heard_shared(std::int64_t agent_id) const;
  std::optional<std::pair<std::int64_t, TimeMs>> lease_shared(std::int64_t run_id) const;
  std::vector<sched::SlotUse> slot_uses() const;

 private:
  sched::AgentSlot* slot_of(std::int64_t agent_id);
  mutable std::mutex mu_;  // see the top of this file
  std::map<std::int64_t, Agent> agents_;
  std::vector<sched::AgentSlot> slots_;  // sorted by id
  std::size_t waiting_ = 0;
  int compile_agents_ = 0;
  std::map<std::int64_t, Run> runs_;
};

}  // namespace kfleet::core
