// Python kernels through the CUDA backend (kernels/harness/PYTHON.md): recorded by the agent's
// Python (a fake interpreter here), replayed by the measuring process.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "python_fixture.hpp"

using namespace cuda_test;

TEST(CudaBackend, APythonKernelIsRecordedByPythonAndReplayedByTheMeasuringProcess) {
  PythonFixture f;
  auto spec = PythonFixture::py_job(64);
  auto c = f.py_ctx(spec);
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason << "\n" << b.data.dump();
  EXPECT_EQ(b.data["recorder"], "python");
  EXPECT_EQ(b.data["binary"], (f.bundle / "attn.py").string());
  EXPECT_FALSE(b.data.value("measurer", "").empty());
  // Nothing of the job was compiled: no cache entry but the measuring process's.
  for (const auto& e : fs::directory_iterator(f.root / "cache"))
    EXPECT_FALSE(fs::exists(e.path() / "kfleet-harness")) << e.path();

  auto r = f.backend->resources(c);
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_TRUE(r.data.contains("skipped"));

  auto corr = f.backend->correctness(c);
  ASSERT_TRUE(corr.ok) << corr.reason;
  ASSERT_EQ(corr.data["rows"].size(), 2u);
  EXPECT_EQ(f.python_recordings(), 1);
  // The verdict's metrics.kernels: what the recorder said it launched, as its report.
  ASSERT_TRUE(corr.data.contains("kernels")) << corr.data.dump();
  EXPECT_EQ(corr.data["kernels"]["reported_by"], "recorder");
  ASSERT_EQ(corr.data["kernels"]["kernels"].size(), 2u);
  EXPECT_EQ(corr.data["kernels"]["kernels"][0]["function"], "attn_fwd");
  EXPECT_EQ(corr.data["kernels"]["kernels"][1]["origin"], "library");
  EXPECT_EQ(corr.data["kernels"]["kernels"][1]["file"], "libtorch_cuda.so");

  auto bench = f.backend->benchmark(c);
  ASSERT_TRUE(bench.ok) << bench.reason;
  EXPECT_EQ(bench.data["median_us"], 100);  // the measuring process's pipe
  EXPECT_EQ(bench.data["timing_mode"], "replay");
  EXPECT_EQ(bench.data["measurer_sha256"], b.data["measurer_sha256"]);
  EXPECT_EQ(f.python_recordings(), 2);
  // The recorder's device code is the agent's now: not writable by the job's uid.
  struct stat st {};
  ASSERT_EQ(::stat((f.root / "work" / "device-code-2" / "0123456789abcdef.cubin").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_mode & 0022, 0u);

  auto prof = f.backend->profile(c);
  EXPECT_TRUE(prof.ok);
}

// What the Python recorder leaves is the job's data: a refusal is the kernel's rejection, and
// device code that is a link, a second name of one file, or missing is refused before the
// measuring process is given it.
TEST(CudaBackend, APythonRecordersRefusalAndBadDeviceCodeAreTheKernelsRejection) {
  PythonFixture f;
  const std::vector<std::pair<int, std::string>> cases = {
      {5, "has no device code the recorder can give the measuring process"},
      {21, "0123456789abcdef.cubin"},
      {22, "aaaaaaaaaaaaaaaa.cubin"},
      {23, "wrote no device code"}};
  for (const auto& [s_dim, why] : cases) {
    auto spec = PythonFixture::py_job(s_dim);
    auto c = f.py_ctx(spec);
    ASSERT_TRUE(f.backend->build(c).ok) << s_dim;
    auto r = f.backend->correctness(c);
    EXPECT_FALSE(r.ok) << s_dim;
    EXPECT_FALSE(r.infra_error) << s_dim << ": " << r.reason;
    EXPECT_NE(r.reason.find(why), std::string::npos) << s_dim << ": " << r.reason;
  }
}

// A recorder that exits 3 (PROTOCOL.md's setup status) before the job's code ran could not
// start on this host: a setup error naming what is missing, so the job is retried elsewhere
// and never rejected. The same exit after the recorder announced the job's code is the
// kernel's: its code could have printed the setup line itself.
TEST(CudaBackend, APythonRecorderThatCannotStartIsASetupErrorNotTheKernels) {
  PythonFixture f;
  auto spec = PythonFixture::py_job(31);
  auto c = f.py_ctx(spec);
  ASSERT_TRUE(f.backend->build(c).ok);
  auto r = f.backend->correctness(c);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.infra_error) << r.reason;
  EXPECT_NE(r.reason.find("cannot record triton kernels here: torch sees no CUDA device"),
            std::string::npos)
      << r.reason;
  auto bench = f.backend->benchmark(c);
  EXPECT_FALSE(bench.ok);
  EXPECT_TRUE(bench.infra_error) << bench.reason;

  auto spec2 = PythonFixture::py_job(32);
  auto c2 = f.py_ctx(spec2);
  ASSERT_TRUE(f.backend->build(c2).ok);
  auto r2 = f.backend->correctness(c2);
  expect_kernels_rejection(r2, {"torch sees no CUDA device"});
}

