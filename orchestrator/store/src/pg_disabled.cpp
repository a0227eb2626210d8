// The PostgreSQL store in a build without libpq (-DKFLEET_WITH_POSTGRESQL=OFF).
#include "kfleet/store/postgres.hpp"

namespace kfleet::store {

bool postgres_supported() { return false; }

Result<StorePtr> open_postgres_store(const PostgresOptions&) {
  return make_error(Errc::invalid_argument,
                    "this kfleetd was built without PostgreSQL support (libpq-dev was missing or "
                    "-DKFLEET_WITH_POSTGRESQL=OFF); rebuild with libpq-dev installed, or use a "
                    "SQLite file for --db");
}

}  // namespace kfleet::store
