// Carrying out the scheduler's decisions: agents wait for work in a long-poll; each pass takes
// a snapshot (queue, the agents that are waiting, region blocks, capacity under way), asks the
// pure policy for a plan, then grants leases, asks for capacity, and records why jobs wait.
#include <algorithm>
#include <cctype>
#include <cstdint>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "kfleet/common/event.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/core/control_plane.hpp"
#include "kfleet/core/fleet.hpp"

namespace kfleet::core {

namespace asio = boost::asio;

asio::awaitable<Result<std::optional<LeaseOffer>>> ControlPlane::wait_for_lease(
    std::int64_t agent_id, TimeMs wait_ms) {
  // The agent's state is the live fleet's (memory): a poll reads and writes nothing in the
  // store, unless the agent comes back from lost.
  const TimeMs now = clock_->now_ms();
  LiveFleet::Agent* a = live_agent(agent_id);
  if (!a) {
    auto stored = store_.get_agent(agent_id);
    if (stored && stored->state == store::AgentState::retired)
      co_return make_error(Errc::forbidden, "agent " + std::to_string(agent_id) + " was retired");
    co_return make_error(Errc::not_found,
                         "agent " + std::to_string(agent_id) + " not found; enrol again");
  }
  if (auto h = heard_from(*a, now); !h) co_return h.error();
  if (a->rec.current_run_id != 0)
    if (auto r = lose_undelivered_run(*a, now); !r) co_return r.error();
  if (stopped_) co_return std::optional<LeaseOffer>{};
  // Capacity asked for on a job's behalf counts as coming until its agent asks for work (not
  // merely enrols): otherwise a plan in between would ask the cloud for it a second time.
  bool pass = !a->rec.instance_id.empty() && pending_instances_.erase(a->rec.instance_id) > 0;
  if (auto old = waiters_.find(agent_id); old != waiters_.end())
    end_wait(agent_id, *old->second);  // a newer poll from the same agent replaces the old one
  auto w = std::make_shared<Waiter>(ex_);
  w->timer.expires_after(std::chrono::milliseconds(std::max<TimeMs>(wait_ms, 0)));
  waiters_[agent_id] = w;
  fleet_.set_waiting(agent_id, true);
  // An agent back for work changes nothing for the queue unless it could run a queued job:
  // 10,000 idle agents polling must not each cost a pass.
  if (pass || worth_a_pass(*a)) request_plan();
  boost::system::error_code ec;
  co_await w->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (auto it = waiters_.find(agent_id); it != waiters_.end() && it->second == w) {
    end_wait(agent_id, *w);
    waiters_.erase(it);
  }
  w->done = true;
  co_return std::move(w->offer);
}

Result<void> ControlPlane::lose_undelivered_run(LiveFleet::Agent& a, TimeMs now) {
  // kfleet-agent asks for work only when it holds none: it reports or gives up its run first,
  // and a restarted agent resumes none. An agent asking while kfleetd counts a run as its never
  // got that lease (the answer was cut off or timed out on the way), or restarted without it.
  // The run ends now, as lost: its job goes back to the queue with a new fencing token, rather
  // than waiting out the lease's TTL while every poll of a working agent is refused. Nothing
  // posted under the old token is accepted any more.
  const std::int64_t run_id = a.rec.current_run_id;
  auto j = store_.expire_run(run_id,
                             "agent " + std::to_string(a.rec.id) + " asked for work while run " +
                                 std::to_string(run_id) +
                                 " was its: the lease never reached it (its answer was cut off "
                                 "or timed out), or the agent restarted without it",
                             now);
  fleet_.freed(a.rec.id, run_id, store::AgentState::lost, now);
  if (j) {
    run_agents_.erase(run_id);
    remember_pending(*j);
    log::warn("core", "run ", run_id, " of job ", j->id, ": agent ", a.rec.id,
              " asked for work without it (the lease never reached it); job is now ",
              to_string(j->state));
    events_changed();
    request_plan();
  } else {
    log::warn("core", "cannot end run ", run_id, " that agent ", a.rec.id,
              " no longer holds: ", j.error().message);
  }
  return heard_from(a, now);  // the store's row says the agent is idle again
}

void ControlPlane::end_wait(std::int64_t agent_id, Waiter& w) {
  w.done = true;
  w.timer.cancel();
  fleet_.set_waiting(agent_id, false);
}

bool ControlPlane::worth_a_pass(const LiveFleet::Agent& a) const {
  if (queue_.empty()) return false;
  if (a.rec.backend == "compile") return true;  // builds: any job not yet built
  const auto& slots = fleet_.slots();
  auto slot = std::lower_bound(slots.begin(), slots.end(), a.rec.id,
                               [](const sched::AgentSlot& x, std::int64_t id) { return x.id < id; });
  if (slot == slots.end() || slot->id != a.rec.id) return true;
  // Each class's jobs share what decides who can run them: its first job stands for them.
  for (const auto& [key, c] : classes_) {
    const QueuedJob& j = queue_.at(c.order.begin()->second);
    if (sched::could_run(*slot, {j.id, j.priority, j.gpu, j.regions, false, j.host_exclusive,
                                 j.language}))
      return true;
  }
  return false;
}

bool ControlPlane::plan_runs_at_once() const {
  return !plan_pending_ && !stopped_ &&
         std::chrono::steady_clock::now() - last_plan_end_ >= last_plan_cost_;
}

void ControlPlane::request_plan() {
  if (plan_pending_ || stopped_) return;
  // Passes are paced: the next one waits at least as long as the last one took, which keeps
  // at least half of this thread for the API. Every trigger in between is served by that one
  // pass. A pass plans only the head of each class of alike jobs (snapshot()), so its cost
  // follows the fleet's size rather than the queue's, and this is ~0 ms.
  const bool at_once = plan_runs_at_once();
  plan_pending_ = true;
  if (at_once) {
    asio::post(ex_, [this] { plan_now(); });
    return;
  }
  plan_timer_.expires_at(last_plan_end_ + last_plan_cost_);
  plan_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) plan_now();
  });
}

