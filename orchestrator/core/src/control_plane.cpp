// Requests from users and agents: submission, cancellation, enrolment, heartbeats, event
// ingestion and run completion. Scheduling lives in scheduling.cpp, capacity in capacity.cpp.
#include "kfleet/core/control_plane.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "kfleet/common/bundle.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/common/sha256.hpp"
#include "kfleet/core/fleet.hpp"

namespace kfleet::core {

namespace asio = boost::asio;

ControlPlane::ControlPlane(asio::any_io_executor ex, store::Store& st, ClockPtr clock,
                           provision::Provisioner& prov, Config cfg)
    : ex_(std::move(ex)), store_(st), clock_(std::move(clock)), prov_(prov), cfg_(std::move(cfg)),
      rng_(cfg_.rng_seed ? cfg_.rng_seed : std::random_device{}()) {}

ControlPlane::~ControlPlane() { stop(); }

void ControlPlane::start() {
  const TimeMs now = clock_->now_ms();
  // The live fleet into memory. Last-heard times died with the previous kfleetd: an agent's
  // silence counts from now at the latest (liveness_from_ms_), so a live agent has a TTL to
  // speak again before it is marked lost.
  fleet_.clear();
  {
    std::lock_guard lk(shared_mu_);
    blocks_.reset();
  }
  if (!cfg_.read_only) region_blocks();  // loaded now: the API's read thread reads them
  liveness_from_ms_ = now;
  for (const auto& a : store_.list_agents()) {
    idle_since_[a.id] = now;
    if (!a.token_hash.empty() && a.state != store::AgentState::retired)
      agent_by_hash_[a.token_hash] = a.id;
    fleet_.add(a, a.last_seen_ms);
  }
  // A restarted kfleetd gives every running lease a fresh TTL so that agents which kept
  // working while it was down can reconnect, renew and deliver their spooled events. The TTL
  // is the leader's, in memory; the store's is written at the run's next heartbeat (its
  // stored expiry being behind), one write per run as the agents come back, not all here.
  for (const auto& run : store_.running_runs()) {
    const auto* a = fleet_.find(run.agent_id);
    fleet_.put_run(run.id, LiveFleet::Run{run.agent_id, run.job_id, run.fencing_token,
                                          now + cfg_.lease_ttl_ms, run.lease_expires_ms,
                                          run.host, run.slot, run.host_exclusive});
    if (a && a->rec.current_run_id != run.id)
      log::warn("core", "run ", run.id, " is running but agent ", run.agent_id, " holds run ",
                a->rec.current_run_id);
  }
  bootstrap_tokens();
  for (const auto& j : store_.pending_jobs()) remember_pending(j);
  // A job whose compile run handed it on needs only GPU stages, whatever happened since.
  auto note_built = [&](std::int64_t job_id) {
    for (const auto& r : store_.runs_for_job(job_id))
      if (r.outcome == RunOutcome::passed && !r.verdict) built_.insert(job_id);
  };
  for (const auto& [id, j] : queue_) note_built(id);
  for (const auto& r : store_.running_runs()) note_built(r.job_id);
  // Being built changes a job's class: index the queue again now that built_ is known.
  classes_.clear();
  for (auto& [id, j] : queue_) {
    j.cls = class_key(j);
    auto& c = classes_[j.cls];
    c.order.insert(QueueKey{-j.priority, id});
    c.sync_from = *c.order.begin();
  }
  last_tick_ms_ = now;
  tick_timer_ = std::make_unique<asio::steady_timer>(ex_);
  tick();
  request_plan();
}

void ControlPlane::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (tick_timer_) tick_timer_->cancel();
  plan_timer_.cancel();
  for (auto& [id, w] : waiters_) w->timer.cancel();
  events_changed();
}

// --- auth: auth.cpp

// --- users

