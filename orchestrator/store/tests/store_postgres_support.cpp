#include "store_postgres_support.hpp"

#include "../src/pg_store.hpp"

#include <libpq-fe.h>

#include <gtest/gtest.h>

namespace kfleet::store::testing {

std::unique_ptr<ScratchPostgres>& server() {
  static std::unique_ptr<ScratchPostgres> s;
  return s;
}

std::string fresh_database() {
  if (!server()) {
    auto s = ScratchPostgres::start();
    if (!s.ok()) {
      ADD_FAILURE() << "cannot start a PostgreSQL server for the tests: " << s.error().message;
      return "";
    }
    server() = std::move(*s);
  }
  auto url = server()->create_database();
  if (!url.ok()) {
    ADD_FAILURE() << url.error().message;
    return "";
  }
  return *url;
}

std::string database_at_schema(int version) {
  const std::string url = fresh_database();
  if (url.empty()) return "";
  auto db = pg::Db::open(url);
  if (!db.ok()) {
    ADD_FAILURE() << db.error().message;
    return "";
  }
  if (auto r = pg::migrate_to(**db, version); !r.ok()) {
    ADD_FAILURE() << "migrating to schema " << version << ": " << r.error().message;
    return "";
  }
  return url;
}

StorePtr open_or_fail(const std::string& url) {
  if (url.empty()) return nullptr;
  auto r = open_postgres_store({url});
  if (!r.ok()) {
    ADD_FAILURE() << r.error().message << "\nserver log:\n"
                  << (server() ? server()->log_tail() : "");
    return nullptr;
  }
  return std::move(*r);
}

LeaderStore open_as_leader() {
  LeaderStore out;
  const std::string url = fresh_database();
  if (url.empty()) return out;
  auto leader = PostgresLeader::connect(url);
  if (!leader.ok()) {
    ADD_FAILURE() << leader.error().message;
    return out;
  }
  auto held = (*leader)->try_acquire(1);
  if (!held.ok() || !*held) {
    ADD_FAILURE() << "could not take the leadership of a fresh database";
    return out;
  }
  auto opened = open_postgres_store({url, (*leader)->epoch()});
  if (!opened.ok()) {
    ADD_FAILURE() << opened.error().message;
    return out;
  }
  out.leader = std::move(*leader);
  out.store = std::move(*opened);
  out.url = url;
  return out;
}

std::string query_one(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  PGresult* r = PQexec(c, sql.c_str());
  std::string out;
  const auto st = PQresultStatus(r);
  if (st == PGRES_TUPLES_OK && PQntuples(r) > 0)
    out = PQgetvalue(r, 0, 0);
  else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
    ADD_FAILURE() << "query failed: " << sql << ": " << PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  return out;
}

NewJob a_job(const std::string& name) {
  NewJob j;
  j.name = name;
  j.content_hash = "sha256:" + name;
  j.regions = {"r1"};
  j.spec = nlohmann::json{{"name", name}};
  return j;
}

NewAgent an_agent(const std::string& name) {
  NewAgent a;
  a.name = name;
  a.backend = "simulated";
  return a;
}

}  // namespace kfleet::store::testing