namespace {
// Wait reasons carry counts ("2 busy"); an event is worth writing only when the words change.
std::string reason_key(const std::string& s) {
  std::string k;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) k += c;
  return k;
}
}  // namespace

std::string ControlPlane::class_key(const QueuedJob& j) const {
  std::string k = j.gpu;
  k += '\x1f';
  for (const auto& r : j.regions) k += r + '\x1e';
  k += '\x1f';
  k += j.host_exclusive ? 'x' : '-';
  k += built_.count(j.id) ? 'b' : '-';
  k += '\x1f' + j.language;
  if (!j.parent.empty()) k += '\x1f' + j.campaign + '\x1f' + j.parent;
  return k;
}

std::map<JobState, std::int64_t> ControlPlane::queue_depth_by_state() const {
  std::map<JobState, std::int64_t> out;
  for (const auto& [id, q] : queue_) ++out[q.state];
  return out;
}

void ControlPlane::remember_pending(const store::JobRecord& j) {
  if (j.state != JobState::queued && j.state != JobState::waiting_capacity) {
    forget_pending(j.id);
    return;
  }
  QueuedJob q{j.id,  j.priority, j.name,  j.campaign,       j.parent,
              j.gpu, j.regions,  j.state, j.state_reason, j.host_exclusive, {},
              j.language};  // a column of the row: pending_jobs() reads it without the spec
  q.cls = class_key(q);
  if (auto it = queue_.find(j.id); it != queue_.end()) {
    if (it->second.cls == q.cls && it->second.priority == q.priority) {
      it->second = std::move(q);  // a new state or reason: its place in the queue stays
      return;
    }
    forget_pending(j.id);
  }
  const QueueKey key{-q.priority, q.id};
  auto& c = classes_[q.cls];
  c.order.insert(key);
  if (!c.sync_from || key < *c.sync_from) c.sync_from = key;  // it has not heard the tail's reason
  queue_.emplace(j.id, std::move(q));
}

