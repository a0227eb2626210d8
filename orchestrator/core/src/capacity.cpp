// Capacity and time: asking the provisioner for agents, turning its answers into region
// blocks (stockout, unsupported, quota) or a stop (auth, configuration), and the periodic tick
// that expires leases, notices block expiry and gives back instances nobody uses.
#include <algorithm>

#include <boost/asio/post.hpp>

#include "kfleet/common/event.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/core/control_plane.hpp"

namespace kfleet::core {

namespace asio = boost::asio;

void ControlPlane::ask_capacity(const sched::RequestCapacity& r) {
  in_flight_[r.job_id] = sched::InFlight{r.job_id, r.region, r.gpu, r.gpus};
  const TimeMs now = clock_->now_ms();
  store_.append_job_event(r.job_id, event_type::sched_decision,
                          {{"action", "provision"}, {"region", r.region}, {"gpu", r.gpu},
                           {"provider", prov_.provider_for(r.region)}, {"gpus", r.gpus},
                           {"reason", r.reason}},
                          now);
  if (auto q = queue_.find(r.job_id); q != queue_.end() && q->second.state != JobState::waiting_capacity) {
    auto j = store_.set_job_state(r.job_id, JobState::waiting_capacity,
                                  "asking " + prov_.provider_for(r.region) + " for a " + r.gpu + " agent in " + r.region,
                                  now);
    if (j) remember_pending(*j);
  }
  wait_reason_.erase(r.job_id);
  events_changed();
  prov_.request(provision::CapacityRequest{r.job_id, r.region, r.gpu, r.gpus},
                [this, r](provision::CapacityResult res) {
                  if (!stopped_) on_capacity(r, res);
                });
}

void ControlPlane::on_capacity(const sched::RequestCapacity& r,
                               const provision::CapacityResult& res) {
  in_flight_.erase(r.job_id);
  const TimeMs now = clock_->now_ms();
  nlohmann::json ev = {{"provider", prov_.provider_for(r.region)}, {"region", r.region}, {"gpu", r.gpu},
                       {"outcome", provision::to_string(res.outcome)},
                       {"message", res.message}, {"seconds", res.seconds},
                       {"instance_ids", res.instance_ids}};
  auto block = [&](const std::string& kind, const std::string& gpu_class) {
    // A regional quota blocks every zone of the region, not only the one asked.
    const std::string where = res.block_region.empty() ? r.region : res.block_region;
    std::optional<store::RegionBlock> prev;
    auto& blocks = region_blocks();
    auto same = [&](const store::RegionBlock& b) {
      return b.provider == prov_.name() && b.region == where && b.gpu_class == gpu_class;
    };
    for (const auto& b : blocks)
      if (same(b)) prev = b;
    auto b = sched::next_block(cfg_.block_policy, prev, prov_.name(), where, gpu_class, kind,
                               res.message, now, jitter_unit());
    store_.put_region_block(b);
    {
      std::lock_guard lk(shared_mu_);
      blocks.erase(std::remove_if(blocks.begin(), blocks.end(), same), blocks.end());
      blocks.push_back(b);
    }
    ev["blocked_region"] = where;
    ev["blocked_until_ms"] = b.until_ms;
    ev["blocked_until"] = format_iso8601(b.until_ms);
    ev["strikes"] = b.strikes;
  };
  switch (res.outcome) {
    case provision::Outcome::ok: {
      for (const auto& id : res.instance_ids)
        pending_instances_[id] = PendingInstance{r.job_id, r.region, r.gpu,
                                                 now + cfg_.enrol_deadline_ms};
      // Capacity came: a region's earlier stockout no longer stands.
      store_.clear_region_block(prov_.name(), r.region, r.gpu);
      auto& blocks = region_blocks();
      std::lock_guard lk(shared_mu_);
      blocks.erase(std::remove_if(blocks.begin(), blocks.end(),
                                  [&](const store::RegionBlock& b) {
                                    return b.provider == prov_.name() && b.region == r.region &&
                                           b.gpu_class == r.gpu;
                                  }),
                   blocks.end());
      break;
    }
    case provision::Outcome::stockout:
      ++stockouts_[r.region];
      block("stockout", r.gpu);
      break;
    case provision::Outcome::unsupported:
      block("unsupported", r.gpu);
      break;
    case provision::Outcome::quota:
      block("quota", "");
      break;
    case provision::Outcome::fatal:
      {
        std::lock_guard lk(shared_mu_);
        provisioning_stopped_ = res.message;
      }
      block("fatal", "");
      log::error("core", "provisioning stopped: ", res.message);
      break;
    case provision::Outcome::transient: {
      auto& until = retry_after_[r.job_id];
      TimeMs backoff = until > 0 ? std::min<TimeMs>((until - now) * 2, 60'000) : 2'000;
      until = now + std::max<TimeMs>(backoff, 1'000);
      ev["retry_at"] = format_iso8601(until);
      break;
    }
  }
  store_.append_job_event(r.job_id, event_type::capacity, ev, now);
  events_changed();
  request_plan();
}

std::vector<store::RegionBlock> ControlPlane::region_blocks_now() {
  if (cfg_.read_only) return store_.region_blocks();
  {
    std::lock_guard lk(shared_mu_);
    if (blocks_) return *blocks_;
  }
  // Not loaded: a control plane not started, on its own thread (the read thread starts after).
  return region_blocks();
}

std::string ControlPlane::provisioning_stopped_reason() const {
  std::lock_guard lk(shared_mu_);
  return provisioning_stopped_;
}

std::vector<store::RegionBlock>& ControlPlane::region_blocks() {
  // Only the leader writes them (above): read once, then kept as it writes them.
  if (!blocks_) {
    auto stored = store_.region_blocks();
    std::lock_guard lk(shared_mu_);
    blocks_ = std::move(stored);
  }
  return *blocks_;
}

void ControlPlane::tick() {
  if (stopped_) return;
  const TimeMs now = clock_->now_ms();
  expire_leases(now);
  // Pending instances that never enrolled are given back and their jobs ask again.
  for (auto it = pending_instances_.begin(); it != pending_instances_.end();) {
    if (it->second.deadline_ms > now) { ++it; continue; }
    const std::string id = it->first;
    store_.append_job_event(it->second.job_id, event_type::capacity,
                            {{"provider", prov_.provider_for(it->second.region)}, {"region", it->second.region},
                             {"outcome", "never_enrolled"}, {"instance_ids", {id}},
                             {"message", "instance " + id + " did not enrol in time; released"}},
                            now);
    prov_.release(id, [id](Result<void> r) {
      if (!r) log::warn("core", "release of ", id, " failed: ", r.error().message);
    });
    it = pending_instances_.erase(it);
    events_changed();
    request_plan();
  }
  // A block that ended since the last tick, or a backoff that ran out, may unblock a job.
  for (const auto& b : region_blocks())
    if (b.until_ms > last_tick_ms_ && b.until_ms <= now) request_plan();
  for (const auto& [job, until] : retry_after_)
    if (until > last_tick_ms_ && until <= now) request_plan();
  // Idle agents that stopped talking are marked lost (busy ones lose their lease instead);
  // lost ones silent past the grace period are retired, so that a fleet that churns (every
  // scale-to-zero, every spot reclaim) does not carry its dead on every pass.
  // A database from before retirement may hold thousands of long-lost agents: retire a
  // bounded number a tick, so that no tick holds the control-plane thread for long.
  // Silence is read from memory (the live fleet's last-heard times, which heartbeats keep
  // without writing); only the change, idle to lost, is written.
  // The sweep takes a slice of the fleet a tick: all of a fleet up to kSweepAtOnce agents, else a
  // kSweepSlices-th of it (each agent once a second at the default 200 ms tick), so that no tick
  // holds the API thread for a walk over 10,000 agents: 1.6-1.9 ms a tick on 2 cores, which a
  // user's request arriving then waited for (2026-12-04).
  constexpr std::size_t kSweepAtOnce = 2000, kSweepSlices = 5;
  int retire_budget = 100;
  std::vector<std::int64_t> silent, gone, idle;
  sweep_from_ = fleet_.sweep(sweep_from_, kSweepAtOnce, kSweepSlices,
                             [&](std::int64_t id, const LiveFleet::Agent& live) {
    const store::AgentRecord& a = live.rec;
    const TimeMs heard = std::max(live.heard_ms, liveness_from_ms_);
    if (a.state == store::AgentState::idle && a.current_run_id == 0 &&
        now - heard > cfg_.lease_ttl_ms && !waiters_.count(a.id)) {
      silent.push_back(id);
    } else if (a.state == store::AgentState::lost && a.current_run_id == 0 &&
               cfg_.lost_agent_retire_ms > 0 && now - live.heard_ms > cfg_.lost_agent_retire_ms &&
               retire_budget-- > 0) {
      gone.push_back(id);
    }
    if (cfg_.idle_agent_ttl_ms > 0 && a.current_run_id == 0 && !a.instance_id.empty() &&
        a.provider != "static")
      idle.push_back(id);
  });
  for (const std::int64_t id : silent) {
    if (auto r = store_.set_agent_state(id, store::AgentState::lost, now); !r) {
      log::warn("core", "cannot mark silent agent ", id, " lost: ", r.error().message);
    } else if (auto* live = fleet_.find(id)) {
      live->rec.state = store::AgentState::lost;
      live->rec.last_seen_ms = std::max(live->rec.last_seen_ms, now);  // as the store writes it
      fleet_.heard(*live, now);
    }
  }
  for (const std::int64_t id : gone) {
    const auto* live = fleet_.find(id);
    const std::string name = live ? live->rec.name : "";
    const TimeMs silent_ms = live ? now - live->heard_ms : 0;
    if (auto r = retire_agent(id, "kfleetd"); !r)
      log::warn("core", "cannot retire lost agent ", id, ": ", r.error().message);
    else
      log::info("core", "agent ", id, " (", name, ") lost for ", silent_ms / 1000, " s: retired");
  }
  release_idle_agents(now, idle);
  last_tick_ms_ = now;
  tick_timer_->expires_after(std::chrono::milliseconds(cfg_.tick_ms));
  tick_timer_->async_wait([this](boost::system::error_code ec) {
    if (!ec) tick();
  });
}

void ControlPlane::expire_leases(TimeMs now) {
  // The leases' expiries are the leader's (memory): an expiry is written when it happens.
  std::vector<std::pair<std::int64_t, LiveFleet::Run>> expired;
  for (const auto& [id, run] : fleet_.runs())
    if (run.expires_ms <= now) expired.emplace_back(id, run);
  for (const auto& [run_id, run] : expired) {
    auto j = store_.expire_run(run_id,
                               "agent " + std::to_string(run.agent_id) + " silent for more than " +
                                   std::to_string(cfg_.lease_ttl_ms / 1000) + " s (lease expired)",
                               now);
    // Refused, the store holds the run ended already (memory missed it): memory follows.
    fleet_.freed(run.agent_id, run_id, store::AgentState::lost, now);
    if (!j) {
      log::warn("core", "cannot expire run ", run_id, ": ", j.error().message);
      continue;
    }
    run_agents_.erase(run_id);
    remember_pending(*j);  // requeued (or, out of attempts, gone from the queue)
    log::warn("core", "run ", run_id, " of job ", run.job_id, " lost its agent ", run.agent_id,
              "; job is now ", to_string(j->state));
    events_changed();
    request_plan();
  }
}

void ControlPlane::release_idle_agents(TimeMs now, const std::vector<std::int64_t>& candidates) {
  // Provisioned agents of the tick's slice, without a run: each may have been idle too long.
  std::vector<store::AgentRecord> idle;
  for (const std::int64_t id : candidates)
    if (idle_since_.count(id))
      if (const auto* live = fleet_.find(id)) idle.push_back(live->rec);
  for (const auto& a : idle) {
    auto it = idle_since_.find(a.id);
    if (it == idle_since_.end() || now - it->second < cfg_.idle_agent_ttl_ms) continue;
    log::info("core", "agent ", a.id, " idle for ", (now - it->second) / 1000,
              " s: releasing instance ", a.instance_id);
    // Retire the agent before its instance goes, so that nothing is leased to it meanwhile; if
    // that write fails, keep the instance and try again when the sweep comes round to it.
    if (auto r = store_.set_agent_state(a.id, store::AgentState::retired, now); !r) {
      log::warn("core", "cannot retire idle agent ", a.id, " (its instance stays): ",
                r.error().message);
      continue;
    }
    if (auto w = waiters_.find(a.id); w != waiters_.end()) end_wait(a.id, *w->second);
    idle_since_.erase(it);
    fleet_.remove(a.id);
    const std::string id = a.instance_id;
    prov_.release(id, [id](Result<void> r) {
      if (!r) log::warn("core", "release of ", id, " failed: ", r.error().message);
    });
  }
}

}  // namespace kfleet::core
