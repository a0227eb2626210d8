#include "kfleet/store/pg_scratch.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <libpq-fe.h>

#ifndef KFLEET_PG_BINDIR_DEFAULT
#define KFLEET_PG_BINDIR_DEFAULT ""
#endif

namespace kfleet::store {
namespace fs = std::filesystem;

namespace {

struct RunAs {
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};

// Forks and execs argv with stdout/stderr appended to `log`, as `who` when dropping root.
// The server child gets SIGQUIT (immediate shutdown) if its parent dies first.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log, const RunAs& who,
            bool die_with_parent) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // child: only async-signal-safe calls from here on
  if (who.drop) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(who.gid) != 0 || ::setuid(who.uid) != 0)
      ::_exit(126);
  }
  if (die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
    if (::getppid() != parent) ::_exit(1);
  }
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
  }
  int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, 0);
  ::execv(args[0], args.data());
  ::_exit(127);
}

std::string read_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > max_bytes) s = "..." + s.substr(s.size() - max_bytes);
  return s;
}

}  // namespace

Result<std::unique_ptr<ScratchPostgres>> ScratchPostgres::start(const std::vector<std::string>& settings) {
  std::string bindir = KFLEET_PG_BINDIR_DEFAULT;
  if (const char* e = std::getenv("KFLEET_PG_BINDIR"); e && *e) bindir = e;
  if (bindir.empty() || !fs::exists(fs::path(bindir) / "initdb") ||
      !fs::exists(fs::path(bindir) / "postgres")) {
    return make_error(Errc::unavailable,
                      "PostgreSQL's initdb and postgres were not found" +
                          (bindir.empty() ? std::string() : " in " + bindir) +
                          ": install the server (apt install postgresql, or "
                          "scripts/install-deps.sh) or set KFLEET_PG_BINDIR to its bin directory");
  }
  RunAs who;
  if (::geteuid() == 0) {
    const char* name = std::getenv("KFLEET_PG_USER");
    who.name = (name && *name) ? name : "nobody";
    struct passwd* pw = ::getpwnam(who.name.c_str());
    if (!pw) {
      return make_error(Errc::unavailable,
                        "running as root, and there is no user '" + who.name +
                            "' to run PostgreSQL as (initdb refuses root): set KFLEET_PG_USER "
                            "to an unprivileged user");
    }
    who.drop = true;
    who.uid = pw->pw_uid;
    who.gid = pw->pw_gid;
  }

  std::unique_ptr<ScratchPostgres> s(new ScratchPostgres());
  s->bindir_ = bindir;
  // The temporary directory: $TMPDIR unless the server's user could not reach it (run as
  // root, every directory on the way must be searchable by others) or the unix socket's path
  // would be too long (about 100 bytes); /tmp then.
  fs::path base = fs::temp_directory_path();
  auto reachable = [&](const fs::path& p) {
    if (!who.drop) return true;
    fs::path cur;
    for (const auto& part : p) {
      cur /= part;
      struct stat st{};
      if (::stat(cur.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
    }
    return true;
  };
  if (!reachable(base) || base.string().size() > 60) base = "/tmp";
  std::string tmpl = (base / "kfleet-pg-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    return make_error(Errc::unavailable, "cannot create a temporary directory in " +
                                             base.string());
  s->dir_ = tmpl;
  if (who.drop && ::chown(s->dir_.c_str(), who.uid, who.gid) != 0)
    return make_error(Errc::unavailable, "cannot hand " + s->dir_ + " to user " + who.name);

  const std::string data = s->dir_ + "/data";
  const std::string log = s->dir_ + "/postgres.log";
  auto wait_exit = [](pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  };
  {
    pid_t pid = spawn({bindir + "/initdb", "-D", data, "-U", "kfleet", "-A", "trust", "-E",
                       "UTF8", "--locale=C", "-N", "--no-instructions"},
                      log, who, false);
    if (pid < 0) return make_error(Errc::unavailable, "cannot fork initdb");
    int status = wait_exit(pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return make_error(Errc::unavailable,
                        "initdb failed (status " + std::to_string(status) + ") in " + s->dir_ +
                            (who.drop ? " as user " + who.name : std::string()) + ": " +
                            read_tail(log, 2000));
    }
  }
  std::vector<std::string> argv = {bindir + "/postgres", "-D", data, "-k", s->dir_, "-c",
                                   "listen_addresses=", "-F", "-c", "max_connections=200", "-c",
                                   "shared_buffers=64MB", "-c", "log_min_messages=warning", "-c",
                                   "max_locks_per_transaction=256"};
  for (const auto& kv : settings) argv.insert(argv.end(), {"-c", kv});
  s->pid_ = spawn(argv, log, who, true);
  if (s->pid_ < 0) return make_error(Errc::unavailable, "cannot fork postgres");
  const std::string ping = "host=" + s->dir_ + " user=kfleet dbname=postgres";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (PQping(ping.c_str()) != PQPING_OK) {
    int status = 0;
    if (::waitpid(s->pid_, &status, WNOHANG) == s->pid_) {
      s->pid_ = -1;
      return make_error(Errc::unavailable, "postgres exited at start: " + read_tail(log, 2000));
    }
    if (std::chrono::steady_clock::now() > deadline)
      return make_error(Errc::unavailable,
                        "postgres did not accept connections within 60 s: " + read_tail(log, 2000));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return s;
}

ScratchPostgres::~ScratchPostgres() {
  if (pid_ > 0) {
    ::kill(pid_, SIGINT);  // fast shutdown
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string ScratchPostgres::url(const std::string& database) const {
  return "postgresql:///" + database + "?host=" + dir_ + "&user=kfleet";
}

Result<std::string> ScratchPostgres::create_database(const std::string& name) {
  const std::string db = name.empty() ? "kfleet_" + std::to_string(++databases_) : name;
  PGconn* c = PQconnectdb(("host=" + dir_ + " user=kfleet dbname=postgres").c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    return make_error(Errc::unavailable, "cannot connect to the scratch server: " + msg);
  }
  PGresult* r = PQexec(c, ("CREATE DATABASE \"" + db + "\"").c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  std::string msg = ok ? "" : PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  if (!ok) return make_error(Errc::internal, "CREATE DATABASE " + db + ": " + msg);
  return url(db);
}

Result<std::string> ScratchPostgres::query(const std::string& database,
                                           const std::string& sql) const {
  PGconn* c = PQconnectdb(("host=" + dir_ + " user=kfleet dbname=" + database).c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    return make_error(Errc::unavailable, "cannot connect to the scratch server: " + msg);
  }
  PGresult* r = PQexec(c, sql.c_str());
  const auto st = PQresultStatus(r);
  std::string out;
  if (st == PGRES_TUPLES_OK) {
    for (int row = 0; row < PQntuples(r); ++row) {
      for (int col = 0; col < PQnfields(r); ++col) {
        if (col) out += " | ";
        out += PQgetvalue(r, row, col);
      }
      out += "\n";
    }
  }
  std::string msg = (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) ? "" : PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  if (!msg.empty()) return make_error(Errc::internal, sql.substr(0, 60) + ": " + msg);
  return out;
}

std::string ScratchPostgres::log_tail(std::size_t max_bytes) const {
  return read_tail(dir_ + "/postgres.log", max_bytes);
}

}  // namespace kfleet::store
