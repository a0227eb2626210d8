#pragma once
// The orchestrator's durable state, behind one interface. Every backend passes the contract
// suite in tests/store_contract.cpp. Calls are synchronous and made from the control-plane
// thread only (no locks needed). Each mutating call is one transaction: when it returns ok the
// change is committed (and survives kill -9 of the process); the events it implies are
// written in the same transaction, so state and history never disagree.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/clock.hpp"
#include "kfleet/common/event.hpp"
#include "kfleet/common/model.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::store {

struct NewJob {
  std::string name, campaign, parent;
  int priority = 0;
  std::string gpu;                   // the target's class or arch
  std::vector<std::string> regions;  // preference order; empty = any
  nlohmann::json spec;               // to_json(JobSpec)
  std::string spec_yaml;             // as submitted
  std::string source_name;           // the YAML's file name, for messages
  std::string bundle_hash;
  std::string content_hash;          // job_content_hash(): the no-repeat map's key
  int max_attempts = 3;
  std::string submitted_by;
  bool host_exclusive = false;       // host_exclusive(spec): no other job on its host meanwhile
  // kernel.language (cuda | hip | triton | torch), a column of its own so that the scheduler's
  // scan of the queue (pending_jobs, which leaves the spec out) knows who can run it. "": the
  // store reads it from `spec` (job_language), "cuda" when the spec names none.
  std::string language;
  // Where it came from (a JobOrigin, written in the same transaction when either is set).
  std::string token_key;             // sha256 of the submitting token: the in-flight limit's key
  std::int64_t parent_job_id = 0;    // submitted as parent + change: the parent job
  nlohmann::json change;             // ... and the change against it (core::job_change)
};

// Where a job came from: the token that submitted it and, for a child submitted as parent +
// change, its parent and the change. Jobs made before this was recorded have none.
struct JobOrigin {
  std::int64_t job_id = 0;
  std::string token_key;
  std::int64_t parent_job_id = 0;    // 0: not submitted as a child
  nlohmann::json change;             // null unless parent_job_id
};

struct JobRecord {
  std::int64_t id = 0;
  std::string name, campaign, parent;
  int priority = 0;
  std::string gpu;
  std::vector<std::string> regions;
  nlohmann::json spec;
  std::string spec_yaml, source_name, bundle_hash, content_hash;
  JobState state = JobState::queued;
  std::string state_reason;          // e.g. "waiting_capacity: us-east-1 stockout until ..."
  int attempts = 0;                  // runs started so far
  int max_attempts = 3;
  std::int64_t current_run_id = 0;   // 0 unless an agent holds it
  std::string submitted_by;
  TimeMs created_ms = 0, updated_ms = 0;
  std::optional<Verdict> verdict;    // set when terminal via a run
  bool simulated = false;            // its result came from the simulated GPU backend
  bool host_exclusive = false;       // runs with every other slot of its host idle
  std::string cancelled_by;          // the user who cancelled it; "" unless cancelled by one
  std::string language = "cuda";     // kernel.language (NewJob::language), also in pending_jobs
};

struct JobFilter {
  std::vector<JobState> states;      // empty = all
  std::string campaign;              // "" = all
  std::string name;                  // "" = all
  std::int64_t before_id = 0;        // paging: ids < before_id (0 = from the newest)
  int limit = 100;
  bool with_spec = true;             // false: spec and spec_yaml left empty (a listing's page)
};

struct RunRecord {
  std::int64_t id = 0;
  std::int64_t job_id = 0;
  std::int64_t agent_id = 0;
  int attempt = 0;                   // 1-based
  std::int64_t fencing_token = 0;    // strictly increasing across all leases ever granted
  RunOutcome outcome = RunOutcome::running;
  std::string stage;                 // last stage started
  TimeMs started_ms = 0, lease_expires_ms = 0, finished_ms = 0;
  std::optional<Verdict> verdict;
  bool simulated = false;
  std::int64_t events_contiguous = 0;  // highest seq with every seq in 1..n stored
  std::string host;                  // the GPU slot it holds (its agent's, at grant time)
  int slot = 0;
  bool host_exclusive = false;       // it holds the whole host
};