std::variant<SubmitResult, SubmitError> ControlPlane::submit(const SubmitRequest& r) {
  auto parsed = parse_job_spec(r.spec_yaml, r.source_name, cfg_.problems.get());
  if (parsed.ok() && !parsed.spec->kernel.problem.empty() && !cfg_.problems) {
    // Without a library nothing can say the problem's cases and checks exist.
    parsed.issues.push_back(SpecIssue{r.source_name, 0, 0, "kernel.problem",
                                      "this kfleetd has no problem library (kfleetd --problems-dir): "
                                      "it cannot run a job on problem " + problem_ref(parsed.spec->kernel)});
    parsed.spec.reset();
  }
  if (!parsed.ok()) {
    std::string first = parsed.issues.empty() ? "cannot parse" : parsed.issues.front().to_string();
    return SubmitError{make_error(Errc::invalid_argument, "invalid job: " + first), parsed.issues};
  }
  const JobSpec& spec = *parsed.spec;
  auto bundle = bundle_from_json(r.bundle);
  if (!bundle) return SubmitError{bundle.error(), {}};
  for (const auto& src : spec.kernel.sources) {
    auto norm = normalize_source_entry(src);
    const std::string want = source_bundle_path(norm ? *norm : src);
    bool found = std::any_of(bundle->files.begin(), bundle->files.end(),
                             [&](const BundleFile& f) { return f.path == want; });
    if (!found)
      return SubmitError{make_error(Errc::invalid_argument,
                                    r.source_name + ": kernel.sources names '" + src +
                                        "' but the bundle does not contain it (pack it with "
                                        "`kfleet submit`, which reads the sources beside the YAML "
                                        "and lib: sources from the kernel library)"),
                         {}};
  }
  const std::string bundle_hash = bundle->hash();
  const std::string content_hash = job_content_hash(spec, bundle_hash);
  nlohmann::json change;
  if (r.parent_job != 0) {
    auto child = child_change(r, spec, *bundle, content_hash);
    if (auto* err = std::get_if<SubmitError>(&child)) return std::move(*err);
    change = std::move(std::get<nlohmann::json>(child));
  }
  store::Submission sub;
  store::NewJob& nj = sub.job;
  nj.name = spec.name;
  nj.campaign = spec.campaign;
  nj.parent = spec.parent;
  nj.priority = spec.priority;
  nj.gpu = spec.target.gpu;
  nj.regions = spec.target.regions;
  nj.spec = to_json(spec);
  nj.spec_yaml = r.spec_yaml;
  nj.source_name = r.source_name;
  nj.bundle_hash = bundle_hash;
  nj.content_hash = content_hash;
  nj.max_attempts = spec.max_attempts;
  nj.submitted_by = r.submitted_by;
  nj.host_exclusive = host_exclusive(spec);
  nj.language = spec.kernel.language;
  nj.token_key = r.token_key;
  nj.parent_job_id = r.parent_job;
  nj.change = change;
  sub.bundle_body = bundle_to_json(*bundle).dump();
  // The no-repeat map: an identical job that ran (or is running) answers for this one.
  sub.reuse_identical = !r.force;
  if (cfg_.max_in_flight_per_token > 0 && !r.token_key.empty())
    sub.in_flight_limit = cfg_.max_in_flight_per_token;
  // The lease the pass after this submit would grant the job, granted in the submit's
  // transaction instead (the store checks its rules there; refused, the job waits for that
  // pass as any other).
  auto planned = plan_for_new_job(nj);
  std::optional<store::AgentRecord> planned_agent;
  if (planned) planned_agent = agent_identity(planned->agent_id);
  if (planned_agent)
    sub.grant = store::Submission::Grant{planned->agent_id,
                                         assign_decision(*planned, *planned_agent),
                                         cfg_.lease_ttl_ms};
  // The checks, the bundle, the job and its lease: one store transaction (one round trip on
  // PostgreSQL). Without a lease the submit asks for a pass, which reads the fleet from memory.
  auto done = store_.submit_job(sub, clock_->now_ms());
  if (!done) return SubmitError{done.error(), {}};
  if (done->duplicate) return SubmitResult{done->job, done->job.id, {}};
  if (done->over_limit) {
    const int n = done->in_flight;
    return SubmitError{
        make_error(Errc::conflict,
                   "this token has " + std::to_string(n) + " jobs queued or running (the limit "
                   "is " + std::to_string(cfg_.max_in_flight_per_token) + " per token): wait "
                   "for a verdict (kfleet_wait_verdict, kfleet status) or cancel a job before "
                   "submitting another"),
        {}, "in_flight_limit",
        {{"in_flight", n}, {"limit", cfg_.max_in_flight_per_token}}};
  }
  remember_pending(done->job);
  events_changed();
  if (done->lease) {
    // Leased as a pass would have leased it: no pass is left to run for it.
    planned->job_id = done->job.id;
    deliver_offer(*planned, *planned_agent, {*done->lease, done->job});
  } else {
    request_plan();
  }
  return SubmitResult{done->job, 0, r.parent_job != 0 ? change : nlohmann::json()};
}