void ControlPlane::forget_pending(std::int64_t job_id) {
  auto it = queue_.find(job_id);
  if (it == queue_.end()) return;
  if (auto c = classes_.find(it->second.cls); c != classes_.end()) {
    c->second.order.erase(QueueKey{-it->second.priority, job_id});
    if (c->second.order.empty()) classes_.erase(c);
  }
  queue_.erase(it);
}

sched::Snapshot ControlPlane::snapshot(bool preview) {
  sched::Snapshot s;
  s.now = clock_->now_ms();
  // The live fleet, as memory holds it (a waiting agent is idle): no read of the store and no
  // copy. With compile agents in the fleet, every job builds on one first.
  s.fleet = &fleet_.slots();
  const bool compilers = fleet_.compile_agents() > 0;
  // How deep into a class a pass must look: past every job that could be given an agent (an
  // idle one; a host-exclusive job may wait for any host), ask for capacity or ride on
  // capacity asked for, plus one that can only wait.
  const int gpus_per_instance = std::max(prov_.gpus_per_instance(""), 1);
  const std::size_t capacity =
      static_cast<std::size_t>(gpus_per_instance) * (in_flight_.size() + pending_instances_.size() +
                           static_cast<std::size_t>(std::max(prov_.capacity_budget(), 0)));
  auto backing_off = [&](std::int64_t id) {
    auto it = retry_after_.find(id);
    if (it == retry_after_.end()) return false;
    if (it->second > s.now) return true;  // backing off after a transient cloud error
    retry_after_.erase(it);
    return false;
  };
  std::vector<std::pair<std::int64_t, sched::Wait>> parent_waits;
  auto plan_job = [&](QueuedJob& j) {
    s.queue.push_back({j.id, j.priority, j.gpu, j.regions, false, j.host_exclusive, j.language});
  };
  for (auto& [key, c] : classes_) {
    if (!preview) c.planned_last.reset();
    const bool exclusive = queue_.at(c.order.begin()->second).host_exclusive;
    const std::size_t per_class =
        (exclusive ? fleet_.slots().size() : fleet_.waiting()) + capacity + 1;
    std::size_t n = 0;
    std::optional<std::optional<sched::Wait>> parent_wait;  // looked up once per class and pass
    for (const auto& k : c.order) {
      if (n >= per_class) break;
      QueuedJob& j = queue_.at(k.second);
      // Jobs backing off or with capacity coming are planned on their own (below).
      if (in_flight_.count(j.id) || backing_off(j.id)) continue;
      ++n;
      if (!preview) c.planned_last = k;
      if (!j.parent.empty() && !preview) {
        // A child is judged against its parent: it waits until the parent has a result.
        if (!parent_wait) {
          store::JobFilter f;
          f.campaign = j.campaign;
          f.name = j.parent;
          f.limit = 1;
          auto parents = store_.list_jobs(f);
          parent_wait.emplace();
          if (!parents.empty() && !is_terminal(parents.front().state))
            *parent_wait = sched::Wait{0, false,
                                       "waiting for parent " + j.parent + " (job " +
                                           std::to_string(parents.front().id) + ") to finish",
                                       0};
        }
        if (*parent_wait) {
          sched::Wait w = **parent_wait;
          w.job_id = j.id;
          parent_waits.emplace_back(j.id, w);
          c.rep = w;
          continue;
        }
      }
      plan_job(j);
    }
  }
  for (const auto& [id, f] : in_flight_)
    if (auto it = queue_.find(id); it != queue_.end() && !backing_off(id)) plan_job(it->second);
  std::vector<store::Store::JobStateChange> changes;
  for (auto& [id, w] : parent_waits)
    if (auto it = queue_.find(id); it != queue_.end())
      if (auto c = wait_change(it->second, w)) changes.push_back(std::move(*c));
  apply_waits(changes);
  s.running = fleet_.slot_uses();
  if (compilers)
    for (auto& j : s.queue) j.compile = built_.count(j.id) == 0;
  s.blocks = region_blocks();
  for (const auto& [job, f] : in_flight_) s.in_flight.push_back(f);
  for (const auto& [id, p] : pending_instances_)
    s.in_flight.push_back({p.job_id, p.region, p.gpu, gpus_per_instance});
  if (prov_.can_grow()) {
    sched::ProvisionerView v;
    v.name = prov_.name();
    v.can_grow = provisioning_stopped_.empty();
    v.capacity_budget = prov_.capacity_budget() + static_cast<int>(s.in_flight.size());
    v.regions = prov_.regions();
    v.gpu_classes = prov_.gpu_classes();
    v.gpus_per_instance = gpus_per_instance;
    s.provisioner = v;
  }
  return s;
}

