// One kfleetd per SQLite file: the second is refused and told who holds the file; the lock
// goes with its holder, also when the holder is killed with -9.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "kfleet/store/db_lock.hpp"
#include "temp_dir.hpp"

namespace kfleet::store {
namespace {

TEST(DbLock, SecondHolderIsRefusedAndToldWhoHoldsIt) {
  auto db = testing::make_temp_dir() + "/kfleet.db";
  auto first = DbLock::acquire(db);
  ASSERT_TRUE(first) << first.error().message;
  first->set_serving("http://127.0.0.1:8470");

  auto second = DbLock::acquire(db);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::conflict);
  const auto& msg = second.error().message;
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
  EXPECT_NE(msg.find("pid " + std::to_string(::getpid())), std::string::npos) << msg;
  EXPECT_NE(msg.find("http://127.0.0.1:8470"), std::string::npos) << msg;
  EXPECT_NE(msg.find("another --db"), std::string::npos) << msg;
}

TEST(DbLock, ReleasedWhenTheHolderGoes) {
  auto db = testing::make_temp_dir() + "/kfleet.db";
  {
    auto first = DbLock::acquire(db);
    ASSERT_TRUE(first);
  }
  auto again = DbLock::acquire(db);
  EXPECT_TRUE(again) << again.error().message;
}

TEST(DbLock, MovedLockStaysHeld) {
  auto db = testing::make_temp_dir() + "/kfleet.db";
  auto first = DbLock::acquire(db);
  ASSERT_TRUE(first);
  DbLock moved = std::move(*first);
  EXPECT_FALSE(DbLock::acquire(db));
}

TEST(DbLock, AHolderKilledWithSigkillDoesNotBlockARestart) {
  auto db = testing::make_temp_dir() + "/kfleet.db";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto held = DbLock::acquire(db);
    char c = held ? '1' : '0';
    [[maybe_unused]] auto n = ::write(ready[1], &c, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(c, '1');

  auto refused = DbLock::acquire(db);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("pid " + std::to_string(child)), std::string::npos)
      << refused.error().message;

  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  auto after = DbLock::acquire(db);
  EXPECT_TRUE(after) << after.error().message;
}

TEST(DbLock, UnwritableDirectoryIsAClearError) {
  auto r = DbLock::acquire("/nonexistent-kfleet-dir/kfleet.db");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::unavailable);
  EXPECT_NE(r.error().message.find("/nonexistent-kfleet-dir/kfleet.db.lock"), std::string::npos);
}

}  // namespace
}  // namespace kfleet::store