// How many runs of one job that never started (expire_run) may give their attempt back.
inline constexpr int kNeverStartedRefunds = 3;

struct Lease {
  std::int64_t run_id = 0, job_id = 0, agent_id = 0, fencing_token = 0;
  TimeMs expires_ms = 0;
};

// A submission: the job and what is checked and stored with it, under the same write lock and
// in the same transaction (one round trip on PostgreSQL: the writes are guarded in the server
// by the same checks).
struct Submission {
  NewJob job;
  // The job's bundle, stored as put_bundle stores it under job.bundle_hash (conflict if a
  // different body is stored under that hash); empty: stored already.
  std::string bundle_body;
  // The no-repeat map: an earlier job with the same content_hash that did not end in error
  // or cancelled answers for this one, and nothing is written.
  bool reuse_identical = false;
  // With job.token_key set and a limit above 0: nothing is written while the token has that
  // many jobs queued or running.
  int in_flight_limit = 0;
  // A lease of the new job, granted in the same transaction once the job is written (one
  // round trip on PostgreSQL for the submit and its lease): the control plane planned it
  // before the job had an id. It is judged by grant_lease's rules; refused, it writes nothing
  // and the job stays queued for the next pass. A duplicate or a refused submission grants
  // nothing.
  struct Grant {
    std::int64_t agent_id = 0;
    nlohmann::json decision;  // as grant_lease's
    TimeMs ttl_ms = 0;
  };
  std::optional<Grant> grant;
};

struct Submitted {
  JobRecord job;            // the new job, or the earlier identical one (duplicate)
  bool duplicate = false;   // job is an earlier one: nothing was written
  bool over_limit = false;  // the token is at its limit: nothing was written, job is empty
  int in_flight = 0;        // the token's jobs queued or running before this one (with a limit)
  std::optional<Lease> lease;  // Submission::grant's lease; job is then as the grant left it
};

// What an agent's finish leaves behind, with what the control plane reads next: the store
// read the job and its regression run in the finish's own transaction (on PostgreSQL in its
// first round trip), so the control plane does not read them again with round trips of
// their own.
struct FinishedRun {
  RunRecord run;                     // as finished
  std::optional<JobRecord> job;      // its job as the finish left it
  std::int64_t regression_id = 0;    // the regression run the job belongs to; 0: none
};

// The kernel.language a new job is stored with: j.language, else the spec's kernel.language,
// else "cuda" (a job without a spec, as the tests and the simulator make).
std::string job_language(const NewJob& j);

enum class AgentState { idle, busy, lost, retired };
const char* to_string(AgentState s);
std::optional<AgentState> agent_state_from_string(std::string_view s);  // nullopt: unknown

// Which agents list_agents() returns. The default is the live fleet: every agent but the
// retired ones, whose rows stay for history but grow with every scale-down and spot reclaim,
// so nothing on the control plane's hot path reads them.
struct AgentFilter {
  std::vector<AgentState> states;    // empty = idle, busy and lost (not retired)
  bool include_retired = false;      // with states empty: every agent
  std::int64_t after_id = 0;         // paging: ids > after_id, oldest first
  int limit = 0;                     // 0 = no limit
};

struct NewAgent {
  std::string name;
  std::string region;
  std::string backend;               // cuda | hip | simulated
  std::vector<GpuInfo> gpus;         // what it runs jobs on (one job at a time, whatever the count)
  // The GPU slot it serves: one agent per GPU, `slot` = the GPU's index on `host`. An empty
  // host makes the agent a host of its own ("agent:<id>"), as agents were before slots.
  std::string host;
  int slot = 0;
  std::string token_hash;            // sha256 of the agent's bearer token
  std::string provider;              // static | simulated | terraform
  std::string instance_id;           // the provisioner's id for it, if it made it
  nlohmann::json info = nlohmann::json::object();  // host, versions, clocks ...
  // The limited enrolment token it showed (sha256), consumed in the same transaction as the
  // agent is stored; "" = the fleet's long-lived enrolment token.
  std::string enrol_token_hash;
};