TEST(CudaBackend, APythonThatCannotRecordTheLanguageIsTheFleetsSetup) {
  PythonFixture f(/*triton=*/false);
  auto spec = PythonFixture::py_job(64);
  auto c = f.py_ctx(spec);
  auto b = f.backend->build(c);
  EXPECT_FALSE(b.ok);
  EXPECT_TRUE(b.infra_error);
  EXPECT_NE(b.reason.find("cannot record triton kernels"), std::string::npos) << b.reason;
  EXPECT_NE(b.reason.find("triton: No module named triton"), std::string::npos) << b.reason;
}

// Interleaved A/B: a Python candidate against a CUDA reference, each side recorded its own way
// and replayed by the same measuring process.
TEST(CudaBackend, APythonCandidateInterleavesWithACudaReference) {
  PythonFixture f;
  auto spec = PythonFixture::py_job(64);
  spec.benchmark.max_rounds = 2;
  spec.benchmark.max_time_s = 2;
  auto c = f.py_ctx(spec);
  c.compare.kind = "baseline";
  c.compare.label = "cuda reference";
  c.compare.interleave = true;
  c.compare.spec = job(64);
  c.compare.bundle_hash = "ref";
  c.baseline_bundle_dir = kTests + "/kernels";
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason << "\n" << b.data.dump();
  ASSERT_TRUE(b.data.contains("baseline_build"));
  auto bench = f.backend->benchmark(c);
  ASSERT_TRUE(bench.ok) << bench.reason << "\n" << bench.data.dump();
  // Two rounds, one Python recording: the second round replays the agent's copy of the first
  // (PYTHON.md, "Rounds"), and says so; the C++ reference records each round as before.
  EXPECT_EQ(f.python_recordings(), 1);
  int cuda_recordings = 0, reused = 0;
  for (const auto& [type, data] : f.sink.events) {
    cuda_recordings += type == event_type::log_line && data.value("text", "") == "{\"lists\":1,\"type\":\"recorded\"}";
    reused += type == event_type::log_line &&
              data.value("text", "").rfind("replaying this job's recording of the same launch", 0) == 0;
  }
  EXPECT_GE(cuda_recordings, 2);
  EXPECT_EQ(reused, 1);
  // The copy is the agent's, outside the run folder the job's processes write, and equal to
  // what the recorder wrote.
  std::vector<fs::path> kept;
  for (const auto& e : fs::recursive_directory_iterator(f.root / "cache" / "recordings"))
    if (e.is_regular_file()) kept.push_back(e.path());
  ASSERT_EQ(kept.size(), 2u);  // the launch list and the one cubin
  std::sort(kept.begin(), kept.end());
  std::ifstream code(kept[0]);
  std::string text((std::istreambuf_iterator<char>(code)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "cubin\n") << kept[0];
  EXPECT_EQ(kept[1].filename(), "launches.txt");
  // The agent's next job starts without them.
  auto again = f.backend->build(c);
  ASSERT_TRUE(again.ok) << again.reason;
  EXPECT_FALSE(fs::exists(kept[0].parent_path()));
}