std::optional<sched::Assign> ControlPlane::plan_for_new_job(const store::NewJob& j) {
  // A child waits for its parent's result, which only a pass looks up. While passes are paced
  // this plan still runs: it is the submit's own work, without the store reads and the wait
  // reasons a pass writes.
  if (stopped_ || !j.parent.empty() || fleet_.waiting() == 0) return std::nullopt;
  // Behind as many jobs of its class (of its priority or higher) as there are agents waiting,
  // it gets none now: the pass after the submit plans it, and the preview is not made.
  QueuedJob q;
  q.gpu = j.gpu;
  q.regions = j.regions;
  q.host_exclusive = j.host_exclusive;
  q.language = store::job_language(j);
  q.campaign = j.campaign;
  if (auto c = classes_.find(class_key(q)); c != classes_.end()) {
    std::size_t ahead = 0;
    for (const auto& k : c->second.order) {
      if (k.first > -j.priority || ++ahead >= fleet_.waiting()) break;
    }
    if (ahead >= fleet_.waiting()) return std::nullopt;
  }
  sched::Snapshot s = snapshot(true);
  // Its id is not known yet; it will be the newest, after every queued job of its priority.
  constexpr std::int64_t kNewJob = INT64_MAX;
  // With compile agents in the fleet it builds on one first, as snapshot() plans queued jobs.
  const bool compile = fleet_.compile_agents() > 0;
  s.queue.push_back({kNewJob, j.priority, j.gpu, j.regions, compile, j.host_exclusive,
                     store::job_language(j)});
  for (auto& a : sched::plan(s).assign)
    if (a.job_id == kNewJob) return std::move(a);
  return std::nullopt;
}

nlohmann::json ControlPlane::assign_decision(const sched::Assign& a,
                                             const store::AgentRecord& agent) {
  return {{"action", "assign"}, {"agent_id", a.agent_id}, {"agent", agent.name},
          {"region", a.region}, {"reason", a.reason}};
}

