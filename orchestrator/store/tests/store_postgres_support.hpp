#pragma once
// What the PostgreSQL store tests share: one scratch server for the whole test process (initdb
// takes seconds), a fresh database per test, stores opened on it (plain, or as the leader),
// and one-statement queries on a connection of the test's own.
#include <memory>
#include <string>

#include "kfleet/store/pg_scratch.hpp"
#include "kfleet/store/postgres.hpp"
#include "kfleet/store/store.hpp"

namespace kfleet::store::testing {

// The scratch server (started by the first fresh_database(); stopped at the end of the run).
std::unique_ptr<ScratchPostgres>& server();

// A fresh database on the scratch server (started on first use); "" on failure (recorded).
std::string fresh_database();

// A fresh database migrated only up to schema `version`, to write rows as an older kfleetd
// did; "" on failure (recorded).
std::string database_at_schema(int version);

// A store on `url`, or null after a recorded failure (with the server's log).
StorePtr open_or_fail(const std::string& url);

// A fresh database and a store on it that writes as its leader: the leader holds the
// leadership lock as long as it lives. All empty after a failure (reported).
struct LeaderStore {
  std::unique_ptr<PostgresLeader> leader;
  StorePtr store;
  std::string url;  // the database's
};
LeaderStore open_as_leader();

// One SQL text (several statements: one transaction) on its own connection; the first column
// of the first row of the last result ("" if none). A failure is recorded.
std::string query_one(const std::string& url, const std::string& sql);

NewJob a_job(const std::string& name);
NewAgent an_agent(const std::string& name);

}  // namespace kfleet::store::testing