struct AgentRecord {
  std::int64_t id = 0;
  std::string name, region, backend;
  std::vector<GpuInfo> gpus;
  std::string token_hash, provider, instance_id;
  nlohmann::json info;
  AgentState state = AgentState::idle;
  std::int64_t current_run_id = 0;
  TimeMs enrolled_ms = 0, last_seen_ms = 0;
  std::string host;                  // never empty once stored
  int slot = 0;
  // Who let it in: the limited enrolment token it used (id, name, the admin who minted it),
  // or id 0 for the fleet's long-lived enrolment token.
  std::int64_t enrol_token_id = 0;
  std::string enrol_token_name, enrol_token_by;
  bool simulated() const;
};

// A region (or zone) the provisioner must not ask for now.
struct RegionBlock {
  std::string provider;              // simulated | terraform | ...
  std::string region;                // region or AZ
  std::string gpu_class;             // "" = every class
  std::string kind;                  // stockout | unsupported | quota | fatal
  std::string reason;                // the cloud's message, shortened
  int strikes = 1;                   // consecutive failures: grows the cool-down
  TimeMs since_ms = 0, until_ms = 0;
};

struct IngestResult {
  int accepted = 0;                  // newly stored
  int duplicates = 0;                // already had (retries, spool replays)
  std::int64_t contiguous = 0;       // highest seq n with 1..n all stored
};

// The accepted result for one (kernel, case, GPU class): what `compare_to: baseline` means.
// kernel = the job's campaign if it has one, else its name (kfleet::core::kernel_key). A
// simulated result is a baseline only for simulated agents: `simulated` is part of the key.
struct Baseline {
  std::int64_t id = 0;
  std::string kernel, case_name, gpu_class;
  std::int64_t run_id = 0, job_id = 0;
  double median_us = 0;
  nlohmann::json samples_us = nlohmann::json::array();
  bool simulated = false;
  std::string reason;                // "kfleet baseline set", "kept win of campaign X", ...
  // The user who set it: the token's user for `kfleet baseline set`, the campaign's (or
  // regression run's) submitter for a kept win (or first result). "" for rows set before
  // this was recorded whose reason did not name the user.
  std::string set_by;
  TimeMs set_ms = 0;
  TimeMs superseded_ms = 0;          // 0 while it is the current one
};

// A fleet regression run: a suite sent to several GPU classes; its cells are computed from
// its jobs' verdicts (kfleet::core) and stored here when they change.
struct RegressionRecord {
  std::int64_t id = 0;
  std::string suite;
  std::string state = "running";     // running | done
  nlohmann::json spec = nlohmann::json::object();   // the suite (to_json(SuiteSpec))
  nlohmann::json cells = nlohmann::json::array();   // the last computed matrix
  TimeMs created_ms = 0, updated_ms = 0;
};
struct RegressionJob {
  std::int64_t regression_id = 0, job_id = 0;
  std::string kernel, gpu_class;
};

// An API token of a person or a service. Only the SHA-256 of the secret is stored; `prefix`
// (the first characters, e.g. "kft_1a2b") lets a person tell their tokens apart in a list.
struct ApiToken {
  std::int64_t id = 0;
  std::string user;                  // who it belongs to (recorded on jobs, cancels, baselines)
  std::string scope;                 // read | submit | admin
  std::string token_hash;            // sha256 hex of the secret
  std::string prefix;
  std::string note;
  std::string created_by;
  TimeMs created_ms = 0;
  TimeMs revoked_ms = 0;             // 0 while valid
};

// A limited enrolment token (kfleet enrol-token mint): only the SHA-256 of the secret is stored.
// Each enrolment with it uses one of max_uses (0 = no limit); it works until expires_ms (0 =
// no expiry) and, when instance_id is set, only for an agent that says it is that instance.
struct EnrolToken {
  std::int64_t id = 0;
  std::string name;                  // what it is for ("gce kfleet-l4-17", "rack 3")
  std::string token_hash;
  std::string prefix;                // the secret's first characters, to tell tokens apart
  std::string instance_id;           // "" = any instance
  int max_uses = 1;                  // 0 = any number
  int uses = 0;
  std::string created_by;            // the admin (or "kfleetd" for a provisioner's)
  TimeMs created_ms = 0;
  TimeMs expires_ms = 0;             // 0 = never
  TimeMs revoked_ms = 0;             // 0 while not revoked
};