void ControlPlane::plan_now() {
  plan_pending_ = false;
  if (stopped_) return;
  ++passes_;
  const auto t0 = std::chrono::steady_clock::now();
  struct Pace {  // records the pass's cost however it returns
    ControlPlane& cp;
    std::chrono::steady_clock::time_point t0;
    ~Pace() {
      cp.last_plan_end_ = std::chrono::steady_clock::now();
      cp.last_plan_cost_ = cp.last_plan_end_ - t0;
    }
  } pace{*this, t0};
  sched::Snapshot snap = snapshot();
  if (!snap.queue.empty()) {
    // The deepest planned job of each class: what it is told, its class's tail is told too.
    std::map<std::int64_t, JobClass*> deepest;
    for (auto& [key, c] : classes_)
      if (c.planned_last) deepest[c.planned_last->second] = &c;
    sched::Plan plan = sched::plan(snap);
    std::vector<store::Store::JobStateChange> changes;  // written in one transaction
    grant(plan.assign);
    for (const auto& r : plan.provision) ask_capacity(r);
    for (auto& w : plan.wait) {
      // With provisioning stopped the plan only knows that the fleet cannot grow; the job must
      // also say why (an auth failure, a broken config), or the user cannot fix it.
      if (!w.capacity && !provisioning_stopped_.empty() && prov_.can_grow())
        w.reason += " (provisioning stopped: " + provisioning_stopped_ + ")";
      if (auto d = deepest.find(w.job_id); d != deepest.end()) d->second->rep = w;
      if (auto it = queue_.find(w.job_id); it != queue_.end())
        if (auto c = wait_change(it->second, w)) changes.push_back(std::move(*c));
    }
    apply_waits(changes);
  }
  sync_tails();
}

void ControlPlane::sync_tails() {
  // Bounded per pass (the changes are one store transaction, but each is a job row and an
  // event), so that a reason changing for a long queue (the first agent for its GPU enrols)
  // does not stall the API; another pass follows while some are left.
  constexpr std::size_t kPerPass = 256;
  std::vector<std::pair<std::int64_t, sched::Wait>> todo;
  bool more = false;
  for (auto& [key, c] : classes_) {
    if (!c.rep || !c.planned_last) continue;
    const std::string want = std::string(c.rep->capacity ? "c" : "q") + '\x1f' +
                             reason_key(c.rep->reason) + '\x1f' + c.rep->waits_for + '\x1f' +
                             c.rep->host;
    if (want != c.rep_synced) {
      c.rep_synced = want;
      c.sync_from = *c.planned_last;
    }
    if (!c.sync_from) continue;
    auto it = *c.sync_from > *c.planned_last ? c.order.lower_bound(*c.sync_from)
                                             : c.order.upper_bound(*c.planned_last);
    for (; it != c.order.end() && todo.size() < kPerPass; ++it) {
      if (in_flight_.count(it->second) || retry_after_.count(it->second)) continue;
      sched::Wait w = *c.rep;
      w.job_id = it->second;
      todo.emplace_back(it->second, std::move(w));
    }
    if (it == c.order.end()) {
      c.sync_from.reset();
    } else {
      c.sync_from = *it;
      more = true;
    }
  }
  std::vector<store::Store::JobStateChange> changes;
  for (auto& [id, w] : todo)
    if (auto it = queue_.find(id); it != queue_.end())
      if (auto c = wait_change(it->second, w)) changes.push_back(std::move(*c));
  apply_waits(changes);
  if (more) request_plan();
}

void ControlPlane::apply_wait(QueuedJob& j, const sched::Wait& w) {
  if (auto c = wait_change(j, w)) apply_waits({*c});
}

std::optional<store::Store::JobStateChange> ControlPlane::wait_change(QueuedJob& j,
                                                                      const sched::Wait& w) {
  std::string reason = w.reason;
  if (!provisioning_stopped_.empty() && w.capacity)
    reason += " (provisioning stopped: " + provisioning_stopped_ + ")";
  const JobState want = w.capacity ? JobState::waiting_capacity : JobState::queued;
  auto& last = wait_reason_[j.id];
  if (j.state == want && (last == reason || reason_key(last) == reason_key(reason))) return std::nullopt;
  last = reason;
  if (j.state == want && (j.state_reason == reason || reason_key(j.state_reason) == reason_key(reason)))
    return std::nullopt;
  if (!w.waits_for.empty()) {
    // A job waiting for a whole host (not a GPU) says which: the queue view and the CLI show it.
    store_.append_job_event(j.id, event_type::sched_decision,
                            {{"action", "wait"}, {"waits_for", w.waits_for}, {"host", w.host},
                             {"reason", reason}},
                            clock_->now_ms());
  }
  return store::Store::JobStateChange{j.id, want, reason};
}

