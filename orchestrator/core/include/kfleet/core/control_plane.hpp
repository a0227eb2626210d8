#pragma once
// The control plane: the one place that changes orchestrator state. It runs on a single
// io_context thread (no locks), turns API calls into store transactions, runs the pure
// scheduler on a snapshot whenever something changed, and carries its decisions out: grants
// leases to agents waiting in a long-poll, asks the provisioner for capacity, blocks regions
// on stockouts, expires leases, and wakes event streams.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "kfleet/common/bundle.hpp"
#include "kfleet/common/clock.hpp"
#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/problem.hpp"
#include "kfleet/common/result.hpp"
#include "kfleet/core/live_fleet.hpp"
#include "kfleet/provision/provisioner.hpp"
#include "kfleet/scheduler/scheduler.hpp"
#include "kfleet/store/store.hpp"

namespace kfleet::core {

struct Config {
  TimeMs lease_ttl_ms = 30'000;       // an agent silent this long loses its run
  TimeMs heartbeat_ms = 5'000;        // what agents are told to use
  TimeMs tick_ms = 200;               // lease-expiry and block-expiry checks
  TimeMs enrol_deadline_ms = 10 * 60'000;  // a provisioned instance must enrol within this
  TimeMs idle_agent_ttl_ms = 0;       // provisioned agents idle this long are released (0: never)
  // A lost agent silent this long is retired (0: never): its row stays for history, its token
  // dies, and the live fleet the control plane reads on every pass no longer carries it.
  TimeMs lost_agent_retire_ms = 24 * 3'600'000;
  // Tokens kept in memory only (tests, embedded use): scope submit, user "static".
  std::vector<std::string> user_tokens;
  // The first admin's token (from a file or KFLEET_ADMIN_TOKEN, never argv): stored as its
  // hash at start() if no token with that hash exists yet; user `admin_user`, scope admin.
  std::string admin_token;
  std::string admin_user = "admin";
  std::string enrol_token;
  sched::BlockPolicy block_policy;
  std::uint64_t rng_seed = 0;         // 0: from std::random_device
  // A standby kfleetd's control plane (several kfleetd on one PostgreSQL): it serves reads
  // only and is never start()ed. Tokens are checked against the store on every call (a token
  // the leader revoked, or an agent it retired, is refused at once), agent tokens are looked
  // up in the store, and event waits poll the store every standby_poll_ms (the leader's
  // writes wake nothing here).
  bool read_only = false;
  TimeMs standby_poll_ms = 250;
  // Jobs one token may have queued or running at once (0: no limit). A search agent that
  // submits faster than the fleet answers is told to wait for a verdict instead.
  int max_in_flight_per_token = 0;
  // The problem library jobs may name (kernel.problem; docs/problems.md): a job naming a problem
  // or version not in it is refused at submit, naming what exists. nullptr: no library, and
  // every job naming a problem is refused.
  std::shared_ptr<const ProblemLibrary> problems;
};

// What a user token may do: each scope includes the ones below it.
enum class Scope { read = 1, submit = 2, admin = 3 };
const char* to_string(Scope s);
std::optional<Scope> scope_from_string(const std::string& s);

// The identity behind a user token.
struct Principal {
  std::string user;
  Scope scope = Scope::read;
  std::int64_t token_id = 0;   // 0 for in-memory tokens
};

// A new token: the secret is returned once, never stored.
struct NewToken {
  store::ApiToken record;
  std::string secret;
};

// What an admin (or a provisioner, for one instance) asks of a limited enrolment token.
struct EnrolTokenRequest {
  std::string name;                  // what it is for, shown in lists and on the agents it lets in
  int uses = 1;                      // enrolments it allows (0: any number)
  TimeMs expires_in_ms = 24 * 3'600'000;  // from now (0: never)
  std::string instance_id;           // "" = any instance
};
struct NewEnrolToken {
  store::EnrolToken record;
  std::string secret;                // shown once ("kfe_..."); only its hash is kept
};

// 256 random bits from the OS, as hex, behind a prefix ("kft_" users, "kfa_" agents).
std::string random_secret(const std::string& prefix);

struct SubmitRequest {
  std::string spec_yaml;
  std::string source_name = "job.yaml";
  nlohmann::json bundle;              // bundle_to_json form
  bool force = false;
  std::string submitted_by;
  std::string token_key;              // sha256 of the token: the in-flight limit's key
  // A child submitted as parent + change: its parent job. It must be the current best of its
  // campaign unless allow_non_best; its change is computed and recorded with it.
  std::int64_t parent_job = 0;
  bool allow_non_best = false;
};
struct SubmitResult {
  store::JobRecord job;
  std::int64_t duplicate_of = 0;      // the no-repeat map answered from an earlier job
  nlohmann::json change;              // a new child's change against its parent (else null)
};
// A rejected submission: the message plus every spec issue (file:line:column, field).
struct SubmitError {
  Error error;
  std::vector<SpecIssue> issues;
  std::string code = {};              // the API's error code when not errc_name(error.code)
  nlohmann::json details = nullptr;   // what the refusal refers to (the earlier job, the best)
};

struct EnrolRequest {
  std::string name, region, backend, provider, instance_id;
  std::vector<GpuInfo> gpus;
  nlohmann::json info = nlohmann::json::object();
  std::string host;                  // "" = a host of its own
  int slot = 0;                      // the GPU's index on the host
  // The bearer it showed: a limited enrolment token is used up by the enrolment; the fleet's
  // (or "": the caller checked it was the fleet's) is recorded as such.
  std::string enrol_token;
};
struct EnrolResult {
  std::int64_t agent_id = 0;
  std::string token;
};

struct LeaseOffer {
  store::Lease lease;
  int attempt = 0;
  nlohmann::json spec;
  std::string bundle_hash;
  nlohmann::json compare;             // resolved baseline, {} when the job does not compare
  // "" the whole pipeline; "compile": build and resources gate only, then hand the job on
  // (a compile agent); "gpu": correctness, benchmark and profile of a job a compile agent built.
  std::string phase;
  std::string arch;                   // compile phase: the arch the job's GPU class runs ("sm_89")
};

struct HeartbeatReply {
  bool lease_valid = true;
  bool cancel = false;
  TimeMs lease_expires_ms = 0;
};

class ControlPlane {
 public:
  ControlPlane(boost::asio::any_io_executor ex, store::Store& st, ClockPtr clock,
               provision::Provisioner& prov, Config cfg);
  ~ControlPlane();

