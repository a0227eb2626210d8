#include "kfleet/store/db_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

namespace kfleet::store {
namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (off_t off = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  return out;
}

std::string describe_holder(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return "another kfleetd";
  std::string d = "kfleetd pid " + std::to_string(j.value("pid", 0)) + " on host " +
                  j.value("host", std::string("?"));
  if (auto url = j.value("url", std::string()); !url.empty()) d += ", serving " + url;
  if (auto since = j.value("since", std::string()); !since.empty()) d += ", since " + since;
  return d;
}

std::string now_utc() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%FT%TZ", &tm);
  return buf;
}

}  // namespace

Result<DbLock> DbLock::acquire(const std::string& db_path) {
  std::string path = db_path + ".lock";
  // O_CLOEXEC: agents the simulated cloud starts must not inherit (and so keep) the lock.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error(Errc::unavailable, "cannot open the lock file " + path + ": " +
                                             std::strerror(errno) +
                                             " (kfleetd needs write access beside --db)");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::string holder = err == EWOULDBLOCK ? describe_holder(read_all(fd)) : "";
    ::close(fd);
    if (err != EWOULDBLOCK)
      return make_error(Errc::unavailable, "cannot lock " + path + ": " + std::strerror(err));
    return make_error(Errc::conflict,
                      "the database " + db_path + " is in use by " + holder +
                          ": two kfleetd on one SQLite file would lease the same jobs twice; "
                          "stop that one, or give this one another --db");
  }
  DbLock lock(fd, std::move(path));
  lock.write_holder("");
  return lock;
}

DbLock::DbLock(DbLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}

DbLock& DbLock::operator=(DbLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
  }
  return *this;
}

DbLock::~DbLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor drops the flock
}

void DbLock::set_serving(const std::string& url) { write_holder(url); }

void DbLock::write_holder(const std::string& url) {
  if (fd_ < 0) return;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  nlohmann::json j{{"pid", static_cast<long>(::getpid())}, {"host", host}, {"since", now_utc()}};
  if (!url.empty()) j["url"] = url;
  std::string text = j.dump() + "\n";
  // Best effort: the lock itself is the flock; the text only makes the refusal readable.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] auto n = ::pwrite(fd_, text.data(), text.size(), 0);
  }
}

}  // namespace kfleet::store