Result<store::JobRecord> ControlPlane::cancel(std::int64_t job_id, const std::string& by) {
  auto job = store_.get_job(job_id);
  if (!job) return make_error(Errc::not_found, "no job " + std::to_string(job_id));
  if (is_terminal(job->state))
    return make_error(Errc::conflict, "job " + std::to_string(job_id) + " already finished (" +
                                          to_string(job->state) + ")");
  if (job->current_run_id) {
    cancel_requested_.insert(job->current_run_id);
    run_agents_.erase(job->current_run_id);  // its agent is read from the store from now on
  }
  in_flight_.erase(job_id);
  auto r = store_.set_job_state(job_id, JobState::cancelled,
                                by.empty() ? "cancelled by user" : "cancelled by " + by,
                                clock_->now_ms(), by);
  if (r) {
    // The store ended its run and freed the run's agent (idle): so does memory.
    if (const auto* run = fleet_.run(job->current_run_id))
      fleet_.freed(run->agent_id, job->current_run_id, store::AgentState::idle, clock_->now_ms());
    remember_pending(*r);
    audit(by, "job.cancel", {{"job_id", job_id}, {"run_id", job->current_run_id}});
  }
  events_changed();
  request_plan();
  return r;
}

// --- agents

Result<EnrolResult> ControlPlane::enrol(const EnrolRequest& r) {
  if (r.gpus.empty())
    return make_error(Errc::invalid_argument, "enrol: the agent reported no GPU; an agent needs at "
                                              "least one (use --backend simulated without one)");
  EnrolResult out;
  out.token = random_secret("kfa_");
  store::NewAgent na;
  na.name = r.name;
  na.region = r.region;
  na.backend = r.backend;
  na.gpus = r.gpus;
  na.token_hash = sha256_hex(out.token);
  na.provider = r.provider.empty() ? "static" : r.provider;
  na.instance_id = r.instance_id;
  na.info = r.info;
  na.host = r.host;
  na.slot = r.slot;
  // The fleet's token is recorded as such; any other is a limited one, used up in the same
  // transaction as the agent is stored.
  if (!r.enrol_token.empty() && !is_fleet_enrol_token(r.enrol_token))
    na.enrol_token_hash = sha256_hex(r.enrol_token);
  auto a = store_.enrol_agent(na, clock_->now_ms());
  if (!a) {
    if (a.error().code == Errc::unauthorized || a.error().code == Errc::forbidden)
      log::warn("core", "enrolment of '", r.name, "' refused: ", a.error().message);
    return a.error();
  }
  if (a->enrol_token_id != 0)
    audit("agent:" + std::to_string(a->id), "agent.enrol",
          {{"agent_id", a->id}, {"name", a->name}, {"enrol_token_id", a->enrol_token_id},
           {"instance_id", a->instance_id}});
  out.agent_id = a->id;
  agent_hash_cache_[a->id] = a->token_hash;
  agent_by_hash_[a->token_hash] = a->id;
  fleet_.add(*a, a->last_seen_ms);  // its leases read nothing for it; the next plan sees it
  idle_since_[a->id] = clock_->now_ms();
  log::info("core", "agent ", a->id, " '", a->name, "' enrolled in ", a->region, " (", a->backend,
            ", ", r.gpus.front().gpu_class, ")");
  request_plan();
  return out;
}

Result<HeartbeatReply> ControlPlane::heartbeat(std::int64_t agent_id, std::int64_t run_id,
                                               std::int64_t fencing_token) {
  const TimeMs now = clock_->now_ms();
  LiveFleet::Agent* a = live_agent(agent_id);
  if (!a)
    return make_error(Errc::not_found, "agent " + std::to_string(agent_id) +
                                           " is not in the live fleet (retired or unknown); enrol again");
  if (auto h = heard_from(*a, now); !h) return h.error();
  HeartbeatReply rep;
  if (run_id == 0) return rep;
  rep.cancel = cancel_requested_.count(run_id) > 0;
  LiveFleet::Run* run = live_run(run_id);
  if (!run || run->agent_id != agent_id || run->fencing_token != fencing_token) {
    rep.lease_valid = false;
    return rep;
  }
  // Renewed in memory. The store's expiry is written only when it has fallen half a TTL
  // behind: what a reader of the store (a standby, a restarted kfleetd) sees is at most that
  // early, and a restarted or new leader gives every running lease a fresh TTL anyway.
  fleet_.renew(*run, now + cfg_.lease_ttl_ms);
  if (run->expires_ms - run->stored_expires_ms >= cfg_.lease_ttl_ms / 2) {
    ++beats_written_;
    auto lease = store_.renew_lease(run_id, fencing_token, cfg_.lease_ttl_ms, now);
    if (!lease) {  // the store holds it ended or given to another: so does memory from now on
      fleet_.erase_run(run_id);
      rep.lease_valid = false;
      return rep;
    }
    run->stored_expires_ms = lease->expires_ms;
  }
  rep.lease_expires_ms = run->expires_ms;
  return rep;
}

