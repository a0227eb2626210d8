#include "kfleet/core/live_fleet.hpp"

#include <algorithm>

namespace kfleet::core {

namespace {
bool compiler(const store::AgentRecord& a) { return a.backend == "compile"; }
}  // namespace

void LiveFleet::clear() {
  std::lock_guard lk(mu_);
  agents_.clear();
  slots_.clear();
  runs_.clear();
  waiting_ = 0;
  compile_agents_ = 0;
}

void LiveFleet::add(const store::AgentRecord& a, TimeMs heard_ms) {
  remove(a.id);
  {
    std::lock_guard lk(mu_);
    agents_[a.id] = Agent{a, heard_ms};
  }
  sched::AgentSlot s{a.id, a.region, a.gpus, false, compiler(a), a.host, a.slot};
  auto at = std::lower_bound(slots_.begin(), slots_.end(), a.id,
                             [](const sched::AgentSlot& x, std::int64_t id) { return x.id < id; });
  slots_.insert(at, std::move(s));
  if (compiler(a)) ++compile_agents_;
}

void LiveFleet::remove(std::int64_t agent_id) {
  auto it = agents_.find(agent_id);
  if (it == agents_.end()) return;
  if (compiler(it->second.rec)) --compile_agents_;
  set_waiting(agent_id, false);
  {
    std::lock_guard lk(mu_);
    agents_.erase(it);
  }
  auto at = std::lower_bound(slots_.begin(), slots_.end(), agent_id,
                             [](const sched::AgentSlot& x, std::int64_t id) { return x.id < id; });
  if (at != slots_.end() && at->id == agent_id) slots_.erase(at);
}

LiveFleet::Agent* LiveFleet::find(std::int64_t agent_id) {
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? nullptr : &it->second;
}

const LiveFleet::Agent* LiveFleet::find(std::int64_t agent_id) const {
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? nullptr : &it->second;
}

sched::AgentSlot* LiveFleet::slot_of(std::int64_t agent_id) {
  auto at = std::lower_bound(slots_.begin(), slots_.end(), agent_id,
                             [](const sched::AgentSlot& x, std::int64_t id) { return x.id < id; });
  return at != slots_.end() && at->id == agent_id ? &*at : nullptr;
}

void LiveFleet::set_waiting(std::int64_t agent_id, bool waiting) {
  sched::AgentSlot* s = slot_of(agent_id);
  if (!s || s->idle == waiting) return;
  s->idle = waiting;
  if (waiting) ++waiting_;
  else --waiting_;
}

void LiveFleet::leased(std::int64_t agent_id, std::int64_t run_id) {
  set_waiting(agent_id, false);
  if (Agent* a = find(agent_id)) {
    a->rec.state = store::AgentState::busy;
    a->rec.current_run_id = run_id;
  }
}

void LiveFleet::freed(std::int64_t agent_id, std::int64_t run_id, store::AgentState s, TimeMs now) {
  erase_run(run_id);
  Agent* a = find(agent_id);
  if (!a || a->rec.current_run_id != run_id) return;  // as the store: only its holder is freed
  if (a->rec.state == store::AgentState::busy) a->rec.state = s;
  a->rec.current_run_id = 0;
  a->rec.last_seen_ms = std::max(a->rec.last_seen_ms, now);
  heard(*a, now);
}

void LiveFleet::heard(Agent& a, TimeMs now) {
  if (now <= a.heard_ms) return;
  std::lock_guard lk(mu_);
  a.heard_ms = now;
}

LiveFleet::Run* LiveFleet::find_run(std::int64_t run_id) {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : &it->second;
}

LiveFleet::Run& LiveFleet::put_run(std::int64_t run_id, Run r) {
  std::lock_guard lk(mu_);
  return runs_[run_id] = std::move(r);
}

void LiveFleet::erase_run(std::int64_t run_id) {
  std::lock_guard lk(mu_);
  runs_.erase(run_id);
}

void LiveFleet::renew(Run& r, TimeMs expires_ms) {
  std::lock_guard lk(mu_);
  r.expires_ms = expires_ms;
}

std::optional<TimeMs> LiveFleet::heard_shared(std::int64_t agent_id) const {
  std::lock_guard lk(mu_);
  auto it = agents_.find(agent_id);
  if (it == agents_.end()) return std::nullopt;
  return it->second.heard_ms;
}

std::optional<std::pair<std::int64_t, TimeMs>> LiveFleet::lease_shared(std::int64_t run_id) const {
  std::lock_guard lk(mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return std::pair{it->second.fencing_token, it->second.expires_ms};
}

const LiveFleet::Run* LiveFleet::run(std::int64_t run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : &it->second;
}

std::vector<sched::SlotUse> LiveFleet::slot_uses() const {
  std::vector<sched::SlotUse> out;
  out.reserve(runs_.size());
  for (const auto& [id, r] : runs_) out.push_back({r.host, r.slot, r.host_exclusive});
  return out;
}

}  // namespace kfleet::core
