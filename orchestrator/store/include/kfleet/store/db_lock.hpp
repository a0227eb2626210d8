#pragma once
// One kfleetd per SQLite file. Each kfleetd schedules from its own in-memory queue, so two on
// one file would lease the same jobs twice. DbLock holds an exclusive flock(2) on `<db>.lock`
// for the life of the process and writes who holds it (pid, host, start time, URL) into the
// file, so a second kfleetd can refuse to start and name the one in the way. The kernel drops
// the lock when its holder dies, kill -9 included, so a crashed kfleetd never blocks a restart.
#include <string>

#include "kfleet/common/result.hpp"

namespace kfleet::store {

class DbLock {
 public:
  // Takes the lock for `db_path` or fails with Errc::conflict, naming the current holder.
  static Result<DbLock> acquire(const std::string& db_path);

  DbLock(DbLock&& o) noexcept;
  DbLock& operator=(DbLock&& o) noexcept;
  DbLock(const DbLock&) = delete;
  DbLock& operator=(const DbLock&) = delete;
  ~DbLock();  // releases the lock (the lock file stays; it is not a sign of a live holder)

  // Adds what the holder serves (its URL) to the lock file, for the next one's message.
  void set_serving(const std::string& url);
  const std::string& path() const { return path_; }

 private:
  DbLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void write_holder(const std::string& url);
  int fd_ = -1;
  std::string path_;
};

}  // namespace kfleet::store