  // Recovers from the store (running leases get a grace period so their agents can come
  // back) and starts the tick timer.
  void start();
  void stop();

  // --- auth
  bool is_user_token(const std::string& token);
  // The fleet's long-lived enrolment token, or a limited one kfleetd minted (whatever its
  // state: enrol() says why a used-up, expired or revoked one is refused).
  bool is_enrol_token(const std::string& token);
  // Mints a limited enrolment token (an audit event); `by` is the admin or "kfleetd".
  Result<NewEnrolToken> mint_enrol_token(const EnrolTokenRequest& r, const std::string& by);
  Result<store::EnrolToken> revoke_enrol_token(std::int64_t id, const std::string& by);
  bool is_agent_token(std::int64_t agent_id, const std::string& token);
  // The user behind a token (revoked and unknown tokens: nullopt).
  std::optional<Principal> user_for_token(const std::string& token);
  // The agent a token belongs to (0: none).
  std::int64_t agent_for_token(const std::string& token);
  Result<NewToken> create_token(const std::string& user, Scope scope, const std::string& note,
                                const std::string& by);
  Result<store::ApiToken> revoke_token(std::int64_t id, const std::string& by);
  // Retires an agent: no more leases, its token refused from now on (an audit event).
  Result<store::AgentRecord> retire_agent(std::int64_t id, const std::string& by);
  // Appends to the audit log (failures are logged, never fatal).
  void audit(const std::string& user, const std::string& action, const nlohmann::json& data);

