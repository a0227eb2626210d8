#pragma once
// A throwaway PostgreSQL server for tests and benchmarks: `initdb` into a fresh temporary
// directory and `postgres` listening only on a unix socket inside it (no TCP port, so nothing
// is shared with anyone). initdb refuses to run as root, so under root the server runs as an
// unprivileged user (KFLEET_PG_USER, default `nobody`). The destructor stops the server and
// removes the directory. Needs Debian's `postgresql` package (scripts/install-deps.sh);
// KFLEET_PG_BINDIR overrides where initdb and postgres are looked for.
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet::store {

class ScratchPostgres {
 public:
  // `settings` are extra server settings ("name=value", each passed as -c), e.g.
  // shared_preload_libraries=pg_stat_statements for a bench's profile.
  static Result<std::unique_ptr<ScratchPostgres>> start(const std::vector<std::string>& settings = {});
  ~ScratchPostgres();
  ScratchPostgres(const ScratchPostgres&) = delete;
  ScratchPostgres& operator=(const ScratchPostgres&) = delete;

  // A libpq URL for `database` on this server (as its superuser, over the socket).
  std::string url(const std::string& database) const;
  // Creates a fresh database ("" = a unique name) and returns its URL.
  Result<std::string> create_database(const std::string& name = "");
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }
  // Runs one statement on `database` and returns its rows, a line each, fields separated by
  // " | " (for a bench's profile and for tests; not for anything a user reaches).
  Result<std::string> query(const std::string& database, const std::string& sql) const;
  // The server's log (for failure messages).
  std::string log_tail(std::size_t max_bytes = 4000) const;

 private:
  ScratchPostgres() = default;
  std::string dir_, bindir_;
  pid_t pid_ = -1;
  int databases_ = 0;
};

}  // namespace kfleet::store
