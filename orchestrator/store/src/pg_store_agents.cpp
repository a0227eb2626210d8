// Agents and region blocks. The code is shared/agents.inc, which both backends compile.
#include <string>

#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/agents.inc"

PgStore::PgStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}
PgStore::~PgStore() = default;

void PgStore::read_fleet_view_with_next_commit() {
  db_->read_after_next_commit([this] {
    fleet_ahead_ = std::make_unique<FleetReads>(send_fleet_reads());
    fleet_ahead_trip_ = db_->round_trips() + 1;  // they go with the next one
  });
}

std::optional<Store::FleetView> PgStore::fleet_view_read_ahead() {
  auto r = std::move(fleet_ahead_);
  // Anything that reached the server since (a write, or the failed transaction's ROLLBACK)
  // may have changed the fleet: read it again.
  if (!r || db_->round_trips() != fleet_ahead_trip_ || !r->agents.answered() ||
      !r->runs.answered() || !r->blocks.answered())
    return std::nullopt;
  return receive_fleet_reads(*r);
}

}  // namespace kfleet::store::pg