  // --- users
  std::variant<SubmitResult, SubmitError> submit(const SubmitRequest& r);
  Result<store::JobRecord> cancel(std::int64_t job_id, const std::string& by = "");

  // --- agents
  Result<EnrolResult> enrol(const EnrolRequest& r);
  // Liveness is held in memory (live_fleet.hpp): a heartbeat of an agent whose state does not
  // change, holding no run or a run whose stored lease is recent enough, writes nothing. What
  // the store must know is written when it happens: a lost agent heard from again (idle), and
  // a run's lease expiry once the stored one is half a TTL behind the leader's.
  Result<HeartbeatReply> heartbeat(std::int64_t agent_id, std::int64_t run_id,
                                   std::int64_t fencing_token);
  // Long-poll: completes with an offer, or nullopt after wait_ms. conflict if the agent holds
  // a run already. It is a heartbeat too, and costs the agent's socket, a timer and its
  // coroutine's frames while it waits (no thread); it asks for a scheduling pass only when a
  // queued job is one the agent could run. A job leased to it wakes it alone.
  boost::asio::awaitable<Result<std::optional<LeaseOffer>>> wait_for_lease(std::int64_t agent_id,
                                                                           TimeMs wait_ms);
  // The agent run `run_id` was granted to; nullopt when there is no such run. A run's agent
  // never changes: the leader remembers it for the runs it granted while they run, so the
  // check of every upload and finish (only the run's agent may make them) reads nothing;
  // other runs are read from the store.
  std::optional<std::int64_t> run_agent(std::int64_t run_id);
  // Sets each event's run (and, on stage events, the agent) in place, then stores them under
  // the run's job. The store checks again that the run is the agent's, in its transaction.
  Result<store::IngestResult> ingest(std::int64_t agent_id, std::int64_t run_id,
                                     std::int64_t fencing_token, std::vector<Event>& events);
  Result<store::RunRecord> finish(std::int64_t agent_id, std::int64_t run_id,
                                  std::int64_t fencing_token, const Verdict& v);
  // finish() for the API: the finishes of runs this kfleetd leased that arrive together (in
  // one turn of the loop) are written together, one transaction and one commit for all of
  // them (Store::finish_agent_runs); each caller gets its own result.
  boost::asio::awaitable<Result<store::RunRecord>> finish_gathered(std::int64_t agent_id,
                                                                   std::int64_t run_id,
                                                                   std::int64_t fencing_token,
                                                                   Verdict v);

  // --- event feed: completes at the next stored event (any job), or after timeout_ms.
  // Callers query the store first, then wait; one thread, so nothing slips in between.
  boost::asio::awaitable<void> wait_for_events(TimeMs timeout_ms);

