// The exclusivity rule with a scripted process list: wait for a busy GPU, then benchmark or
// refuse with the pids named.
#include <regex>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/exclusive.hpp"

using namespace kfleet;
using namespace kfleet::backends;

namespace {
std::function<Result<std::vector<unsigned>>()> script(std::vector<std::vector<unsigned>> seen, int* calls) {
  return [seen, calls]() -> Result<std::vector<unsigned>> {
    int i = (*calls)++;
    return seen[std::min<std::size_t>(i, seen.size() - 1)];
  };
}
}  // namespace

TEST(Exclusive, AFreeGpuIsBenchmarkedAtOnceWithoutALogLine) {
  int calls = 0;
  std::vector<std::string> log;
  auto w = wait_for_exclusive_gpu(script({{}}, &calls), 0, {60, 0.001}, nullptr,
                                  [&](const std::string& m) { log.push_back(m); });
  EXPECT_TRUE(w.ok);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(log.empty());
}

TEST(Exclusive, ABusyGpuIsWaitedForAndSaidOnce) {
  int calls = 0;
  std::vector<std::string> log;
  const unsigned me = static_cast<unsigned>(::getpid());  // a pid whose name /proc knows
  auto w = wait_for_exclusive_gpu(script({{me}, {me}, {me}, {}}, &calls), 1, {60, 0.001}, nullptr,
                                  [&](const std::string& m) { log.push_back(m); });
  EXPECT_TRUE(w.ok) << w.reason;
  EXPECT_EQ(calls, 4);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("GPU 1 is busy with pid " + std::to_string(me) + " ("), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("waiting up to 60 s"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("GPU 1 is free after"), std::string::npos) << log[1];
}

TEST(Exclusive, AGpuThatStaysBusyIsRefusedNamingThePids) {
  int calls = 0;
  auto w = wait_for_exclusive_gpu(script({{4242, 4343}}, &calls), 0, {0.05, 0.01}, nullptr,
                                  [](const std::string&) {});
  EXPECT_FALSE(w.ok);
  EXPECT_GT(calls, 1);
  EXPECT_GE(w.waited_s, 0.05);
  EXPECT_EQ(w.pids, (std::vector<unsigned>{4242, 4343}));
  // A pid that happens to be alive on this machine is named with its command: "(pid 4242 (sh), ...".
  const std::regex reason(R"(^GPU 0 is busy: 2 other compute process\(es\) \(pid 4242( \([^)]*\))?, )"
                          R"(pid 4343( \([^)]*\))?\) still there after 0 s)");
  EXPECT_TRUE(std::regex_search(w.reason, reason)) << w.reason;
}

TEST(Exclusive, ACancelledRunStopsWaiting) {
  int calls = 0;
  auto w = wait_for_exclusive_gpu(script({{7}}, &calls), 0, {3600, 0.001}, [] { return true; },
                                  [](const std::string&) {});
  EXPECT_FALSE(w.ok);
  EXPECT_EQ(calls, 1);
}

TEST(Exclusive, AnUnreadableProcessListIsNotTakenAsFree) {
  auto w = wait_for_exclusive_gpu([]() -> Result<std::vector<unsigned>> {
    return make_error(Errc::unavailable, "NVML_ERROR_GPU_IS_LOST");
  }, 0, {60, 0.001}, nullptr, [](const std::string&) {});
  EXPECT_FALSE(w.ok);
  EXPECT_EQ(w.reason, "cannot tell whether GPU 0 is free: NVML_ERROR_GPU_IS_LOST");
}