// Who did what to whom: token create/revoke, cancels, baselines set.
struct AuditRecord {
  std::int64_t id = 0;
  TimeMs ts_ms = 0;
  std::string user, action;
  nlohmann::json data = nlohmann::json::object();
};

class Store {
 public:
  virtual ~Store() = default;
  // Which backend this is ("sqlite" or "postgresql"), as /api/v1/health reports it.
  virtual const char* backend() const = 0;
  // Round trips to the database server since the store opened (/metrics'
  // kfleet_store_round_trips_total; what a control-plane call costs on PostgreSQL). 0 for
  // SQLite, which runs in process.
  virtual std::int64_t round_trips() const { return 0; }
  // Nanoseconds the caller spent blocked on the database server in those round trips
  // (/metrics' kfleet_store_wait_seconds_total: the control plane's thread serves nothing
  // meanwhile). 0 for SQLite, whose work is the caller's own CPU time.
  virtual std::int64_t wait_ns() const { return 0; }
  // The same time by what the round trip carried ("SELECT jobs", "INSERT events +COMMIT": the
  // first statement's verb and table, +COMMIT when the commit went with it), and how many of
  // those round trips took a millisecond or more: where the blocked stretches come from
  // (/metrics' kfleet_store_statement_wait_seconds_total). Empty for SQLite.
  struct StatementWait {
    std::string statement;
    std::int64_t round_trips = 0, wait_ns = 0, slow = 0;
  };
  virtual std::vector<StatementWait> statement_waits() const { return {}; }

  // --- jobs
  virtual Result<JobRecord> create_job(const NewJob& j, TimeMs now) = 0;  // + job.submitted event
  // create_job with its checks and its bundle (Submission): what a user's submit makes.
  virtual Result<Submitted> submit_job(const Submission& s, TimeMs now) = 0;
  virtual std::optional<JobRecord> get_job(std::int64_t id) = 0;
  // One job's page (GET /api/v1/jobs/{id}): the job, its runs oldest first, where it came from.
  // One round trip on PostgreSQL (the three reads pipelined, one snapshot), not three.
  struct JobPage {
    std::optional<JobRecord> job;
    std::vector<RunRecord> runs;
    std::optional<JobOrigin> origin;
  };
  virtual JobPage job_page(std::int64_t id) = 0;
  virtual std::vector<JobRecord> list_jobs(const JobFilter& f) = 0;   // newest first
  // queued and waiting_capacity jobs: priority desc, then id asc (FIFO). The scheduler reads
  // this on every pass, so spec and spec_yaml are left empty (get_job has them).
  virtual std::vector<JobRecord> pending_jobs() = 0;
  // Moves a non-terminal job to `s` (+ job.state event). conflict if already terminal.
  // Moving to a terminal state also ends its running run (outcome cancelled/error) and frees
  // the agent, so a cancelled job's agent can take the next one. `by` (the user who asked)
  // is recorded as the job's cancelled_by when s is cancelled; it is ignored otherwise.
  virtual Result<JobRecord> set_job_state(std::int64_t id, JobState s, const std::string& reason,
                                          TimeMs now, const std::string& by = {}) = 0;
  // Several set_job_state calls, each judged as it would be alone (one refused leaves the
  // others); results in the order given. A backend may write them in one transaction, as
  // SQLite does, so that a scheduling pass moving many waiting jobs pays for one commit.
  struct JobStateChange {
    std::int64_t id = 0;
    JobState state = JobState::queued;
    std::string reason;
  };
  virtual std::vector<Result<JobRecord>> set_job_states(const std::vector<JobStateChange>& changes,
                                                        TimeMs now) {
    std::vector<Result<JobRecord>> out;
    out.reserve(changes.size());
    for (const auto& c : changes) out.push_back(set_job_state(c.id, c.state, c.reason, now));
    return out;
  }
  virtual std::optional<JobRecord> find_job_by_content_hash(const std::string& hash) = 0;
  // Where job `id` came from; nullopt if it was made without a token or a parent.
  virtual std::optional<JobOrigin> job_origin(std::int64_t id) = 0;
  // The children submitted as parent + change of `parent_job_id`, oldest first.
  virtual std::vector<JobOrigin> children_of(std::int64_t parent_job_id) = 0;
  // How many jobs the token (token_key) submitted that have not finished yet.
  virtual int in_flight_jobs_of(const std::string& token_key) = 0;