  store::Store& store() { return store_; }
  const Config& config() const { return cfg_; }
  Clock& clock() { return *clock_; }
  provision::Provisioner& provisioner() { return prov_; }
  // The leader's word on liveness and leases, which the store's rows lag (see heartbeat()):
  // the agent as last heard from, the run's lease as last renewed. Nothing changes on a
  // standby, or for an agent or run the leader does not hold.
  void overlay_live(store::AgentRecord& a) const;
  void overlay_live(store::RunRecord& r) const;
  // The live fleet by state, counted in memory (/metrics), and the agents waiting in a
  // long-poll now.
  std::map<store::AgentState, std::int64_t> agents_by_state() const;
  std::size_t waiting_agents() const { return fleet_.waiting(); }
  // Counters for /metrics: heartbeats and long polls heard, and of those the ones that wrote
  // to the store (a lost agent back, a lease's stored expiry renewed).
  std::int64_t beats_heard() const { return beats_heard_; }
  std::int64_t passes() const { return passes_; }  // scheduling passes run
  std::int64_t beats_written() const { return beats_written_; }
  std::int64_t finishes_gathered() const { return finishes_gathered_; }
  std::int64_t finish_batches() const { return finish_batches_; }
  const std::map<std::string, std::int64_t>& stockouts_by_region() const { return stockouts_; }
  // The jobs waiting for an agent, by state (queued, waiting_capacity), counted in the queue
  // the leader keeps in memory: no read of the store, whose pending set it mirrors.
  std::map<JobState, std::int64_t> queue_depth_by_state() const;
  std::string provisioning_stopped_reason() const;
  // The region blocks as a page shows them: the leader's kept copy (it writes them, so no
  // read of the store: a round trip per agents page on PostgreSQL; loaded by start()), a
  // standby's from the store.
  std::vector<store::RegionBlock> region_blocks_now();
  // The user of a stored token this leader has already checked (user_for_token keeps it until
  // the token is revoked), or an in-memory one; nullopt otherwise. Reads nothing from the
  // store, so the API's read thread may call it (as it may overlay_live, region_blocks_now
  // and provisioning_stopped_reason): see shared_mu_.
  std::optional<Principal> cached_user(const std::string& token) const;

  // Runs the scheduler soon (coalesced: many triggers in one loop turn make one pass).
  void request_plan();

 private:
  bool is_fleet_enrol_token(const std::string& token) const;
  // submit() of a child (parent_job set): checks the parent is its campaign's current best
  // (unless allow_non_best) and that the same change was not tried already (unless force),
  // and returns the change to record (job_change.hpp), or the refusal.
  std::variant<nlohmann::json, SubmitError> child_change(const SubmitRequest& r,
                                                         const JobSpec& spec,
                                                         const Bundle& bundle,
                                                         const std::string& content_hash);
  struct Waiter {  // an agent's open long-poll
    explicit Waiter(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
    boost::asio::steady_timer timer;
    std::optional<LeaseOffer> offer;
    bool done = false;
  };
  struct PendingFinish {  // a finish_gathered() call waiting for its batch
    explicit PendingFinish(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
    store::Store::FinishCall call;
    boost::asio::steady_timer timer;
    Result<store::RunRecord> result = make_error(Errc::internal, "not finished");
    bool done = false;
  };
  struct PendingInstance {
    std::int64_t job_id = 0;
    std::string region, gpu;
    TimeMs deadline_ms = 0;
  };

