#pragma once
// The PostgreSQL backend of kfleet::store::Store. One connection, used from the control-plane
// thread only; every mutating method is one transaction holding the write lock (pg_db.hpp).
#include <map>
#include <memory>
#include <string>

#include "kfleet/store/store.hpp"
#include "pg_db.hpp"

namespace kfleet::store::pg {

// The text of a statement that stores one orchestrator event about a job: a batch of one
// (migration 10), run 0, its id the `value` of a counters row `c` that `from` must give, its
// seq the next of the job's own events. `job` is the SQL of the job's id, `where` (if any)
// filters `from`, `data` is the SQL of the event's data. Its parameters, in order: ts_ms,
// type, data's, then from's and where's.
std::string job_event_insert(const std::string& job, const std::string& from,
                             const std::string& where = {}, const std::string& data = "?");

class PgStore final : public Store {
 public:
  explicit PgStore(std::unique_ptr<Db> db);
  ~PgStore() override;  // where FleetReads is whole (pg_store_agents.cpp)
  const char* backend() const override { return "postgresql"; }
  std::int64_t round_trips() const override { return db_->round_trips(); }

  Result<JobRecord> create_job(const NewJob& j, TimeMs now) override;
  Result<Submitted> submit_job(const Submission& s, TimeMs now) override;
  std::optional<JobRecord> get_job(std::int64_t id) override;
  std::vector<JobRecord> list_jobs(const JobFilter& f) override;
  std::vector<JobRecord> pending_jobs() override;
  Result<JobRecord> set_job_state(std::int64_t id, JobState s, const std::string& reason,
                                  TimeMs now, const std::string& by = {}) override;
  std::vector<Result<JobRecord>> set_job_states(const std::vector<JobStateChange>& changes,
                                                TimeMs now) override;
  std::optional<JobRecord> find_job_by_content_hash(const std::string& hash) override;
  std::optional<JobOrigin> job_origin(std::int64_t id) override;
  std::vector<JobOrigin> children_of(std::int64_t parent_job_id) override;
  int in_flight_jobs_of(const std::string& token_key) override;

  Result<Lease> grant_lease(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl_ms,
                            TimeMs now, const nlohmann::json& decision,
                            JobRecord* leased_job) override;
  std::vector<Result<GrantedLease>> grant_leases(const std::vector<LeaseGrant>& grants,
                                                 TimeMs ttl_ms, TimeMs now) override;
  Result<Lease> renew_lease(std::int64_t run_id, std::int64_t fencing_token, TimeMs ttl_ms,
                            TimeMs now) override;
  Result<IngestResult> append_run_events(std::int64_t run_id, std::int64_t fencing_token,
                                         const std::vector<Event>& events, TimeMs now,
                                         std::int64_t agent_id) override;
  std::vector<Result<FinishedRun>> finish_agent_runs(const std::vector<FinishCall>& calls,
                                                     TimeMs now) override;
  Result<FinishedRun> finish_agent_run(std::int64_t agent_id, std::int64_t run_id,
                                       std::int64_t fencing_token, const Verdict& v, TimeMs now,
                                       const AmendVerdict& amend) override;
  Result<JobRecord> hand_off_run(std::int64_t run_id, std::int64_t fencing_token,
                                 const std::string& reason, TimeMs now) override;
  Result<JobRecord> expire_run(std::int64_t run_id, const std::string& reason,
                               TimeMs now) override;
  std::vector<RunRecord> expired_runs(TimeMs now) override;
  std::optional<RunRecord> get_run(std::int64_t id) override;
  std::vector<RunRecord> runs_for_job(std::int64_t job_id) override;
  std::vector<RunRecord> running_runs() override;
  std::vector<RunRecord> finished_runs(int limit, std::int64_t before_id) override;

  Result<AgentRecord> enrol_agent(const NewAgent& a, TimeMs now) override;
  std::optional<AgentRecord> get_agent(std::int64_t id) override;
  std::vector<AgentRecord> list_agents(const AgentFilter& f = {}) override;
  std::int64_t count_agents(AgentState s) override;
  Result<AgentRecord> touch_agent(std::int64_t id, TimeMs now) override;
  Result<void> set_agent_state(std::int64_t id, AgentState s, TimeMs now) override;
  FleetView fleet_view() override;
  void read_fleet_view_with_next_commit() override;

  void put_region_block(const RegionBlock& b) override;
  std::vector<RegionBlock> region_blocks() override;
  void clear_region_block(const std::string& provider, const std::string& region,
                          const std::string& gpu_class) override;

  Event append_job_event(std::int64_t job_id, const std::string& type,
                         const nlohmann::json& data, TimeMs now) override;
  std::vector<Event> job_events(std::int64_t job_id, std::int64_t after_id, int limit) override;
  std::vector<Event> run_events(std::int64_t run_id, std::int64_t after_seq, int limit) override;
  std::vector<Event> events_after(std::int64_t after_id, int limit) override;