void ControlPlane::apply_waits(const std::vector<store::Store::JobStateChange>& changes) {
  if (changes.empty()) return;
  for (auto& r : store_.set_job_states(changes, clock_->now_ms()))
    if (r) remember_pending(*r);
  events_changed();
}

void ControlPlane::grant(const std::vector<sched::Assign>& assign) {
  const TimeMs now = clock_->now_ms();
  std::vector<const sched::Assign*> asked;
  std::vector<store::AgentRecord> agents;
  std::vector<store::Store::LeaseGrant> grants;
  for (const auto& a : assign) {
    auto w = waiters_.find(a.agent_id);
    if (w == waiters_.end() || w->second->done) continue;
    auto agent = agent_identity(a.agent_id);  // its name, backend and GPUs; the store checks its state
    if (!agent) continue;
    asked.push_back(&a);
    // The decision is written with the lease, in its transaction.
    grants.push_back({a.job_id, a.agent_id, assign_decision(a, *agent)});
    agents.push_back(std::move(*agent));
  }
  if (grants.empty()) return;
  // The jobs come back as leased (read in the grants' transaction: no round trips of their
  // own on PostgreSQL).
  auto results = store_.grant_leases(grants, cfg_.lease_ttl_ms, now);
  for (std::size_t i = 0; i < results.size() && i < asked.size(); ++i) {
    if (!results[i]) {
      log::error("core", "lease of job ", asked[i]->job_id, " to agent ", asked[i]->agent_id,
                 " refused by the store: ", results[i].error().message);
      continue;
    }
    deliver_offer(*asked[i], agents[i], *results[i]);
  }
}

void ControlPlane::deliver_offer(const sched::Assign& a, const store::AgentRecord& agent_record,
                                 const store::Store::GrantedLease& granted) {
  // Its agent for good (see run_agent()), and what finish() would otherwise read its job for.
  run_agents_[granted.lease.run_id] = {a.agent_id, self_reported_job(granted.job)};
  // The lease in memory (its renewals are heartbeats), its agent busy.
  fleet_.put_run(granted.lease.run_id, LiveFleet::Run{a.agent_id,
                                                       granted.job.id,
                                                       granted.lease.fencing_token,
                                                       granted.lease.expires_ms,
                                                       granted.lease.expires_ms,
                                                       agent_record.host,
                                                       agent_record.slot,
                                                       granted.job.host_exclusive});
  fleet_.leased(a.agent_id, granted.lease.run_id);
  forget_pending(a.job_id);
  in_flight_.erase(a.job_id);
  wait_reason_.erase(a.job_id);
  idle_since_.erase(a.agent_id);
  auto w = waiters_.find(a.agent_id);
  if (w == waiters_.end() || w->second->done) return;  // nothing suspends since grant() looked
  const store::Lease* lease = &granted.lease;
  const store::JobRecord& job = granted.job;
  const store::AgentRecord* agent = &agent_record;
  LeaseOffer offer;
  offer.lease = *lease;
  offer.attempt = job.attempts;  // counted by the grant
  offer.spec = job.spec;
  offer.bundle_hash = job.bundle_hash;
  if (agent->backend == "compile") {
    offer.phase = "compile";
    // The arch the job's GPU class runs, from any agent that has one; the compile agent
    // falls back to its own table when no such agent has enrolled yet.
    for (const auto& other : fleet_.slots())
      for (const auto& g : other.gpus)
        if (!other.compiler && offer.arch.empty() && gpu_matches(job.gpu, g)) offer.arch = g.arch;
    if (offer.arch.empty() && job.gpu.rfind("sm_", 0) == 0) offer.arch = job.gpu;
    if (offer.arch.empty() && job.gpu.rfind("gfx", 0) == 0) offer.arch = job.gpu;
  } else {
    offer.phase = built_.count(a.job_id) ? "gpu" : "";
    offer.compare = resolve_compare(job, *agent);
  }
  auto waiter = w->second;
  waiters_.erase(w);
  waiter->offer = std::move(offer);
  end_wait(a.agent_id, *waiter);  // wakes this agent's poll, and no other
  events_changed();
}

