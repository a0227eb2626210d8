#include <gtest/gtest.h>

#include "kfleet/cli/exit_code.hpp"
#include "kfleet/cli/progress.hpp"
#include "kfleet/cli/submit_request.hpp"

namespace kfleet::cli {
namespace {

Event ev(const char* type, nlohmann::json data) {
  Event e;
  e.type = type;
  e.data = std::move(data);
  return e;
}

std::string line(const Event& e, bool logs = false) {
  auto l = format_event_line(e, ProgressStyle{false, logs});
  return l ? *l : "<none>";
}

TEST(Progress, WaitingReasonIsShownAsIs) {
  EXPECT_EQ(line(ev("job.state", {{"state", "waiting_capacity"},
                                  {"reason", "us-east-1 stockout until 05:12:03"}})),
            "waiting_capacity: us-east-1 stockout until 05:12:03");
}

TEST(Progress, LeaseNamesAgentRegionGpuAndAttempt) {
  EXPECT_EQ(line(ev("lease.granted", {{"agent_id", 3}, {"region", "us-west-2"},
                                      {"gpu_class", "L4"}, {"attempt", 1}})),
            "leased to agent 3 (us-west-2, L4) attempt 1");
}

TEST(Progress, FormatterFillsLeaseFromTheAssignDecision) {
  ProgressFormatter f(ProgressStyle{}, "L4");
  auto assign = ev("sched.decision", {{"action", "assign"}, {"agent_id", 3}, {"agent", "l4-a"},
                                      {"region", "us-west-2"}, {"reason", "idle"}});
  EXPECT_EQ(f.line(assign).value_or(""), "scheduler: assign agent l4-a in us-west-2: idle");
  EXPECT_EQ(f.line(ev("lease.granted", {{"agent_id", 3}, {"attempt", 1}, {"run_id", 5}})).value_or(""),
            "leased to agent 3 l4-a (us-west-2, L4) attempt 1, run 5");
  // A lease to another agent than the decision named keeps only what it says itself.
  EXPECT_EQ(f.line(ev("lease.granted", {{"agent_id", 4}, {"attempt", 2}})).value_or(""),
            "leased to agent 4 (L4) attempt 2");
  EXPECT_FALSE(f.line(ev("job.state", {{"state", "leased"}, {"reason", "leased to 3"}})).has_value());
}

TEST(Progress, ProvisionDecisionSaysWhatWasAsked) {
  EXPECT_EQ(line(ev("sched.decision", {{"action", "provision"}, {"region", "us-east-1"}, {"gpu", "L4"},
                                       {"provider", "aws"}, {"reason", "no idle L4"}})),
            "scheduler: provision L4 via aws in us-east-1: no idle L4");
}

TEST(Progress, StageFinishedWithDuration) {
  EXPECT_EQ(line(ev("stage.finished", {{"stage", "build"}, {"ok", true}, {"duration_ms", 1234}})),
            "[build] ok 1.2s");
  EXPECT_EQ(line(ev("stage.finished", {{"stage", "fetch"}, {"ok", true}, {"seconds", 0.35}, {"simulated", true}})),
            "[fetch] ok 350ms");
  EXPECT_EQ(line(ev("stage.finished", {{"stage", "build"}, {"ok", false}, {"reason", "nvcc exit 1"}})),
            "[build] FAILED: nvcc exit 1");
}

TEST(Progress, ResourcesLikePtxas) {
  auto e = ev("resources", {{"kernels", {{{"name", "k"}, {"registers", 96},
                                           {"shared_bytes", 37990}, {"spill_bytes", 0}}}},
                            {"ok", true}});
  EXPECT_EQ(line(e), "[resources] regs 96 smem 37.1 KB spills 0 ok");
  e.data["ok"] = false;
  e.data["violations"] = {{{"field", "max_registers"}, {"reason", "registers 160 > 128"}}};
  e.data["kernels"][0]["stack_bytes"] = 16;
  EXPECT_EQ(line(e), "[resources] regs 96 smem 37.1 KB spills 0 stack 16 B FAILED: registers 160 > 128");
}

TEST(Progress, CorrectnessRowWithMetrics) {
  EXPECT_EQ(line(ev("correctness", {{"case", "small"}, {"seed", 0}, {"max_abs", 0.0459}, {"ok", true}})),
            "[correctness] small seed=0 max_abs=0.0459 ok");
  EXPECT_EQ(line(ev("correctness", {{"case", "mission"}, {"seed", 2},
                                    {"metrics", {{"rel_l2", 0.02}}}, {"ok", false}})),
            "[correctness] mission seed=2 rel_l2=0.02 FAILED");
}

TEST(Progress, BenchmarkMedianWithNoise) {
  EXPECT_EQ(line(ev("bench.result", {{"median_us", 696.0}, {"n", 40}, {"rel_stdev_pct", 0.31}})),
            "[benchmark] median 696.0 µs (n=40, ±0.3%)");
  EXPECT_EQ(line(ev("bench.samples", {{"samples_us", {1, 2}}})), "<none>");
}

TEST(Progress, VerdictLinesAndSimulatedMark) {
  EXPECT_EQ(line(ev("verdict", {{"status", "rejected"}, {"gate", "performance"},
                                {"reason", "do not merge: +6.1% (696 µs vs 656 µs)"}})),
            "REJECTED performance: do not merge: +6.1% (696 µs vs 656 µs)");
  EXPECT_EQ(format_verdict_line({{"outcome", "passed"}, {"reason", "improved -3.0%"},
                                 {"simulated", true}}, false),
            "PASSED: improved -3.0% [simulated]");
  // Colour wraps only the word, so the rest stays greppable.
  EXPECT_EQ(format_verdict_line({{"outcome", "passed"}}, true), "\x1b[32mPASSED\x1b[0m");
}

TEST(Progress, FollowKeepsToMilestones) {
  EXPECT_EQ(line(ev("stage.started", {{"stage", "build"}})), "<none>");
  EXPECT_EQ(line(ev("stage.started", {{"stage", "build"}}), true), "[build] started");
  EXPECT_EQ(line(ev("stage.finished", {{"stage", "verdict"}, {"ok", true}})), "<none>");
  EXPECT_EQ(line(ev("job.state", {{"state", "gating"}, {"reason", "agent 1 gating"}})), "<none>");
  EXPECT_EQ(line(ev("job.state", {{"state", "cancelled"}, {"reason", "by user"}})), "CANCELLED: by user");
}

TEST(Progress, LogLinesOnlyWhenAsked) {
  auto e = ev("log", {{"stage", "build"}, {"stream", "stdout"}, {"text", "ptxas info"}});
  EXPECT_EQ(line(e, false), "<none>");
  EXPECT_EQ(line(e, true), "[build] ptxas info");
}

TEST(Progress, Units) {
  EXPECT_EQ(format_duration_ms(350), "350ms");
  EXPECT_EQ(format_duration_ms(125000), "2m05s");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_time_us(12345), "12.35 ms");
}

TEST(Progress, ProfileSummaryIsALinePerKernel) {
  // The profile stage's data for the H200 capture (agent/backends/tests/profiles/).
  nlohmann::json d = {
      {"tool", "ncu"}, {"metrics", {"dram__bytes.sum"}}, {"clock_control", "base"},
      {"clock_note", "ncu locked the GPU clocks to base"},
      {"summary", {{{"kernel", "axpy_kernel(float, const float *, float *, int)"}, {"name", "axpy_kernel"},
                    {"launches", 3},
                    {"metrics", {{"gpu__time_duration.sum", {{"median", 62432}, {"unit", "ns"}, {"n", 3}}},
                                 {"dram__bytes.sum", {{"median", 183069952}, {"unit", "byte"}, {"n", 3}}},
                                 {"sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                  {{"median", 42.56}, {"unit", "%"}, {"n", 3}}}}}}}},
      {"advice", nlohmann::json::array()}};
  EXPECT_EQ(line(ev("profile", d)),
            "[profile] axpy_kernel: gpu__time_duration.sum 62.4 µs · dram__bytes.sum 183 MB · SM 42.6%");
  // `logs` adds how ncu clocked the GPU.
  EXPECT_EQ(line(ev("profile", d), true),
            "[profile] axpy_kernel: gpu__time_duration.sum 62.4 µs · dram__bytes.sum 183 MB · SM 42.6%\n"
            "[profile] ncu locked the GPU clocks to base");

  // SpeedOfLight (no metrics asked): the time, the throughputs by short name, advice after.
  nlohmann::json sol = {
      {"tool", "ncu"}, {"metrics", nlohmann::json::array()},
      {"summary", {{{"name", "axpy_kernel"},
                    {"metrics", {{"gpu__time_duration.sum", {{"median", 62368}, {"unit", "ns"}}},
                                 {"Duration", {{"median", 62368}, {"unit", "ns"}}},
                                 {"Compute (SM) Throughput", {{"median", 42.56}, {"unit", "%"}}},
                                 {"Memory Throughput", {{"median", 60.99}, {"unit", "%"}}},
                                 {"DRAM Throughput", {{"median", 60.99}, {"unit", "%"}}},
                                 {"L2 Cache Throughput", {{"median", 74.33}, {"unit", "%"}}},
                                 {"L1/TEX Cache Throughput", {{"median", 23.74}, {"unit", "%"}}},
                                 {"SM Frequency", {{"median", 1498905688.81}, {"unit", "hz"}}},
                                 {"Elapsed Cycles", {{"median", 93531}, {"unit", "cycle"}}}}}}}},
      {"advice", {{{"rule", "SOLBottleneck"}, {"type", "OPT"},
                   {"description", "Memory is more heavily utilized than Compute: Look at the Memory "
                                   "Workload Analysis section to identify the DRAM bottleneck. Check "
                                   "memory replay (coalescing) metrics."}}}}};
  EXPECT_EQ(line(ev("profile", sol)),
            "[profile] axpy_kernel: gpu__time_duration.sum 62.4 µs · SM 42.6% · Memory 61.0% · DRAM 61.0% · "
            "L2 74.3% · L1 23.7% (+2 more)\n"
            "[profile] advice SOLBottleneck: Memory is more heavily utilized than Compute: Look at the Memory "
            "Workload Analysis section to identify the DRAM bottleneck. Check memory ...");
}

TEST(Progress, ProfileWithoutValuesSaysWhy) {
  EXPECT_EQ(line(ev("profile", {{"tool", "ncu"}, {"summary", nlohmann::json::array()},
                                {"note", "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM)"}})),
            "[profile] no metric values: ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM)");
  // The simulated backend's flat metrics.
  EXPECT_EQ(line(ev("profile", {{"tool", "ncu"}, {"metrics", {{"l1tex__t_bytes", 512}}}, {"simulated", true}})),
            "[profile] ncu: l1tex__t_bytes 512 [simulated]");
}

TEST(Progress, ProfileUnits) {
  const struct {
    double value;
    const char* unit;
    const char* shown;
  } cases[] = {
      {62432, "ns", "62.4 µs"},
      {2412000, "nsecond", "2.41 ms"},
      {62.43, "usecond", "62.4 µs"},
      {183069952, "byte", "183 MB"},
      {183.07, "Mbyte", "183 MB"},
      {512, "byte", "512 B"},
      {2.9e12, "byte/second", "2.90 TB/s"},
      {3198349580.98, "hz", "3.20 GHz"},
      {1.5, "Ghz", "1.50 GHz"},
      {42.56, "%", "42.6%"},
      {93531, "cycle", "93,531 cycle"},
      {89892.95, "cycle", "89893 cycle"},
      {16, "", "16"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(format_profile_value(c.value, c.unit), c.shown) << c.value << " " << c.unit;
}

TEST(Tracker, TerminalJobStateDecides) {
  JobOutcomeTracker t;
  t.observe(ev("job.state", {{"state", "benchmarking"}}));
  EXPECT_FALSE(t.finished());
  t.observe(ev("verdict", {{"status", "rejected"}}));
  EXPECT_TRUE(t.saw_verdict());
  EXPECT_EQ(t.verdict_exit_code(), exit_rejected);
  EXPECT_FALSE(t.finished());  // a lost agent could still requeue; the job's state decides
  t.observe(ev("job.state", {{"state", "rejected"}}));
  EXPECT_EQ(t.exit_code(), exit_rejected);
}

TEST(SubmitRequest, PriorityReplacedInPlaceOrAppended) {
  auto replaced = with_priority("name: a\npriority: 1  # low\ntarget: {gpu: L4}\n", 7);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(*replaced, "name: a\npriority: 7  # low\ntarget: {gpu: L4}\n");
  auto appended = with_priority("name: a", 3);
  ASSERT_TRUE(appended.ok());
  EXPECT_EQ(*appended, "name: a\npriority: 3\n");
  EXPECT_FALSE(with_priority("{name: a}", 3).ok());
}

TEST(SubmitRequest, SubmittedAndDuplicateLines) {
  nlohmann::json job = {{"id", 12}, {"name", "fa-s512-v3/iter1"}, {"gpu", "L4"},
                        {"regions", {"us-central1-a", "us-west1-b"}}};
  EXPECT_EQ(submitted_line(job),
            "submitted job 12 fa-s512-v3/iter1 (L4, regions us-central1-a, us-west1-b)");
  job["regions"] = nlohmann::json::array();
  EXPECT_EQ(submitted_line(job), "submitted job 12 fa-s512-v3/iter1 (L4, any region)");
  nlohmann::json old = {{"id", 7}, {"state", "rejected"},
                        {"verdict", {{"outcome", "rejected"}, {"gate", "performance"}}}};
  EXPECT_EQ(duplicate_line(old, 7),
            "identical to job 7 (verdict rejected performance): not run again; use --force to "
            "run it anyway");
  EXPECT_EQ(dashboard_url("http://h:1", 12), "http://h:1/#/jobs/12");
}

// With compile agents a job's stages run on two machines; each stage line names its agent.
TEST(Progress, StageLinesNameTheAgentAndTheHandOffIsShown) {
  EXPECT_EQ(line(ev("stage.finished", {{"stage", "build"}, {"ok", true}, {"seconds", 2.5},
                                       {"agent_id", 1}, {"agent", "build-0"}})),
            "[build] ok 2.5s on build-0");
  EXPECT_EQ(line(ev("run.handed_off", {{"run_id", 7}, {"agent_id", 1}, {"reason", "built"}})),
            "handed on: run 7 built it; the GPU stages go to a GPU agent");
  EXPECT_EQ(line(ev("resources", {{"skipped", "custom jobs report no compiler resources"}})),
            "[resources] skipped: custom jobs report no compiler resources");
}

}  // namespace
}  // namespace kfleet::cli
