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
  std::int64_t wait_ns() const override { return db_->wait_ns(); }
  std::vector<StatementWait> statement_waits() const override;

#include "shared/store_overrides.inc"
  // PostgreSQL batches these into fewer round trips than the Store defaults do.
  std::vector<Result<GrantedLease>> grant_leases(const std::vector<LeaseGrant>& grants,
                                                 TimeMs ttl_ms, TimeMs now) override;
  std::vector<Result<FinishedRun>> finish_agent_runs(const std::vector<FinishCall>& calls,
                                                     TimeMs now) override;
  void read_fleet_view_with_next_commit() override;

 private:
  // The fleet view read behind the last COMMIT (read_fleet_view_with_next_commit), if nothing
  // reached the server since; else nothing.
  std::optional<FleetView> fleet_view_read_ahead();
  // A finish without an amendment, sent inside an open transaction: its reads and its
  // writes, guarded in the server by the checks kfleetd words the refusals with. The result
  // comes with receive_finish() after the round trip.
  struct SentFinish;
  SentFinish send_finish(const FinishCall& c, JobState job_state, TimeMs now);
  Result<FinishedRun> receive_finish(SentFinish& s, TimeMs now);

  // submit_checked's statement, sent: the job queued, or with Submission::grant the job and
  // its lease in one statement (its row then ends with the run's id and fencing token).
  Stmt send_submit(const Submission& s, const nlohmann::json& submitted, TimeMs now);
  Stmt send_submit_granted(const Submission& s, const nlohmann::json& submitted, TimeMs now);
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
#include "shared/store_private.inc"

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

#include "shared/record_readers.inc"
inline constexpr int kJobColumnCount = 25;  // kJobColumns' count: a row's next column's index

}  // namespace kfleet::store::pg