  void bootstrap_tokens();
  void plan_now();
  // What a scheduling pass needs of a queued or waiting job. The control plane is the only
  // writer of job states, so it keeps these in memory (loaded from the store at start, kept
  // current on every transition it makes) instead of reading the queue on every pass.
  struct QueuedJob {
    std::int64_t id = 0;
    int priority = 0;
    std::string name, campaign, parent, gpu;
    std::vector<std::string> regions;
    JobState state = JobState::queued;
    std::string state_reason;
    bool host_exclusive = false;
    std::string cls;  // its JobClass key
    std::string language;  // kernel.language: who can run it (sched::PendingJob::language)
  };
  // Queued jobs a pass cannot tell apart (same GPU, regions, host exclusivity, parent and
  // build state) form a class. A pass plans only the first jobs of each class, as many as could
  // possibly be placed (agents, capacity budget) and one more: the rest of the class can only
  // wait, and wait for the same reason as that last one (`rep`), which is carried to them a
  // bounded number per pass. So a pass costs what the fleet's size does, not the queue's.
  using QueueKey = std::pair<int, std::int64_t>;  // (-priority, id): the order a pass takes
  struct JobClass {
    std::set<QueueKey> order;
    std::optional<QueueKey> planned_last;  // the deepest job the current pass planned
    std::optional<sched::Wait> rep;        // what the last pass told that job
    std::string rep_synced;                // the reason (as reason_key) the tail is brought to
    std::optional<QueueKey> sync_from;     // tail jobs from here on may not carry it yet
  };
  void remember_pending(const store::JobRecord& j);
  void forget_pending(std::int64_t job_id);
  std::string class_key(const QueuedJob& j) const;
  void sync_tails();
  // What a pass plans with: the queue's heads, the live fleet and its running leases (both in
  // memory: fleet_), the region blocks. preview: for a plan made beside the passes (a
  // submit's), which reads and writes nothing in the store and leaves the pass's bookkeeping
  // as it is; a job waiting for its parent is planned as if it could run (the preview only
  // gives way to it). The snapshot points at fleet_'s agents: plan it before fleet_ changes.
  sched::Snapshot snapshot(bool preview = false);
  // The waiting agent the pass after a submit would give the job `j` (not yet written): then
  // the submit grants that lease in its own transaction (one round trip on PostgreSQL from a
  // submit to its lease). Nothing when no agent waits, or when the job goes elsewhere.
  std::optional<sched::Assign> plan_for_new_job(const store::NewJob& j);
  // The sched.decision event's data for a lease.
  static nlohmann::json assign_decision(const sched::Assign& a, const store::AgentRecord& agent);
  void apply_wait(QueuedJob& j, const sched::Wait& w);
  // What apply_wait would write for the job; nothing when it already says so.
  std::optional<store::Store::JobStateChange> wait_change(QueuedJob& j, const sched::Wait& w);
  void apply_waits(const std::vector<store::Store::JobStateChange>& changes);  // one batch
  // A pass's leases, granted in one store call (on PostgreSQL one transaction and two round
  // trips for them all), each offered to its waiting agent.
  void grant(const std::vector<sched::Assign>& assign);
  void deliver_offer(const sched::Assign& a, const store::AgentRecord& agent,
                     const store::Store::GrantedLease& granted);
  void ask_capacity(const sched::RequestCapacity& r);
  void on_capacity(const sched::RequestCapacity& r, const provision::CapacityResult& res);
  void tick();
  // The region blocks, as the store holds them: read at the first use, then kept by the
  // writes this control plane makes (it is their only writer).
  std::vector<store::RegionBlock>& region_blocks();
  std::optional<std::vector<store::RegionBlock>> blocks_;
  void expire_leases(TimeMs now);
  void release_idle_agents(TimeMs now, const std::vector<std::int64_t>& candidates);
  nlohmann::json resolve_compare(const store::JobRecord& j, const store::AgentRecord& a);
  void job_event(std::int64_t job_id, const std::string& type, const nlohmann::json& data);
  void record_cost(const store::RunRecord& run);
  // An agent's identity (name, backend, GPUs, host and slot, provider, instance), which is
  // fixed at enrolment: the live fleet's, else (a retired agent, a standby) read from the store.
  std::optional<store::AgentRecord> agent_identity(std::int64_t agent_id);
  // The live agent, from memory; one the store holds and memory does not (enrolled behind the
  // control plane's back, as tests do) is taken in. nullptr for a retired or unknown agent.
  LiveFleet::Agent* live_agent(std::int64_t agent_id);
  // The agent spoke (a heartbeat, a long poll): heard now. Writes only when that changes its
  // state: a lost agent is idle again.
  Result<void> heard_from(LiveFleet::Agent& a, TimeMs now);
  // An agent asked for work while kfleetd counted a run as its: that run ends as lost and its
  // job is requeued (scheduling.cpp says why).
  Result<void> lose_undelivered_run(LiveFleet::Agent& a, TimeMs now);
  // The agent's long poll ended (answered, replaced, timed out, or the agent retired).
  void end_wait(std::int64_t agent_id, Waiter& w);
  // A running run's lease as the leader holds it; one the store holds and memory does not is
  // taken in (a run granted behind the control plane's back). nullptr when it is not running.
  LiveFleet::Run* live_run(std::int64_t run_id);
  // Could the waiting agent be given a queued job now? Then its poll asks for a pass.
  bool worth_a_pass(const LiveFleet::Agent& a) const;
  void events_changed();
  double jitter_unit();

