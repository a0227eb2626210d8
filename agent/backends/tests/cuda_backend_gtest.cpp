// The CUDA backend end to end without a GPU: a real nvcc build of a job kernel linked with a
// stand-in harness (host code that speaks the protocol), the resources gate on real ptxas
// output, the build cache, and the harness child's results, crashes and hangs.
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/harness_backend.hpp"
#include "kfleet/agent/backend.hpp"
#include "cuda_fixture.hpp"
#include "test_sandbox.hpp"
#include "kfleet/common/event.hpp"

using namespace cuda_test;

TEST(CudaBackend, BuildsGatesAndRunsTheHarness) {
  Fixture f;
  auto spec = job(64);
  auto c = f.ctx(spec);
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason << "\n" << b.data.dump();
  EXPECT_FALSE(b.data["cache_hit"].get<bool>());

  auto r = f.backend->resources(c);
  ASSERT_TRUE(r.ok) << r.reason;
  ASSERT_EQ(r.data["kernels"].size(), 1u);  // the harness's own code is not gated
  EXPECT_EQ(r.data["kernels"][0]["shared_bytes"], 2048 * 4);
  EXPECT_EQ(r.data["ok"], true);

  auto corr = f.backend->correctness(c);
  EXPECT_TRUE(corr.ok) << corr.reason;
  ASSERT_EQ(corr.data["rows"].size(), 2u);
  EXPECT_EQ(corr.data["rows"][1]["seed"], 1);
  // The family harness's check of its GPU reference, in the verdict as a problem's is.
  EXPECT_EQ(corr.data["reference_check"].value("against", ""), "fp64 CPU reference") << corr.data.dump();
  EXPECT_EQ(corr.data["reference_check"].value("problem", ""), "attention");
  EXPECT_TRUE(corr.data["reference_check"].value("pass", false));

  c.compare.kind = "value";
  c.compare.median_us = 120;
  auto bench = f.backend->benchmark(c);
  ASSERT_TRUE(bench.ok) << bench.reason;
  // The measuring process's pipe, not the forged line it printed (which went to the log).
  EXPECT_EQ(bench.data["median_us"], 100);
  EXPECT_EQ(bench.data["timing_mode"], "replay");
  bool forged_in_log = false;
  for (const auto& [type, data] : f.sink.events)
    if (type == event_type::log_line && data.value("text", "").find("\"median_us\":1,") != std::string::npos)
      forged_in_log = true;
  EXPECT_TRUE(forged_in_log);
  EXPECT_EQ(bench.data["perf"], "improved");
  EXPECT_LT(bench.data["delta_pct"].get<double>(), -10);

  // Same inputs: the second build is a cache hit and still gates.
  auto again = f.backend->build(c);
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.data["cache_hit"].get<bool>());
  spec.gates.resources->max_shared_bytes = 1024;
  auto tight = f.backend->resources(c);
  EXPECT_FALSE(tight.ok);
  EXPECT_EQ(tight.reason, "job_tile (sm_89): 8192 bytes of shared memory > budget 1024");
}

int objects(const StageResult& b, const char* field) {
  return b.data.at("harness_objects").at(field).get<int>();
}

TEST(CudaBackend, HarnessObjectsAreCompiledOncePerArchAndShared) {
  Fixture f;
  std::vector<std::string> said;
  f.backend->prepare([&](const std::string& m) { said.push_back(m); });
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("harness objects for sm_89 ready: 2 compiled, 0 cached"), std::string::npos)
      << said[0];

  // A new kernel builds its own sources only.
  auto spec = job(64);
  auto c = f.ctx(spec);
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason;
  EXPECT_FALSE(b.data["cache_hit"].get<bool>());
  EXPECT_EQ(objects(b, "compiled"), 0);
  EXPECT_EQ(objects(b, "reused"), 2);
  EXPECT_TRUE(f.backend->correctness(c).ok);  // the binary linked from cached objects runs

  // Another variant of it (a new define): a new binary, the same harness objects.
  auto variant = job(64);
  variant.kernel.defines.push_back({"TILE", "4"});
  auto cv = f.ctx(variant);
  auto bv = f.backend->build(cv);
  ASSERT_TRUE(bv.ok) << bv.reason;
  EXPECT_FALSE(bv.data["cache_hit"].get<bool>());
  EXPECT_EQ(objects(bv, "compiled"), 0);

  // A renamed entry recompiles only the harness source that uses the macro.
  auto renamed = job(64);
  renamed.kernel.flags = {"-DKFLEET_ATTENTION_ENTRY=fake_launch"};
  auto cr = f.ctx(renamed);
  auto br = f.backend->build(cr);
  ASSERT_TRUE(br.ok) << br.reason;
  EXPECT_EQ(objects(br, "compiled"), 1);
  EXPECT_EQ(objects(br, "reused"), 1);

  // Another arch has its own objects.
  auto other = f.make("sm_80");
  auto other_spec = job(64);
  auto co = f.ctx(other_spec);
  auto bo = other->build(co);
  ASSERT_TRUE(bo.ok) << bo.reason;
  EXPECT_EQ(objects(bo, "compiled"), 2);
}

TEST(CudaBackend, APrepareAndABuildAtOnceCompileEachObjectOnce) {
  Fixture f;
  std::vector<std::string> said;
  std::thread warm([&] { f.backend->prepare([&](const std::string& m) { said.push_back(m); }); });
  auto spec = job(64);
  auto c = f.ctx(spec);
  auto b = f.backend->build(c);
  warm.join();
  ASSERT_TRUE(b.ok) << b.reason;
  ASSERT_EQ(said.size(), 1u);
  // Whoever came second waited for the first one's compiles instead of repeating them.
  int prepared = said[0].find("2 compiled") != std::string::npos   ? 2
                 : said[0].find("1 compiled") != std::string::npos ? 1
                                                                   : 0;
  EXPECT_EQ(prepared + objects(b, "compiled"), 2) << said[0] << " / " << b.data.dump();
}