LiveFleet::Agent* ControlPlane::live_agent(std::int64_t agent_id) {
  if (auto* a = fleet_.find(agent_id)) return a;
  auto stored = store_.get_agent(agent_id);
  if (!stored || stored->state == store::AgentState::retired) return nullptr;
  fleet_.add(*stored, stored->last_seen_ms);
  return fleet_.find(agent_id);
}

LiveFleet::Run* ControlPlane::live_run(std::int64_t run_id) {
  if (auto* run = fleet_.find_run(run_id)) return run;
  auto r = store_.get_run(run_id);
  if (!r || r->outcome != RunOutcome::running) return nullptr;
  return &fleet_.put_run(run_id, LiveFleet::Run{r->agent_id, r->job_id, r->fencing_token,
                                                r->lease_expires_ms, r->lease_expires_ms,
                                                r->host, r->slot, r->host_exclusive});
}

Result<void> ControlPlane::heard_from(LiveFleet::Agent& a, TimeMs now) {
  ++beats_heard_;
  fleet_.heard(a, now);
  if (a.rec.state != store::AgentState::lost || a.rec.current_run_id != 0) return ok_result();
  // Back from lost: the store must know it is idle again (its row's state changes).
  ++beats_written_;
  auto r = store_.touch_agent(a.rec.id, now);
  if (!r) return r.error();
  a.rec.state = r->state;
  a.rec.current_run_id = r->current_run_id;
  a.rec.last_seen_ms = r->last_seen_ms;
  log::info("core", "agent ", a.rec.id, " (", a.rec.name, ") speaks again: ",
            store::to_string(a.rec.state));
  request_plan();
  return ok_result();
}

void ControlPlane::overlay_live(store::AgentRecord& a) const {
  if (const auto heard = fleet_.heard_shared(a.id)) a.last_seen_ms = std::max(a.last_seen_ms, *heard);
}

void ControlPlane::overlay_live(store::RunRecord& r) const {
  if (r.outcome != RunOutcome::running) return;
  if (const auto lease = fleet_.lease_shared(r.id); lease && lease->first == r.fencing_token)
    r.lease_expires_ms = lease->second;
}

std::map<store::AgentState, std::int64_t> ControlPlane::agents_by_state() const {
  std::map<store::AgentState, std::int64_t> out;
  for (const auto& [id, a] : fleet_.agents()) ++out[a.rec.state];
  return out;
}

Result<store::IngestResult> ControlPlane::ingest(std::int64_t agent_id, std::int64_t run_id,
                                                 std::int64_t fencing_token,
                                                 std::vector<Event>& evs) {
  // The store checks that the run is the agent's (not_found, forbidden) and stores the events
  // under the run's job, in the call's own transaction: no read of the run before it (a
  // round trip on PostgreSQL). Stage events say which agent ran the stage: with compile
  // agents a job's stages are split between two machines.
  std::string agent_name;
  if (auto a = agent_identity(agent_id)) agent_name = a->name;
  for (auto& e : evs) {
    e.run_id = run_id;
    if ((e.type == event_type::stage_started || e.type == event_type::stage_finished) &&
        e.data.is_object()) {
      e.data["agent_id"] = agent_id;
      e.data["agent"] = agent_name;
    }
  }
  auto r = store_.append_run_events(run_id, fencing_token, evs, clock_->now_ms(), agent_id);
  if (r && r->accepted > 0) events_changed();
  return r;
}