  // --- leases and runs
  // Atomically: new run (attempt+1, next fencing token), job -> leased, agent -> busy,
  // lease.granted event. conflict if the job is not pending or the agent is not idle: an
  // agent holds at most one run, ever. Also conflict when the agent's GPU slot (host, slot)
  // holds a running run, when the job is host-exclusive and its host runs anything, or when
  // the host runs a host-exclusive job: a slot never holds two leases. decision, when not
  // null: the data of the sched.decision event that chose this lease, written first in the
  // same transaction (one commit, and on PostgreSQL no round trips of its own); a refused
  // lease leaves no decision behind.
  // leased_job, when not null, receives the job as the grant left it (leased, its attempts
  // counted, current_run_id set): read in the grant's transaction, so the caller needs no
  // get_job of its own (a round trip on PostgreSQL).
  virtual Result<Lease> grant_lease(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl_ms,
                                    TimeMs now, const nlohmann::json& decision = nullptr,
                                    JobRecord* leased_job = nullptr) = 0;
  // Several grant_lease calls, as a scheduling pass makes them: each judged as it would be
  // alone, after the ones before it (one refused leaves the others); results in the order
  // given, each with the job as its grant left it. A backend may write them in one
  // transaction, as PostgreSQL does (one commit and two round trips for the whole pass,
  // however many leases); a database failure then fails them all and writes none.
  struct LeaseGrant {
    std::int64_t job_id = 0, agent_id = 0;
    nlohmann::json decision;  // as grant_lease's
  };
  struct GrantedLease {
    Lease lease;
    JobRecord job;  // as the grant left it
  };
  virtual std::vector<Result<GrantedLease>> grant_leases(const std::vector<LeaseGrant>& grants,
                                                         TimeMs ttl_ms, TimeMs now) {
    std::vector<Result<GrantedLease>> out;
    out.reserve(grants.size());
    for (const auto& g : grants) {
      GrantedLease granted;
      auto l = grant_lease(g.job_id, g.agent_id, ttl_ms, now, g.decision, &granted.job);
      if (!l) {
        out.push_back(l.error());
        continue;
      }
      granted.lease = *l;
      out.push_back(std::move(granted));
    }
    return out;
  }
  // Extends the lease of the agent's current run. conflict if the token is stale.
  virtual Result<Lease> renew_lease(std::int64_t run_id, std::int64_t fencing_token,
                                    TimeMs ttl_ms, TimeMs now) = 0;
  // Stores agent events idempotently on (run_id, seq). conflict if the token is not the run's
  // or the run is no longer running (late results of a lost agent are refused).
  // stage.started events move the job to building / gating / benchmarking. Each event is
  // stored under the run's job, whatever its job_id says. agent_id, when not 0, is the agent
  // that sends them: forbidden unless the run is its own (checked before the token).
  virtual Result<IngestResult> append_run_events(std::int64_t run_id, std::int64_t fencing_token,
                                                 const std::vector<Event>& events, TimeMs now,
                                                 std::int64_t agent_id = 0) = 0;
  // Ends the run with the agent's verdict; the job takes the verdict's outcome; agent -> idle.
  Result<RunRecord> finish_run(std::int64_t run_id, std::int64_t fencing_token, const Verdict& v,
                               TimeMs now) {
    auto r = finish_agent_run(0, run_id, fencing_token, v, now);
    if (!r) return r.error();
    return std::move(r->run);
  }
  // finish_run for the agent agent_id (0: any): not_found without the run, forbidden unless it
  // is the agent's own (checked before the token). amend, when given, sees the run's job as
  // read before anything is written and may change the verdict stored (a custom job's
  // numbers are self-reported, whatever the agent says).
  using AmendVerdict = std::function<void(const JobRecord& job, Verdict& v)>;
  virtual Result<FinishedRun> finish_agent_run(std::int64_t agent_id, std::int64_t run_id,
                                               std::int64_t fencing_token, const Verdict& v,
                                               TimeMs now, const AmendVerdict& amend = {}) = 0;
  // finish_agent_run (no amendment) of several runs, a result for each in order. A call's
  // refusal is its own; a failure of the database is every call's. On PostgreSQL they are
  // one transaction: one round trip and one commit for all of them (the control plane
  // gathers the finishes that arrive together). Here: one after another.
  struct FinishCall {
    std::int64_t agent_id = 0, run_id = 0, fencing_token = 0;
    Verdict verdict;
  };
  virtual std::vector<Result<FinishedRun>> finish_agent_runs(const std::vector<FinishCall>& calls,
                                                             TimeMs now) {
    std::vector<Result<FinishedRun>> out;
    out.reserve(calls.size());
    for (const auto& c : calls)
      out.push_back(finish_agent_run(c.agent_id, c.run_id, c.fencing_token, c.verdict, now));
    return out;
  }
  // A compile agent built the job and it passed its resources gate: atomically the run ends
  // (outcome passed, no verdict: the job's verdict comes from the GPU phase), the agent is
  // idle again, and the job is queued for a GPU agent with a fresh attempt count (attempts 0:
  // the build's attempts do not use up the GPU phase's), + run.handed_off and job.state
  // events. conflict if the token is stale, the run ended, or the job is no longer active.
  virtual Result<JobRecord> hand_off_run(std::int64_t run_id, std::int64_t fencing_token,
                                         const std::string& reason, TimeMs now) = 0;
  // The lease expired: run -> lost, agent -> lost, job -> queued again (attempts < max) or
  // error "agent lost" (+ lease.lost and job.state events). A run under which nothing was
  // posted (no stage, no event: its lease never reached a working agent) gives its attempt
  // back, kNeverStartedRefunds times a job at most.
  virtual Result<JobRecord> expire_run(std::int64_t run_id, const std::string& reason,
                                       TimeMs now) = 0;
  virtual std::vector<RunRecord> expired_runs(TimeMs now) = 0;  // running, lease_expires <= now
  virtual std::optional<RunRecord> get_run(std::int64_t id) = 0;
  virtual std::vector<RunRecord> runs_for_job(std::int64_t job_id) = 0;
  virtual std::vector<RunRecord> running_runs() = 0;
  // Finished runs with a verdict, newest first (the results table).
  virtual std::vector<RunRecord> finished_runs(int limit, std::int64_t before_id = 0) = 0;

