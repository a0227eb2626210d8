#include "kfleet/agent/agent.hpp"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "kfleet/agent/heartbeat.hpp"
#include "kfleet/agent/pipeline.hpp"
#include "kfleet/agent/run_events.hpp"
#include "kfleet/common/log.hpp"

namespace kfleet::agent {

namespace fs = std::filesystem;

Agent::Agent(AgentConfig cfg, TransportPtr transport, BackendPtr backend, ClockPtr clock)
    : cfg_(std::move(cfg)), transport_(std::move(transport)), backend_(std::move(backend)),
      clock_(std::move(clock)) {}

void Agent::request_shutdown() {
  shutdown_ = true;
  quit_.trigger();
  stop_current("agent shutting down");
}

void Agent::stop_current(const std::string& why) {
  std::lock_guard<std::mutex> l(run_mu_);
  if (current_stop_ && !current_stop_->requested()) {
    stop_reason_ = why;
    current_stop_->stop = true;
  }
}

Result<Enrolment> Agent::enrol_with_retry() {
  nlohmann::json gpus = nlohmann::json::array({to_json(gpu_)});
  nlohmann::json body = {{"name", cfg_.name},
                         {"host", cfg_.host_id},
                         {"slot", cfg_.gpu},
                         {"region", cfg_.region},
                         {"backend", backend_->name()},
                         {"gpus", gpus},
                         {"provider", cfg_.provider},
                         {"instance_id", cfg_.instance_id},
                         {"info", {{"pid", static_cast<long>(::getpid())},
                                   {"work_dir", cfg_.work_dir},
                                   {"simulated", backend_->simulated()},
                                   // false: jobs run without the job sandbox (--unsandboxed)
                                   {"sandboxed", backend_->sandboxed()}}}};
  Backoff backoff(std::chrono::milliseconds(500), std::chrono::milliseconds(15000));
  while (!shutdown_) {
    auto r = transport_->enrol(body);
    if (r) return r;
    if (r.error().code != Errc::unavailable) return r.error();
    auto wait = backoff.next();
    log::warn("agent", "cannot reach kfleetd to enrol (attempt ", backoff.attempts(),
              "): ", r.error().message, "; retrying in ", wait.count(), " ms");
    if (!quit_.sleep_for(wait)) break;
  }
  return make_error(Errc::unavailable, "shut down before enrolment");
}

Result<RunSpool> Agent::create_spool_with_retry(const Lease& lease, const StopFlag& stop) {
  const std::string dir = (fs::path(cfg_.work_dir) / "spool").string();
  Backoff backoff(cfg_.fleet_retry.initial, cfg_.fleet_retry.cap);
  const TimeMs budget = cfg_.fleet_retry.give_up_after.count() > 0
                            ? cfg_.fleet_retry.give_up_after.count()
                            : lease.ttl_ms;
  const TimeMs t0 = clock_->now_ms();
  while (true) {
    auto s = RunSpool::create(dir, lease.run_id, lease.job_id, lease.fencing_token);
    if (s || stop.requested() || clock_->now_ms() - t0 >= budget) return s;
    auto wait = backoff.next();
    log::warn("agent", "run ", lease.run_id, ": ", s.error().message, " (the agent's failure, ",
              "not the job's); trying again in ", wait.count(), " ms");
    if (!quit_.sleep_for(wait)) return s;
  }
}

void Agent::recover_spools() {
  for (const auto& path : RunSpool::list((fs::path(cfg_.work_dir) / "spool").string())) {
    auto s = RunSpool::open(path);
    if (!s) {
      log::warn("agent", "removing unreadable spool ", path, ": ", s.error().message);
      std::error_code ec;
      fs::remove(path, ec);
      continue;
    }
    std::int64_t run = s->run_id();
    std::int64_t pending = s->last_seq() - s->acked();
    RunEventLog events(*transport_, std::move(*s), clock_);
    if (pending > 0) {
      log::info("agent", "run ", run, ": uploading ", pending, " spooled events left by an earlier agent");
      while (!events.stale() && events.acked() < events.last_seq()) {
        auto r = events.upload_once();
        if (r) continue;
        if (r.error().code == Errc::unavailable) {
          log::warn("agent", "run ", run, ": kfleetd unreachable; keeping its spool for later");
          return;
        }
        log::info("agent", "run ", run, ": kfleetd no longer takes its events (", r.error().message,
                  "); dropping the spool");
        break;
      }
    }
    events.discard_spool();
  }
}

int Agent::run() {
  auto gpus = backend_->discover();
  if (!gpus || gpus->empty()) {
    log::error("agent", "backend ", backend_->name(), " found no usable GPU: ",
               gpus ? std::string("none") : gpus.error().message,
               " (pass --backend simulated for the no-GPU demo)");
    return 2;
  }
  if (cfg_.gpu >= gpus->size()) {
    log::error("agent", "--gpu ", cfg_.gpu, ": backend ", backend_->name(), " found ", gpus->size(),
               " GPU(s) on this host (indices 0..", gpus->size() - 1, ")");
    return 2;
  }
  gpu_ = (*gpus)[cfg_.gpu];
  gpu_.extra["index"] = cfg_.gpu;
  log::info("agent", "backend ", backend_->name(), ": GPU ", cfg_.gpu, " of ", gpus->size(), ": ",
            gpu_.name, " (", gpu_.gpu_class, ", ", gpu_.arch, ", ",
            gpu_.extra.value("uuid", std::string("no uuid")), ", pci ",
            gpu_.extra.value("pci_bus_id", std::string("?")), ")",
            cfg_.host_id.empty() ? "" : ", slot " + std::to_string(cfg_.gpu) + " of host " + cfg_.host_id,
            backend_->simulated() ? " [simulated]" : "");
  // The harness objects compile while we enrol and wait for work; a job that comes first waits
  // only for what is still compiling.
  std::thread prepare([this] {
    backend_->prepare([](const std::string& m) { log::info("agent", m); });
  });
  struct Joiner {
    std::thread& t;
    ~Joiner() { t.join(); }
  } join_prepare{prepare};

  auto en = enrol_with_retry();
  if (!en) {
    if (shutdown_) return 0;
    log::error("agent", "enrolment refused: ", en.error().message);
    return 1;
  }
  enrolment_ = *en;
  transport_->set_agent_token(enrolment_.token);
  int hb_ms = cfg_.heartbeat_ms > 0 ? cfg_.heartbeat_ms : enrolment_.heartbeat_ms;
  log::info("agent", "enrolled as agent ", enrolment_.agent_id, " (", cfg_.name, ", region ",
            cfg_.region, "); heartbeat every ", hb_ms, " ms, lease TTL ", enrolment_.lease_ttl_ms,
            " ms");
  recover_spools();

  auto hb = std::make_unique<Heartbeater>(*transport_, enrolment_.agent_id, hb_ms,
                                          enrolment_.lease_ttl_ms, clock_);
  hb->start();
  int done = 0;
  Backoff backoff(std::chrono::milliseconds(500), std::chrono::milliseconds(15000));
  while (!shutdown_ && (cfg_.max_jobs == 0 || done < cfg_.max_jobs)) {
    auto l = transport_->lease(enrolment_.agent_id, cfg_.lease_wait_ms);
    if (shutdown_) break;
    if (!l) {
      auto wait = backoff.next();
      log::warn("agent", "lease poll failed (attempt ", backoff.attempts(), "): ",
                l.error().message, "; retrying in ", wait.count(), " ms");
      if (l.error().code == Errc::unauthorized) {
        // kfleetd forgot us (a fresh database): enrol again rather than poll forever.
        auto again = enrol_with_retry();
        if (again) {
          enrolment_ = *again;
          transport_->set_agent_token(enrolment_.token);
          log::info("agent", "re-enrolled as agent ", enrolment_.agent_id);
          hb = std::make_unique<Heartbeater>(*transport_, enrolment_.agent_id, hb_ms,
                                             enrolment_.lease_ttl_ms, clock_);
          hb->start();
          continue;
        }
        // Retired by an admin, or its enrolment token is used up, expired or revoked: say so
        // (the reason is kfleetd's), and keep asking at the backoff's pace.
        log::warn("agent", "cannot enrol again: ", again.error().message);
      }
      quit_.sleep_for(wait);
      continue;
    }
    backoff.reset();
    if (!l->has_value()) continue;  // nothing for us this poll
    busy_ = true;
    run_one(**l, *hb);
    busy_ = false;
    ++done;
  }
  hb->stop();
  log::info("agent", "exiting after ", done, " job(s)");
  return 0;
}

void Agent::run_one(const Lease& lease, Heartbeater& hb) {
  log::info("agent", "run ", lease.run_id, ": job ", lease.job_id, " '", lease.spec.name,
            "' attempt ", lease.attempt, " (fencing token ", lease.fencing_token, ")");
  if (!lease.spec_error.empty()) {
    // kfleetd validated this spec; if we cannot read it, this agent and kfleetd disagree on
    // versions: the fleet's failure, not the job's. The lease is left to lapse (it is never
    // renewed), so kfleetd requeues the job for an agent that can read it.
    log::error("agent", "run ", lease.run_id, ": cannot read the job spec (agent and kfleetd ",
               "versions differ?): ", lease.spec_error, "; giving the run back to kfleetd");
    return;
  }
  StopFlag stop;
  {
    std::lock_guard<std::mutex> l(run_mu_);
    current_stop_ = &stop;
    stop_reason_.clear();
  }
  if (shutdown_) stop.stop = true;
  hb.set_run(lease.run_id, lease.fencing_token, [this](const std::string& why) { stop_current(why); });
  auto spool = create_spool_with_retry(lease, stop);
  if (!spool) {
    // A spool that cannot be written (a full disk) is the agent's failure: give the run back.
    log::error("agent", "run ", lease.run_id, ": ", spool.error().message,
               "; giving the run back to kfleetd");
    hb.clear_run();
    std::lock_guard<std::mutex> l(run_mu_);
    current_stop_ = nullptr;
    return;
  }
  RunEventLog events(*transport_, std::move(*spool), clock_,
                     [this] { stop_current("kfleetd refused the run's events (stale lease)"); });
  events.start_uploader();

  std::string run_dir = (fs::path(cfg_.work_dir) / "runs" / std::to_string(lease.run_id)).string();
  PipelineDeps deps{*transport_, *backend_, events, stop, run_dir, gpu_, clock_, cfg_.fleet_retry};
  std::string gave_back;
  std::optional<Verdict> verdict = run_pipeline(lease, deps, &gave_back);
  if (verdict && !events.spool_error().empty()) {
    // Some of the run's events could not be kept (a full disk): its record would have holes,
    // and that is the agent's failure, not the job's. Give it back rather than report it.
    gave_back = "cannot spool the run's events: " + events.spool_error();
    log::warn("agent", "run ", lease.run_id, ": ", gave_back, "; giving the run back to kfleetd");
    verdict.reset();
  }
  if (!gave_back.empty()) {
    // Its events (the why among them) go up while the lease still holds; then the heartbeats
    // stop renewing it and kfleetd requeues the job (lost -> requeued, within its attempts).
    (void)events.drain(std::chrono::milliseconds(2000));
    events.discard_spool();
  }

  bool reported = false;
  if (verdict) {
    log::info("agent", "run ", lease.run_id, ": ", to_string(verdict->outcome),
              verdict->gate.empty() ? "" : ": " + verdict->gate, ", ", verdict->reason);
    // Every event must be in before the verdict, so the store never shows a finished run with
    // missing events.
    // A shutdown still reports a reached verdict (briefly); a lost lease or cancel does not.
    auto give_up = [&] { return events.stale() || (stop.requested() && !shutdown_); };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    auto past_shutdown_grace = [&] { return shutdown_ && std::chrono::steady_clock::now() > deadline; };
    while (!events.drain(std::chrono::milliseconds(1000)) && !give_up() && !past_shutdown_grace()) {
      log::info("agent", "run ", lease.run_id, ": waiting for kfleetd to ack events (",
                events.acked(), "/", events.last_seq(), ")");
    }
    Backoff backoff(std::chrono::milliseconds(250), std::chrono::milliseconds(5000));
    while (!give_up() && !past_shutdown_grace()) {
      auto f = transport_->finish(lease.run_id, lease.fencing_token, *verdict);
      if (f) {
        log::info("agent", "run ", lease.run_id, ": finished and reported");
        reported = true;
        events.discard_spool();
        break;
      }
      if (f.error().code != Errc::unavailable) {
        log::warn("agent", "run ", lease.run_id, ": kfleetd refused the verdict: ", f.error().message);
        events.discard_spool();
        break;
      }
      auto wait = backoff.next();
      log::warn("agent", "run ", lease.run_id, ": cannot report the verdict (", f.error().message,
                "); retrying in ", wait.count(), " ms");
      std::this_thread::sleep_for(wait);  // not quit_: a verdict is worth a few retries on shutdown
    }
  }
  if (!reported && stop.requested()) {
    std::string why;
    {
      std::lock_guard<std::mutex> l(run_mu_);
      why = stop_reason_;
    }
    log::info("agent", "run ", lease.run_id, ": stopped (", why.empty() ? "stop requested" : why, ")");
    if (shutdown_) {
      // Flush what we have; whatever kfleetd has not acked stays spooled for the next start.
      if (events.drain(std::chrono::milliseconds(3000))) {
        events.discard_spool();
      } else {
        log::warn("agent", "run ", lease.run_id, ": ", events.last_seq() - events.acked(),
                  " events left in the spool for the next start");
      }
    } else {
      (void)events.drain(std::chrono::milliseconds(2000));  // a cancelled run's last events
      events.discard_spool();
    }
  }
  hb.clear_run();
  events.stop_uploader();
  {
    std::lock_guard<std::mutex> l(run_mu_);
    current_stop_ = nullptr;
  }
  std::error_code ec;
  fs::remove_all(run_dir, ec);  // keeps the disk bounded on long-lived agents
}

}  // namespace kfleet::agent