TEST(CudaBackend, ReportsFailuresCrashesAndHangs) {
  Fixture f;
  auto spec = job(7);
  auto c = f.ctx(spec);
  ASSERT_TRUE(f.backend->build(c).ok);
  auto wrong = f.backend->correctness(c);
  EXPECT_FALSE(wrong.ok);
  EXPECT_FALSE(wrong.infra_error);
  EXPECT_EQ(wrong.reason, "case mission seed 0: max_abs 0.21 > 0.06");

  spec.gates.correctness->cases[0].shape.dims = {{"S", 13}};
  auto crash = f.backend->correctness(c);
  EXPECT_FALSE(crash.ok);
  EXPECT_FALSE(crash.infra_error);
  EXPECT_EQ(crash.reason.rfind("harness crashed (SIGSEGV)", 0), 0u) << crash.reason;

  spec.gates.correctness->cases[0].shape.dims = {{"S", 99}};
  spec.timeout_s = 1;
  auto hang = f.backend->correctness(c);
  EXPECT_FALSE(hang.ok);
  EXPECT_NE(hang.reason.find("timed out"), std::string::npos) << hang.reason;
}

TEST(CudaBackend, ARecorderRefusalIsTheKernelsRejection) {
  Fixture f;
  auto r = f.correctness_of(5);
  expect_kernels_rejection(r, {"replay mode refused the launch", "host function node"});
}

// A launch function that aborts in the recorder (here: it starts threads until the sandbox's
// process limit refuses one, as a job that interposes every descriptor it finds once did) is the
// job's failure, and the verdict names the recorder, the signal, the limit and what it printed:
// not "harness crashed", which would blame the measuring process.
TEST(CudaBackend, ARecorderThatAbortsIsNamedNotTheHarness) {
  Fixture f;
  auto r = f.correctness_of(17);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.infra_error);
  EXPECT_EQ(r.reason.rfind("the recorder (the job's launch function under capture) was killed by "
                           "SIGABRT (after the sandbox's process limit refused a new process or "
                           "thread): ", 0), 0u) << r.reason;
  EXPECT_NE(r.reason.find("Resource temporarily unavailable"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find("harness crashed"), std::string::npos) << r.reason;
}

TEST(CudaBackend, InProcessTimingIsAskedForSaidAndNeverRoot) {
  Fixture f;
  auto spec = job(64);
  spec.kernel.params = {{"timing", "in_process"}};
  auto c = f.ctx(spec);
  ASSERT_TRUE(f.backend->build(c).ok);
  auto bench = f.backend->benchmark(c);
  if (::geteuid() == 0) {
    EXPECT_FALSE(bench.ok);
    EXPECT_FALSE(bench.infra_error);
    EXPECT_NE(bench.reason.find("refuses to run as root"), std::string::npos) << bench.reason;
    return;
  }
  ASSERT_TRUE(bench.ok) << bench.reason;
  EXPECT_EQ(bench.data["median_us"], 100);  // from the pipe, here too
  EXPECT_EQ(bench.data["timing_mode"], "in_process");
  EXPECT_EQ(bench.data["timing_mode_note"],
            "in-process timing: the kernel's host code ran in the measuring process");
}

TEST(CudaBackend, ACompileErrorIsAOneLineReason) {
  Fixture f;
  fs::path bundle = f.root / "bundle";
  fs::create_directories(bundle);
  std::ofstream(bundle / "job_kernel.cu") << "__global__ void k() { this is not cuda; }\n";
  auto spec = job(64);
  StageContext c{spec, bundle.string(), (f.root / "work").string(), GpuInfo{}, Comparison{},
                 f.sink, f.stop};
  auto b = f.backend->build(c);
  expect_kernels_rejection(b, {"compile failed", "error"});
}

TEST(CustomFamily, RunsStepsAndParsesMetricLines) {
  Fixture f;
  JobSpec spec;
  spec.timeout_s = 10;
  spec.kernel.family = "custom";
  spec.kernel.language = "cuda";
  spec.kernel.steps = CustomSteps{"true", "exit 0",
                                  "echo log; echo '{\"metric\":\"time_ms\",\"value\":2.0,"
                                  "\"samples\":[2.0,2.0,2.01,1.99,2.0]}'",
                                  ""};
  auto c = f.ctx(spec);
  c.compare.median_us = 2200;  // every sample is >= 8% faster
  EXPECT_TRUE(f.backend->build(c).ok);
  EXPECT_TRUE(f.backend->correctness(c).ok);
  auto b = f.backend->benchmark(c);
  ASSERT_TRUE(b.ok) << b.reason;
  EXPECT_DOUBLE_EQ(b.data["median_us"].get<double>(), 2000.0);
  EXPECT_EQ(b.data["perf"], "improved");
  spec.kernel.steps->test = "echo broken >&2; exit 4";
  auto t = f.backend->correctness(c);
  EXPECT_FALSE(t.ok);
  EXPECT_NE(t.reason.find("exit code 4"), std::string::npos) << t.reason;
}

TEST(MetricLines, OnlyWellFormedMetricsCount) {
  auto m = kfleet::backends::parse_metric_lines(
      "hello\n{\"metric\":\"gflops\",\"value\":3.5}\n{\"metric\":\"x\"}\n{bad json\n"
      "{\"value\":1}\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["metric"], "gflops");
}