  // --- agents
  // With a.enrol_token_hash set, uses that enrolment token once in the same transaction, or
  // stores nothing: unauthorized when it is unknown, revoked, expired or used up; forbidden
  // when it is bound to another instance than a.instance_id. Of two enrolments racing on a
  // token's last use, exactly one succeeds.
  virtual Result<AgentRecord> enrol_agent(const NewAgent& a, TimeMs now) = 0;
  virtual std::optional<AgentRecord> get_agent(std::int64_t id) = 0;
  virtual std::vector<AgentRecord> list_agents(const AgentFilter& f = {}) = 0;
  // How many agents are in state s (counted in the database: no rows travel).
  virtual std::int64_t count_agents(AgentState s) = 0;
  // Heartbeat: last_seen = now; a lost agent that speaks again becomes idle (if it holds no run).
  virtual Result<AgentRecord> touch_agent(std::int64_t id, TimeMs now) = 0;
  virtual Result<void> set_agent_state(std::int64_t id, AgentState s, TimeMs now) = 0;

  // What a scheduling pass reads before it plans: the live agents (list_agents()), the running
  // runs (running_runs()) and the region blocks (region_blocks()), read together: one round
  // trip and one snapshot on PostgreSQL.
  struct FleetView {
    std::vector<AgentRecord> agents;
    std::vector<RunRecord> running;
    std::vector<RegionBlock> blocks;
  };
  virtual FleetView fleet_view() = 0;
  // A scheduling pass follows the next call that commits (a submit): on PostgreSQL the fleet
  // view is read in that call's last round trip, right behind its COMMIT, and the pass's
  // fleet_view() takes it when nothing has reached the database since (this store is the
  // leader's, the fleet's only writer). One round trip less from a submit to its lease. Here:
  // nothing (a read costs no round trip).
  virtual void read_fleet_view_with_next_commit() {}

