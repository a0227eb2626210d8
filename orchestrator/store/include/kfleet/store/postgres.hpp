#pragma once
// The PostgreSQL backend of kfleet::store::Store (libpq). It passes the same contract suite as
// SQLite. Every mutating call is one transaction that first takes a transaction-scoped
// advisory lock, so any number of connections (several kfleetd on one database) write one
// after another and event ids stay gap-free and in commit order.
#include <string>

#include "kfleet/store/store.hpp"

namespace kfleet::store {

struct PostgresOptions {
  // A libpq URL or connection string: postgresql://user:pass@host:5432/kfleet,
  // postgresql:///kfleet?host=/run/postgresql (a unix socket directory), ...
  std::string url;
};

// True for "postgresql://..." and "postgres://..." (what --db takes for this backend).
bool is_postgres_url(const std::string& db);
// The URL as it may be logged: a password in it is replaced by ***.
std::string redact_postgres_url(const std::string& url);
// True when the URL carries a password (which then shows in `ps`; prefer ~/.pgpass).
bool postgres_url_has_password(const std::string& url);
// False when this build has no libpq (configured with -DKFLEET_WITH_POSTGRESQL=OFF).
bool postgres_supported();
// Connects and migrates the schema (refusing one newer than this build knows).
Result<StorePtr> open_postgres_store(const PostgresOptions& o);

}  // namespace kfleet::store