  Result<void> put_bundle(const std::string& hash, const std::string& body) override;
  std::optional<std::string> get_bundle(const std::string& hash) override;

  Result<Baseline> set_baseline(const Baseline& b, TimeMs now) override;
  std::optional<Baseline> current_baseline(const std::string& kernel, const std::string& case_name,
                                           const std::string& gpu_class, bool simulated) override;
  std::vector<Baseline> baseline_history(const std::string& kernel) override;
  Result<RegressionRecord> create_regression(const std::string& suite, const nlohmann::json& spec,
                                             TimeMs now) override;
  Result<void> add_regression_job(const RegressionJob& rj) override;
  std::vector<RegressionJob> regression_jobs(std::int64_t regression_id) override;
  std::int64_t regression_of_job(std::int64_t job_id) override;
  Result<RegressionRecord> update_regression(std::int64_t id, const std::string& state,
                                             const nlohmann::json& cells, TimeMs now) override;
  std::optional<RegressionRecord> get_regression(std::int64_t id) override;
  std::vector<RegressionRecord> list_regressions(int limit) override;

  Result<ApiToken> create_token(const ApiToken& t, TimeMs now) override;
  std::optional<ApiToken> find_token_by_hash(const std::string& hash) override;
  std::vector<ApiToken> list_tokens() override;
  Result<ApiToken> revoke_token(std::int64_t id, TimeMs now) override;
  Result<EnrolToken> create_enrol_token(const EnrolToken& t, TimeMs now) override;
  std::optional<EnrolToken> find_enrol_token_by_hash(const std::string& hash) override;
  std::vector<EnrolToken> list_enrol_tokens(int limit) override;
  Result<EnrolToken> revoke_enrol_token(std::int64_t id, TimeMs now) override;
  Result<void> append_audit(const std::string& user, const std::string& action,
                    const nlohmann::json& data, TimeMs now) override;
  std::vector<AuditRecord> audit_log(int limit) override;

 private:
  // fleet_view()'s three reads (shared/agents.inc): sent together, then taken.
  struct FleetReads;
  FleetReads send_fleet_reads();
  FleetView receive_fleet_reads(FleetReads& r);
  // The fleet view read behind the last COMMIT (read_fleet_view_with_next_commit), if nothing
  // reached the server since; else nothing.
  std::optional<FleetView> fleet_view_read_ahead();
  // finish_agent_run that reads the run, its job and its regression run first, then amends
  // the verdict and writes (shared/runs.inc).
  Result<FinishedRun> finish_reading_first(std::int64_t agent_id, std::int64_t run_id,
                                           std::int64_t fencing_token, const Verdict& given,
                                           TimeMs now, const AmendVerdict& amend);
  // A finish without an amendment, sent inside an open transaction: its reads and its
  // writes, guarded in the server by the checks kfleetd words the refusals with. The result
  // comes with receive_finish() after the round trip.
  struct SentFinish;
  SentFinish send_finish(const FinishCall& c, JobState job_state, TimeMs now);
  Result<FinishedRun> receive_finish(SentFinish& s, TimeMs now);

