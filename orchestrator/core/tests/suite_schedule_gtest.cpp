// Scheduled suites (kfleetd --suite): the real asio timer firing on a cron minute, each fire
// re-reading the suite from disk, no double fire, and a suite that became unreadable logged and
// skipped without stopping the schedule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "kfleet/core/control_plane.hpp"
#include "kfleet/core/suite_schedule.hpp"
#include "kfleet/provision/provisioner.hpp"

namespace kfleet::core {
namespace {
namespace fs = std::filesystem;

// Real time shifted by a fixed offset: the timer waits real milliseconds, and what it reads
// when it wakes is the shifted wall clock, so a test can stand just before a cron minute.
class OffsetClock final : public Clock {
 public:
  explicit OffsetClock(TimeMs offset) : offset_(offset) {}
  TimeMs now_ms() const override { return SystemClock().now_ms() + offset_; }

 private:
  TimeMs offset_;
};

struct Files {
  fs::path dir = fs::temp_directory_path() / ("kfleet-suite-sched-" + std::to_string(::getpid()));
  Files() {
    fs::create_directories(dir);
    std::ofstream(dir / "k.cu") << "// kernel\n";
    std::ofstream(dir / "job.yaml") << "name: sched/attn\ncampaign: sched\ntarget: {gpu: L4}\n"
                                       "kernel: {family: attention, language: cuda, sources: [k.cu]}\n";
    write_suite("every-minute", "* * * * *");
  }
  ~Files() { fs::remove_all(dir); }
  void write_suite(const std::string& name, const std::string& cron) {
    std::ofstream(dir / "suite.yaml") << "suite: " << name << "\njobs: [job.yaml]\non: {gpus: [L4]}\n"
                                      << "compare_to: baseline\nschedule: \"" << cron << "\"\n";
  }
  std::string suite() const { return (dir / "suite.yaml").string(); }
};

struct SchedulePlane {
  boost::asio::io_context io;
  std::unique_ptr<store::Store> st;
  provision::ProvisionerPtr prov = provision::make_static_provisioner();
  std::unique_ptr<ControlPlane> cp;
  explicit SchedulePlane(ClockPtr clock) {
    auto s = store::open_sqlite_store({":memory:"});
    EXPECT_TRUE(s.ok());
    st = std::move(*s);
    Config cfg;
    cfg.enrol_token = "e";
    cp = std::make_unique<ControlPlane>(io.get_executor(), *st, std::move(clock), *prov, cfg);
  }
};

TEST(SuiteSchedule, TheTimerStartsTheSuiteOnItsMinuteAndOnlyOnce) {
  Files f;
  // Stand 400 ms before a whole minute of the shifted clock.
  const TimeMs real = SystemClock().now_ms();
  const TimeMs target_minute = (real / 60'000 + 10) * 60'000;
  auto clock = std::make_shared<OffsetClock>(target_minute - 400 - real);
  SchedulePlane p(clock);
  SuiteSchedule sched(p.io.get_executor(), *p.cp);
  ASSERT_TRUE(sched.add(f.suite()).ok());
  EXPECT_EQ(sched.next_fire_ms(), target_minute);
  sched.start();
  p.io.run_for(std::chrono::milliseconds(150));
  EXPECT_TRUE(p.st->list_regressions(10).empty()) << "fired before its minute";
  // Due 250 ms from here; a loaded CI machine gets a few seconds of slack.
  for (int i = 0; i < 50 && p.st->list_regressions(10).empty(); ++i)
    p.io.run_for(std::chrono::milliseconds(100));
  auto runs = p.st->list_regressions(10);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].suite, "every-minute");
  EXPECT_EQ(sched.next_fire_ms(), target_minute + 60'000);  // re-armed for the next minute
  EXPECT_EQ(p.st->list_jobs({}).size(), 1u);           // one job x one GPU class
  sched.stop();
  p.io.run_for(std::chrono::milliseconds(50));
  EXPECT_EQ(p.st->list_regressions(10).size(), 1u);
}

TEST(SuiteSchedule, EachFireRereadsTheSuiteAndABrokenOneIsSkippedNotFatal) {
  Files f;
  auto clock = std::make_shared<ManualClock>(1'773'483'450'000);  // 2026-03-14T10:17:30Z
  SchedulePlane p(clock);
  SuiteSchedule sched(p.io.get_executor(), *p.cp);
  ASSERT_TRUE(sched.add(f.suite()).ok());
  EXPECT_EQ(sched.run_due(), 0);  // not yet
  clock->advance_ms(30'000);     // 10:18:00
  EXPECT_EQ(sched.run_due(), 1);
  EXPECT_EQ(sched.run_due(), 0);  // the same minute never fires twice

  // The file is read again at the next fire: a rename shows up in the next run.
  f.write_suite("renamed", "* * * * *");
  clock->advance_ms(60'000);
  EXPECT_EQ(sched.run_due(), 1);
  EXPECT_EQ(p.st->list_regressions(10).front().suite, "renamed");

  // A suite that no longer parses is logged and skipped; the schedule goes on.
  std::ofstream(f.suite()) << "suite: [broken\n";
  clock->advance_ms(60'000);
  EXPECT_EQ(sched.run_due(), 0);
  EXPECT_EQ(sched.next_fire_ms(), clock->now_ms() + 60'000);
  f.write_suite("fixed", "* * * * *");
  clock->advance_ms(60'000);
  EXPECT_EQ(sched.run_due(), 1);
  EXPECT_EQ(p.st->list_regressions(10).size(), 3u);
}

TEST(SuiteSchedule, ASuiteWithoutAValidScheduleIsRefusedWithTheFix) {
  Files f;
  SchedulePlane p(std::make_shared<ManualClock>());
  SuiteSchedule sched(p.io.get_executor(), *p.cp);
  f.write_suite("bad", "61 * * * *");
  auto r = sched.add(f.suite());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("schedule:"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace kfleet::core
