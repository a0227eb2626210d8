#pragma once
// The SQLite backend of kfleet::store::Store. One connection, used from the control-plane
// thread only; every mutating method is one BEGIN IMMEDIATE transaction.
#include <map>
#include <memory>
#include <string>

#include "kfleet/store/store.hpp"
#include "sqlite_db.hpp"

namespace kfleet::store::sqlite {

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}
  const char* backend() const override { return "sqlite"; }

#include "shared/store_overrides.inc"

 private:
  // Nothing is read ahead on SQLite (see Store::read_fleet_view_with_next_commit).
  std::optional<FleetView> fleet_view_read_ahead() { return std::nullopt; }

  // submit_checked's writes, its last step: the job, its origin and its job.submitted event.
  JobRecord insert_job(const NewJob& j, const nlohmann::json& submitted, TimeMs now);
  // grant_lease's work, inside the caller's transaction; refusals come before any write.
  Result<Lease> grant_in_transaction(std::int64_t job_id, std::int64_t agent_id, TimeMs ttl_ms,
                                     TimeMs now, const nlohmann::json& decision,
                                     JobRecord* leased_job);
#include "shared/store_private.inc"

  std::unique_ptr<Db> db_;
};

// The name shared/*.inc gives this backend's store.
using SqlStore = SqliteStore;

#include "shared/record_readers.inc"

}  // namespace kfleet::store::sqlite