  // Helpers that run inside an open transaction and throw DbError on failure.
  std::optional<JobRecord> load_job(std::int64_t id);
  // The jobs with these ids as they are now (one query: one round trip); an id without a job
  // is absent.
  std::map<std::int64_t, JobRecord> load_jobs(const std::vector<std::int64_t>& ids);
  std::optional<RunRecord> load_run(std::int64_t id);
  std::optional<AgentRecord> load_agent(std::int64_t id);
  // submit_job's checks (shared/jobs.inc): the no-repeat read and the token's in-flight count,
  // sent together; then taken: true when they answer the submission without a write (`out`
  // says how).
  struct SubmitChecks;
  SubmitChecks send_submit_checks(const Submission& s);
  bool receive_submit_checks(SubmitChecks& c, const Submission& s, Submitted& out);
  // submit_job inside its transaction, once the arguments are checked (pg_store_jobs.cpp: one
  // round trip).
  // submitted: the job.submitted event's data.
  Result<Submitted> submit_checked(const Submission& s, const nlohmann::json& submitted,
                                   TimeMs now);
  // submit_checked's statement, sent: the job queued, or with Submission::grant the job and
  // its lease in one statement (its row then ends with the run's id and fencing token).
  Stmt send_submit(const Submission& s, const nlohmann::json& submitted, TimeMs now);
  Stmt send_submit_granted(const Submission& s, const nlohmann::json& submitted, TimeMs now);
  // finish_agent_run's write of the job: its verdict, no run, its final state and the
  // job.state event, one statement (queued).
  void finish_job_row(std::int64_t job_id, const std::string& verdict, bool simulated,
                      JobState s, const std::string& reason, TimeMs now);
  // Uses one enrolment of the token with this hash for instance_id, or says why not.
  Result<EnrolToken> use_enrol_token(const std::string& hash, const std::string& instance_id,
                                     TimeMs now);
  Event insert_job_event(std::int64_t job_id, const std::string& type,
                         const nlohmann::json& data, TimeMs now);
  // set_job_state's work, inside the caller's transaction; refusals come before any write.
  Result<JobRecord> change_job_state(std::int64_t id, JobState s, const std::string& reason,
                                     TimeMs now, const std::string& by);
  // Sets state and reason and writes the job.state event, in the caller's transaction.
  void write_job_state(std::int64_t job_id, JobState s, const std::string& reason, TimeMs now);
  // A grant (pg_store_runs.cpp): one statement that checks the lease rules in the server
  // (send_grant); for a refused one, its rows read afterwards (send_grant_reads) and the rules'
  // words (shared/lease_rules.hpp: the checks SQLite's grant makes in kfleetd).
  struct GrantReads {
    Stmt job, agent, host;  // the job, the agent, the running runs on the agent's host
  };
  GrantReads send_grant_reads(std::int64_t job_id, std::int64_t agent_id);
  // Sends one grant's statement (pg_store_runs.cpp): its row is the job as the grant left it
  // and the run's id and fencing token, or none when the lease rules refuse it.
  Stmt send_grant(const LeaseGrant& g, TimeMs expires, TimeMs now);
  // The lease and the job from the row of a grant's statement that was not refused.
  static GrantedLease read_grant(const Stmt& q, std::int64_t agent_id, TimeMs expires);
  // Why a grant that send_grant's statement refused was refused, read after its transaction.
  Error explain_refused_grant(const LeaseGrant& g);
  // Ends a running run (for cancel or error) and frees its agent if it still holds it.
  void end_run(const RunRecord& run, RunOutcome outcome, TimeMs now);
  void free_agent(std::int64_t agent_id, std::int64_t run_id, AgentState s, TimeMs now);
  Result<RunRecord> check_fenced(std::int64_t run_id, std::int64_t fencing_token);
  // The same check on a run already read (nullopt: there is none).
  // With agent_id (not 0): forbidden unless the run is that agent's, before the token.
  static Result<RunRecord> check_fenced(const std::optional<RunRecord>& run,
                                        std::int64_t run_id, std::int64_t fencing_token,
                                        std::int64_t agent_id = 0);
  // Why a bundle is refused: another body is stored under its hash.
  static Error bundle_clash(const std::string& hash);
  // put_bundle's work, inside the caller's transaction: stores the bundle, or finds it stored
  // with this body, or refuses another body under its hash.
  Result<void> store_bundle(const std::string& hash, const std::string& body);
  std::vector<JobRecord> query_jobs(Stmt& q);
  std::vector<RunRecord> query_runs(Stmt& q);
  std::vector<Event> query_events(Stmt& q);

  // Runs a read; a dropped connection is reopened and the read tried once more. Otherwise the
  // process exits with the database's message (die(): the signatures of reads cannot carry an
  // error).
  template <class F>
  auto or_die(const char* what, F&& f) -> decltype(f()) {
    for (int attempt = 0;; ++attempt) {
      try {
        db_->ensure_connected();
        return f();
      } catch (const DbError& e) {
        if (attempt == 0 && db_->broken()) continue;
        die(e, what);
      }
    }
  }

  std::unique_ptr<Db> db_;
  // fleet_view_read_ahead()'s reads (after db_: they go before it) and their round trip.
  std::unique_ptr<FleetReads> fleet_ahead_;
  std::int64_t fleet_ahead_trip_ = -1;
};

// The name shared/*.inc gives this backend's store.
using SqlStore = PgStore;

int latest_schema_version();
// The step that made who set a baseline and who cancelled a job fields of their own
// (baselines.set_by, jobs.cancelled_by).
inline constexpr int kAuditFieldsSchemaVersion = 3;
// The step that records where a job came from (job_origins: token, parent + change).
inline constexpr int kJobOriginsSchemaVersion = 5;
// The step that stores events a batch to a row (event_batches; `events` a view).
inline constexpr int kEventBatchesSchemaVersion = 10;
// The step that put a job's kernel.language on its row (jobs.language).
inline constexpr int kJobLanguageSchemaVersion = 13;
// Applies every step above the database's version in one transaction; refuses a database
// written by a newer kfleetd.
Result<void> migrate(Db& db);
Result<void> migrate_to(Db& db, int version);

// Column lists and row readers shared by the store's files (pg_records.cpp).
extern const char* const kJobColumns;
inline constexpr int kJobColumnCount = 25;  // kJobColumns' count: a row's next column's index
extern const char* const kRunColumns;
extern const char* const kAgentColumns;
extern const char* const kEventColumns;
JobRecord read_job(const Stmt& q);
RunRecord read_run(const Stmt& q);
AgentRecord read_agent(const Stmt& q);
Event read_event(const Stmt& q);

}  // namespace kfleet::store::pg
