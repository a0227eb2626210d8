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

struct PostgresLeader::Impl {};
PostgresLeader::PostgresLeader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PostgresLeader::~PostgresLeader() = default;
Result<std::unique_ptr<PostgresLeader>> PostgresLeader::connect(const std::string&) {
  return make_error(Errc::invalid_argument, "this build has no PostgreSQL support");
}
Result<bool> PostgresLeader::try_acquire(TimeMs) { return false; }
Result<void> PostgresLeader::set_url(const std::string&) { return ok_result(); }
Result<LeaderInfo> PostgresLeader::current() { return LeaderInfo{}; }
bool PostgresLeader::still_leader() { return false; }

}  // namespace kfleet::store
