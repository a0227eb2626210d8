#pragma once
// SQL straight against a test's scratch PostgreSQL, for the end-to-end tests that check what
// kfleetd left in the database.
#include <libpq-fe.h>

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace kfleet::e2e {

// Rows of one statement, as text (none for a command); a failed connection or statement fails
// the test that ran it.
inline std::vector<std::vector<std::string>> pg_sql(const std::string& url, const std::string& q) {
  std::vector<std::vector<std::string>> out;
  PGconn* c = PQconnectdb(url.c_str());
  EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  PGresult* r = PQexec(c, q.c_str());
  const auto st = PQresultStatus(r);
  EXPECT_TRUE(st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
      << q << ": " << PQresultErrorMessage(r);
  for (int i = 0; st == PGRES_TUPLES_OK && i < PQntuples(r); ++i) {
    std::vector<std::string> row;
    for (int j = 0; j < PQnfields(r); ++j) row.emplace_back(PQgetvalue(r, i, j));
    out.push_back(std::move(row));
  }
  PQclear(r);
  PQfinish(c);
  return out;
}

// The first column of the first row ("" when there is none).
inline std::string pg_one(const std::string& url, const std::string& q) {
  auto rows = pg_sql(url, q);
  return rows.empty() || rows[0].empty() ? "" : rows[0][0];
}

}  // namespace kfleet::e2e