Verdict ControlPlane::agent_verdict(const std::optional<store::AgentRecord>& a, const Verdict& v) {
  Verdict verdict = v;
  // Whatever the agent says, a simulated agent's result is simulated: it can never pass for
  // (or become a baseline of) real hardware.
  if (a && a->simulated()) {
    verdict.simulated = true;
    for (auto& c : verdict.versus) c.simulated = true;  // its PyTorch references too
  }
  if (verdict.outcome != RunOutcome::passed && verdict.outcome != RunOutcome::rejected)
    verdict.outcome = RunOutcome::error;
  return verdict;
}

Result<store::RunRecord> ControlPlane::finish(std::int64_t agent_id, std::int64_t run_id,
                                              std::int64_t fencing_token, const Verdict& v) {
  // Its backend and GPUs answer both questions: its identity, not its state.
  const auto a = agent_identity(agent_id);
  if (a && a->backend == "compile" && v.outcome == RunOutcome::passed) {
    auto run = store_.get_run(run_id);
    if (!run) return make_error(Errc::not_found, "no run " + std::to_string(run_id));
    if (run->agent_id != agent_id)
      return make_error(Errc::forbidden, "run " + std::to_string(run_id) + " belongs to agent " +
                                             std::to_string(run->agent_id));
    return hand_off(*run, *a, fencing_token);
  }
  Verdict verdict = agent_verdict(a, v);
  // The store checks the run is the agent's and reads its job (and regression run) in the
  // finish's own transaction: on PostgreSQL none of them is a round trip of its own.
  // A custom job's numbers are its own scripts' word, whatever the agent says. For a run this
  // kfleetd leased, its job was read with the lease; otherwise (leased before a restart or a
  // takeover) the store shows the job to amend before it writes, one more round trip there.
  Result<store::FinishedRun> r = make_error(Errc::internal, "not finished");
  const auto leased = run_agents_.find(run_id);
  const bool leased_here = leased != run_agents_.end();
  if (leased_here) {
    if (leased->second.self_reported) verdict.self_reported = true;
    r = store_.finish_agent_run(agent_id, run_id, fencing_token, verdict, clock_->now_ms());
  } else {
    r = store_.finish_agent_run(agent_id, run_id, fencing_token, verdict, clock_->now_ms(),
                                [](const store::JobRecord& j, Verdict& amended) {
                                  if (self_reported_job(j)) amended.self_reported = true;
                                });
  }
  if (!r) return r.error();
  return after_finish(agent_id, *r);
}

store::RunRecord ControlPlane::after_finish(std::int64_t agent_id, store::FinishedRun& r) {
  const std::int64_t run_id = r.run.id;
  run_agents_.erase(run_id);
  // The finish left the agent's row idle, with no run, last seen now: so does memory.
  fleet_.freed(agent_id, run_id, store::AgentState::idle, clock_->now_ms());
  record_cost(r.run);
  // Baselines from kept wins, regression matrices (fleet.hpp).
  if (const auto a = agent_identity(agent_id)) on_run_finished(*this, r, *a);
  cancel_requested_.erase(run_id);
  idle_since_[agent_id] = clock_->now_ms();
  events_changed();
  request_plan();
  return std::move(r.run);
}

asio::awaitable<Result<store::RunRecord>> ControlPlane::finish_gathered(std::int64_t agent_id,
                                                                        std::int64_t run_id,
                                                                        std::int64_t fencing_token,
                                                                        Verdict v) {
  const auto a = agent_identity(agent_id);
  const auto leased = run_agents_.find(run_id);
  // A compile agent's hand-off, a run leased before this kfleetd (whose verdict may need the
  // job read first) and a standby's refusal take finish() as they are.
  if (cfg_.read_only || leased == run_agents_.end() || leased->second.agent_id != agent_id ||
      (a && a->backend == "compile" && v.outcome == RunOutcome::passed))
    co_return finish(agent_id, run_id, fencing_token, v);
  auto p = std::make_shared<PendingFinish>(ex_);
  p->call = {agent_id, run_id, fencing_token, agent_verdict(a, v)};
  if (leased->second.self_reported) p->call.verdict.self_reported = true;
  p->timer.expires_at(asio::steady_timer::time_point::max());
  finishes_.push_back(p);
  // Posted: the finishes whose requests were read in this turn of the loop join this batch.
  if (finishes_.size() == 1) asio::post(ex_, [this] { finish_gathered_now(); });
  boost::system::error_code ec;
  if (!p->done) co_await p->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return std::move(p->result);
}