  boost::asio::any_io_executor ex_;
  store::Store& store_;
  ClockPtr clock_;
  provision::Provisioner& prov_;
  Config cfg_;
  std::mt19937_64 rng_;

  std::map<std::int64_t, QueuedJob> queue_;                      // job id -> pending job
  std::map<std::string, JobClass> classes_;                      // class key -> its jobs
  std::map<std::int64_t, std::shared_ptr<Waiter>> waiters_;      // agent id -> its long-poll
  std::map<std::int64_t, sched::InFlight> in_flight_;            // job id -> capacity request
  std::map<std::string, PendingInstance> pending_instances_;     // instance id -> what it is for
  std::map<std::int64_t, TimeMs> retry_after_;                   // job id -> transient backoff
  std::map<std::int64_t, TimeMs> idle_since_;                    // agent id -> last busy
  std::set<std::int64_t> cancel_requested_;                      // run ids to stop
  std::map<std::string, std::int64_t> stockouts_;
  std::string provisioning_stopped_;
  std::vector<std::shared_ptr<boost::asio::steady_timer>> event_waiters_;
  TimeMs last_tick_ms_ = 0;
  std::int64_t sweep_from_ = 0;  // the first agent id of the next tick's slice (tick())
  std::map<std::int64_t, std::string> wait_reason_;  // job id -> last persisted wait reason
  std::map<std::int64_t, std::string> agent_hash_cache_;
  LiveFleet fleet_;                 // the leader's live agents and running leases
  TimeMs liveness_from_ms_ = 0;     // start(): an agent's silence counts from here at the latest
  std::int64_t beats_heard_ = 0, beats_written_ = 0, passes_ = 0;
  // A run this kfleetd leased: its agent (see run_agent()), and whether its job is a custom
  // one, whose numbers are self-reported (read with the lease: finish() needs no read for it).
  struct LeasedRun {
    std::int64_t agent_id = 0;
    bool self_reported = false;
  };
  std::map<std::int64_t, LeasedRun> run_agents_;  // run id -> LeasedRun
  std::vector<std::shared_ptr<PendingFinish>> finishes_;  // see finish_gathered()
  std::int64_t finishes_gathered_ = 0, finish_batches_ = 0;
  void finish_gathered_now();
  // What the control plane makes of an agent's verdict: a simulated agent's is simulated,
  // an outcome other than passed or rejected is an error.
  static Verdict agent_verdict(const std::optional<store::AgentRecord>& a, const Verdict& v);
  // The bookkeeping after a run ended in the store (costs, baselines, regressions, the
  // agent idle, the next pass).
  store::RunRecord after_finish(std::int64_t agent_id, store::FinishedRun& r);
  std::map<std::string, std::int64_t> agent_by_hash_;       // token hash -> agent id
  std::map<std::string, Principal> static_users_;           // hash -> in-memory user token
  std::map<std::string, Principal> user_cache_;             // hash -> stored, unrevoked token
  // What the API's read thread reads besides the live fleet (which has its own lock): the
  // user cache, the region blocks and provisioning_stopped_. This thread is their only writer:
  // it changes them under shared_mu_ and reads them without; the other thread reads them under
  // it.
  mutable std::mutex shared_mu_;
  std::set<std::int64_t> built_;  // jobs a compile agent built: only GPU stages are left
  Result<store::RunRecord> hand_off(const store::RunRecord& run, const store::AgentRecord& agent,
                                    std::int64_t fencing_token);
  bool plan_pending_ = false;
  bool plan_runs_at_once() const;  // a request_plan() now would post the pass, not pace it
  boost::asio::steady_timer plan_timer_{ex_};
  std::chrono::steady_clock::time_point last_plan_end_{};
  std::chrono::steady_clock::duration last_plan_cost_{};
  bool stopped_ = false;
  std::unique_ptr<boost::asio::steady_timer> tick_timer_;
};

}  // namespace kfleet::core