  // --- region blocks
  virtual void put_region_block(const RegionBlock& b) = 0;  // upsert on (provider, region, gpu_class)
  virtual std::vector<RegionBlock> region_blocks() = 0;     // all, including expired ones
  virtual void clear_region_block(const std::string& provider, const std::string& region,
                                  const std::string& gpu_class) = 0;

  // --- events
  // An orchestrator event about a job (run_id 0); seq is assigned per job.
  virtual Event append_job_event(std::int64_t job_id, const std::string& type,
                                 const nlohmann::json& data, TimeMs now) = 0;
  // Events of a job (its own and its runs'), in id order, id > after_id.
  virtual std::vector<Event> job_events(std::int64_t job_id, std::int64_t after_id, int limit) = 0;
  virtual std::vector<Event> run_events(std::int64_t run_id, std::int64_t after_seq, int limit) = 0;
  virtual std::vector<Event> events_after(std::int64_t after_id, int limit) = 0;  // all jobs

  // --- bundles (content-addressed; put is idempotent)
  virtual Result<void> put_bundle(const std::string& hash, const std::string& body) = 0;
  virtual std::optional<std::string> get_bundle(const std::string& hash) = 0;

  // --- baselines
  // Makes b the current baseline of (kernel, case_name, gpu_class, simulated), superseding
  // the previous one (kept in the history). invalid_argument without a kernel or a time.
  virtual Result<Baseline> set_baseline(const Baseline& b, TimeMs now) = 0;
  virtual std::optional<Baseline> current_baseline(const std::string& kernel,
                                                   const std::string& case_name,
                                                   const std::string& gpu_class,
                                                   bool simulated) = 0;
  // Every baseline ever set, newest first; "" matches any kernel.
  virtual std::vector<Baseline> baseline_history(const std::string& kernel) = 0;

  // --- regression runs
  virtual Result<RegressionRecord> create_regression(const std::string& suite,
                                                     const nlohmann::json& spec, TimeMs now) = 0;
  virtual Result<void> add_regression_job(const RegressionJob& rj) = 0;
  virtual std::vector<RegressionJob> regression_jobs(std::int64_t regression_id) = 0;
  // 0 when the job belongs to no regression run.
  virtual std::int64_t regression_of_job(std::int64_t job_id) = 0;
  virtual Result<RegressionRecord> update_regression(std::int64_t id, const std::string& state,
                                                     const nlohmann::json& cells, TimeMs now) = 0;
  virtual std::optional<RegressionRecord> get_regression(std::int64_t id) = 0;
  virtual std::vector<RegressionRecord> list_regressions(int limit) = 0;  // newest first

  // --- API tokens and the audit log
  // conflict if a token with the same hash exists.
  virtual Result<ApiToken> create_token(const ApiToken& t, TimeMs now) = 0;
  virtual std::optional<ApiToken> find_token_by_hash(const std::string& hash) = 0;
  virtual std::vector<ApiToken> list_tokens() = 0;   // oldest first, revoked included
  // not_found if no such token; a second revoke keeps the first time.
  virtual Result<ApiToken> revoke_token(std::int64_t id, TimeMs now) = 0;
  // --- limited enrolment tokens
  // conflict if a token with the same hash exists.
  virtual Result<EnrolToken> create_enrol_token(const EnrolToken& t, TimeMs now) = 0;
  virtual std::optional<EnrolToken> find_enrol_token_by_hash(const std::string& hash) = 0;
  virtual std::vector<EnrolToken> list_enrol_tokens(int limit) = 0;  // newest first
  // not_found if no such token; a second revoke keeps the first time.
  virtual Result<EnrolToken> revoke_enrol_token(std::int64_t id, TimeMs now) = 0;

  virtual Result<void> append_audit(const std::string& user, const std::string& action,
                            const nlohmann::json& data, TimeMs now) = 0;
  virtual std::vector<AuditRecord> audit_log(int limit) = 0;  // newest first
};

using StorePtr = std::unique_ptr<Store>;

struct SqliteOptions {
  std::string path;                  // a file; ":memory:" for tests
  bool synchronous_full = false;     // fsync the WAL on every commit (power-loss durable)
};
Result<StorePtr> open_sqlite_store(const SqliteOptions& o);

}  // namespace kfleet::store