nlohmann::json ControlPlane::resolve_compare(const store::JobRecord& j,
                                             const store::AgentRecord& agent) {
  // Most jobs do not compare; only those pay for re-reading their spec.
  const auto gates = j.spec.find("gates");
  if (gates == j.spec.end() || !gates->is_object() || !gates->contains("performance"))
    return nlohmann::json::object();
  auto spec = job_spec_from_json(j.spec);
  if (!spec || !spec->gates.performance) return nlohmann::json::object();
  const CompareTo& c = spec->gates.performance->compare_to;
  auto from_job = [&](const std::optional<store::JobRecord>& ref,
                      const std::string& kind) -> nlohmann::json {
    if (!ref || !ref->verdict || !ref->verdict->median_us)
      return {{"kind", ""}, {"note", kind + " has no timing result to compare with"}};
    if (self_reported_job(*ref) && !self_reported_job(j))
      return {{"kind", ""},
              {"note", kind + " " + ref->name + " is a custom job: its self-reported number is "
                                                "not a reference for a harness-measured job"}};
    if (ref->simulated && !agent.simulated())
      return {{"kind", ""},
              {"note", kind + " " + ref->name + " has a simulated result: not a baseline for "
                                                "real hardware"}};
    nlohmann::json out = {{"kind", kind},
                          {"label", kind + " " + ref->name + " (job " + std::to_string(ref->id) + ")"},
                          {"job_id", ref->id},
                          {"median_us", *ref->verdict->median_us},
                          {"simulated", ref->simulated}};
    const auto& m = ref->verdict->metrics;
    if (m.contains("samples_us") && m["samples_us"].is_array()) out["samples_us"] = m["samples_us"];
    out["timing_mode"] = verdict_timing_mode(*ref->verdict);
    return out;
  };
  auto reference = [&]() -> nlohmann::json {
  switch (c.kind) {
    case CompareTo::Kind::value:
      return {{"kind", "value"}, {"label", c.label.empty() ? "fixed value" : c.label},
              {"median_us", c.value_us}, {"simulated", false}};
    case CompareTo::Kind::parent: {
      store::JobFilter f;
      f.campaign = j.campaign;
      f.name = j.parent;
      f.states = {JobState::passed};
      f.limit = 1;
      auto v = store_.list_jobs(f);
      return from_job(v.empty() ? std::nullopt : std::optional(v.front()), "parent");
    }
    case CompareTo::Kind::job:
      return from_job(store_.get_job(c.job_id), "job");
    case CompareTo::Kind::baseline:
      return resolve_baseline(store_, j, agent);  // fleet.hpp: never simulated for real agents
    default:
      return {{"kind", ""}, {"note", "no stored baseline for this comparison yet"}};
  }
  };
  // A replayed job is never compared with a reference timed in-process, nor the reverse.
  nlohmann::json out = refuse_other_timing_mode(reference(), spec_timing_mode(j.spec));
  // Interleaving needs the reference's build, not only its numbers: the agent runs both.
  if (spec->benchmark.interleave && out.value("kind", "") != "" && out.contains("job_id")) {
    auto ref = store_.get_job(out["job_id"].get<std::int64_t>());
    if (ref && !ref->bundle_hash.empty()) {
      out["interleave"] = true;
      out["bundle_hash"] = ref->bundle_hash;
      out["spec"] = ref->spec;
    } else {
      out["note"] = "interleave: the reference's sources are not stored; compared with its samples";
    }
  }
  return out;
}

}  // namespace kfleet::core