void ControlPlane::finish_gathered_now() {
  auto batch = std::move(finishes_);
  finishes_.clear();
  if (batch.empty()) return;
  std::vector<store::Store::FinishCall> calls;
  calls.reserve(batch.size());
  for (const auto& p : batch) calls.push_back(p->call);
  auto results = store_.finish_agent_runs(calls, clock_->now_ms());
  ++finish_batches_;
  finishes_gathered_ += static_cast<std::int64_t>(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& p = *batch[i];
    if (results[i])
      p.result = after_finish(p.call.agent_id, *results[i]);
    else
      p.result = results[i].error();
    p.done = true;
    p.timer.cancel();
  }
}

// A compile agent built the job within its budget: a GPU agent of its class does the rest.
Result<store::RunRecord> ControlPlane::hand_off(const store::RunRecord& run,
                                                const store::AgentRecord& agent,
                                                std::int64_t fencing_token) {
  auto job = store_.get_job(run.job_id);
  const std::string gpu = job ? job->gpu : std::string("GPU");
  auto r = store_.hand_off_run(run.id, fencing_token,
                               "built and within its resource budget on compile agent " +
                                   std::to_string(agent.id) + " (" + agent.name +
                                   "); waiting for a " + gpu + " GPU agent",
                               clock_->now_ms());
  if (!r) return r.error();
  run_agents_.erase(run.id);
  fleet_.freed(agent.id, run.id, store::AgentState::idle, clock_->now_ms());
  built_.insert(r->id);
  remember_pending(*r);
  cancel_requested_.erase(run.id);
  idle_since_[agent.id] = clock_->now_ms();
  events_changed();
  request_plan();
  auto done = store_.get_run(run.id);
  if (!done) return make_error(Errc::internal, "run " + std::to_string(run.id) + " vanished");
  return *done;
}

std::optional<std::int64_t> ControlPlane::run_agent(std::int64_t run_id) {
  if (auto it = run_agents_.find(run_id); it != run_agents_.end()) return it->second.agent_id;
  auto run = store_.get_run(run_id);
  if (!run) return std::nullopt;
  return run->agent_id;
}

std::optional<store::AgentRecord> ControlPlane::agent_identity(std::int64_t agent_id) {
  if (const auto* live = fleet_.find(agent_id)) return live->rec;
  // A standby's view comes from the leader's writes: it keeps nothing.
  return store_.get_agent(agent_id);
}

// An instance the provisioner has a price for costs the job the hours its agent held the run,
// at one GPU's share of the instance-hour (the run held one GPU slot of the instance).
void ControlPlane::record_cost(const store::RunRecord& run) {
  auto agent = agent_identity(run.agent_id);  // its instance and provider
  if (!agent || agent->instance_id.empty()) return;
  auto price = prov_.usd_per_hour(agent->instance_id);
  if (!price) return;
  const int gpus = std::max(prov_.gpus_per_instance(agent->instance_id), 1);
  const double hours = std::max<TimeMs>(run.finished_ms - run.started_ms, 0) / 3'600'000.0;
  const double per_gpu = *price / gpus;
  store_.append_job_event(run.job_id, "cost",
                          {{"run_id", run.id}, {"instance_id", agent->instance_id},
                           {"provider", agent->provider}, {"usd_per_hour", *price},
                           {"gpus_per_instance", gpus}, {"usd_per_gpu_hour", per_gpu},
                           {"instance_hours", hours}, {"gpu_hours", hours},
                           {"usd", hours * per_gpu}},
                          clock_->now_ms());
}

// --- events

asio::awaitable<void> ControlPlane::wait_for_events(TimeMs timeout_ms) {
  auto t = std::make_shared<asio::steady_timer>(ex_);
  // A standby's store changes under it (the leader writes): callers look again every poll.
  if (cfg_.read_only) timeout_ms = std::min(timeout_ms, std::max<TimeMs>(cfg_.standby_poll_ms, 10));
  t->expires_after(std::chrono::milliseconds(timeout_ms));
  if (stopped_) co_return;
  event_waiters_.push_back(t);
  boost::system::error_code ec;
  co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

void ControlPlane::events_changed() {
  auto waiters = std::move(event_waiters_);
  event_waiters_.clear();
  for (auto& t : waiters) t->cancel();
}

void ControlPlane::job_event(std::int64_t job_id, const std::string& type,
                             const nlohmann::json& data) {
  store_.append_job_event(job_id, type, data, clock_->now_ms());
  events_changed();
}

double ControlPlane::jitter_unit() {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

}  // namespace kfleet::core
