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

#include "kfleet/common/result.hpp"

namespace kfleet::store {

class ScratchPostgres {
 public:
  static Result<std::unique_ptr<ScratchPostgres>> start();
  ~ScratchPostgres();
  ScratchPostgres(const ScratchPostgres&) = delete;
  ScratchPostgres& operator=(const ScratchPostgres&) = delete;

  // A libpq URL for `database` on this server (as its superuser, over the socket).
  std::string url(const std::string& database) const;
  // Creates a fresh database ("" = a unique name) and returns its URL.
  Result<std::string> create_database(const std::string& name = "");
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }
  // The server's log (for failure messages).
  std::string log_tail(std::size_t max_bytes = 4000) const;

 private:
  ScratchPostgres() = default;
  std::string dir_, bindir_;
  pid_t pid_ = -1;
  int databases_ = 0;
};

}  // namespace kfleet::store
