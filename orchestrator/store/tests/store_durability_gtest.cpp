// kill -9 in the middle of work loses nothing a store call acknowledged, and leaves the
// database consistent. A child process does the work and reports each acknowledged call on a
// pipe; a thread in it SIGKILLs the process at an arbitrary point while writes are in flight.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include <sqlite3.h>

#include "kfleet/store/store.hpp"
#include "temp_dir.hpp"

namespace kfleet::store::testing {
namespace {

constexpr int kBatch = 50;

// The child: never returns. Writes 'J' when the job is committed, then 'E' per event batch.
[[noreturn]] void child_work(const std::string& path, int ack_fd, int kill_after_us) {
  auto s = open_sqlite_store({path, false});
  if (!s.ok()) _exit(3);
  NewJob nj;
  nj.name = "crash";
  auto job = (*s)->create_job(nj, 1);
  if (!job.ok()) _exit(4);
  if (write(ack_fd, "J", 1) != 1) _exit(5);
  NewAgent na;
  na.name = "a";
  auto agent = (*s)->enrol_agent(na, 2);
  auto lease = (*s)->grant_lease(job->id, agent->id, 1'000'000, 3);
  if (!lease.ok()) _exit(6);
  // The killer fires while the loop below is busy writing: wherever it lands, nothing
  // acknowledged may be lost.
  std::thread([kill_after_us] {
    std::this_thread::sleep_for(std::chrono::microseconds(kill_after_us));
    kill(getpid(), SIGKILL);
  }).detach();
  for (std::int64_t next = 1;; next += kBatch) {
    std::vector<Event> batch;
    for (int i = 0; i < kBatch; ++i) {
      Event e;
      e.seq = next + i;
      e.type = "log";
      e.data = {{"text", std::string(200, 'x')}};
      batch.push_back(std::move(e));
    }
    auto r = (*s)->append_run_events(lease->run_id, lease->fencing_token, batch, 4);
    if (!r.ok()) _exit(7);
    if (write(ack_fd, "E", 1) != 1) _exit(8);
  }
}

TEST(SqliteDurability, KillNineLosesNothingAcknowledged) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 4; ++round) {
    const std::string path = make_temp_dir() + "/crash.db";
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const int kill_after_us = 20'000 + static_cast<int>(rng() % 80'000);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      child_work(path, fds[1], kill_after_us);
    }
    close(fds[1]);
    int jobs_acked = 0, batches_acked = 0;
    char buf[256];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      for (ssize_t i = 0; i < n; ++i) (buf[i] == 'J' ? jobs_acked : batches_acked)++;
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the child should die by SIGKILL, exit status " << status;
    ASSERT_EQ(jobs_acked, 1) << "the child died before acknowledging its job; raise the delay";

    auto s = open_sqlite_store({path, false});
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto jobs = (*s)->list_jobs({});
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(jobs[0].name, "crash");
    auto runs = (*s)->runs_for_job(jobs[0].id);
    if (batches_acked > 0) {
      ASSERT_EQ(runs.size(), 1u);
      const std::int64_t acked_events = static_cast<std::int64_t>(batches_acked) * kBatch;
      EXPECT_GE(runs[0].events_contiguous, acked_events);
      auto evs = (*s)->run_events(runs[0].id, 0, 1'000'000);
      ASSERT_GE(static_cast<std::int64_t>(evs.size()), acked_events);
      // Whole batches or nothing: a transaction never half-commits.
      EXPECT_EQ(evs.size() % kBatch, 0u);
      EXPECT_EQ(static_cast<std::int64_t>(evs.size()), runs[0].events_contiguous);
    }
    s->reset();

    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)), "ok");
    sqlite3_finalize(q);
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA foreign_key_check", -1, &q, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(q), SQLITE_DONE) << "a row violates a foreign key";
    sqlite3_finalize(q);
    sqlite3_close(db);
  }
}

}  // namespace
}  // namespace kfleet::store::testing
