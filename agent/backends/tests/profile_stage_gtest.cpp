// The CUDA backend's profile stage end to end without a GPU: a real nvcc build of the job kernel
// with the stand-in harness, and a fake `ncu` first on PATH that records its command line and
// writes one of the real ncu captures (tests/profiles/) where --log-file points. The metric
// values must land in the stage's data; a profiler that cannot read counters is a note.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "kfleet/agent/backend.hpp"
#include "test_sandbox.hpp"
#include "kfleet/testing/files.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;

namespace {

class NullSink : public EventSink {
 public:
  void emit(const std::string&, nlohmann::json) override {}
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

JobSpec job(std::vector<std::string> metrics) {
  JobSpec s = tile_job(64, {0}, 30);
  ProfileSpec p;
  p.tool = "ncu";
  p.metrics = std::move(metrics);
  s.profile = p;
  return s;
}

// A built job and a fake ncu in front of PATH; each test says what the fake prints.
struct ProfileFixture {
  fs::path root = fs::temp_directory_path() / ("kfleet_profile_stage_" + std::to_string(::getpid()));
  NullSink sink;
  StopFlag stop;
  BackendPtr backend;
  std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";

  ProfileFixture() {
    fs::remove_all(root);
    fs::create_directories(root / "work");
    fs::create_directories(root / "bin");
    // Copies bin/ncu-output (fake()) to the --log-file path, records argv in the run's work dir
    // (the only place a sandboxed profiler may write), prints a harness-like line. It is
    // configured by files beside it: a job's environment is the agent's fixed list.
    std::ofstream(root / "bin" / "ncu") <<
        "#!/bin/sh\n"
        "dir=$(dirname \"$0\")\n"
        "log=\"\"; prev=\"\"\n"
        "for a in \"$@\"; do [ \"$prev\" = \"--log-file\" ] && log=\"$a\"; prev=\"$a\"; done\n"
        "printf '%s\\n' \"$@\" > \"$dir/../work/ncu-args.txt\"\n"
        "[ -n \"$log\" ] && cat \"$dir/ncu-output\" > \"$log\"\n"
        "echo '{\"type\":\"bench\",\"case\":\"mission\",\"n\":3}'\n"
        "exit \"$(cat \"$dir/ncu-exit\" 2>/dev/null || echo 0)\"\n";
    // Executable by the job's uid: the sandbox's last step (kfleet-seccomp-exec) execs it as that uid.
    fs::permissions(root / "bin" / "ncu", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                              fs::perms::others_read | fs::perms::others_exec);
    ::setenv("PATH", ((root / "bin").string() + ":" + old_path).c_str(), 1);
    backend = fake_h200_backend((root / "cache").string(), test_sandbox());
  }
  ~ProfileFixture() {
    ::setenv("PATH", old_path.c_str(), 1);
    fs::remove_all(root);
  }
  StageContext ctx(const JobSpec& s) {
    return StageContext{s, (kBackendTestsDir / "kernels").string(), (root / "work").string(), GpuInfo{},
                        Comparison{}, sink, stop};
  }
  std::vector<std::string> ncu_args() { return lines_of(kfleet::testing::read_file(root / "work" / "ncu-args.txt")); }
  // What the fake ncu writes to its --log-file, and its exit status.
  void fake(const fs::path& output, int exit_code = 0) {
    fs::copy_file(output, root / "bin" / "ncu-output", fs::copy_options::overwrite_existing);
    std::ofstream(root / "bin" / "ncu-exit") << exit_code << "\n";
  }
  // job(metrics) built, then its profile stage with the fake printing `output`: that stage's
  // result (a failed build fails the test and is returned instead).
  StageResult profile(const fs::path& output, std::vector<std::string> metrics, int exit_code = 0) {
    fake(output, exit_code);
    const JobSpec spec = job(std::move(metrics));
    auto c = ctx(spec);
    return stage_after_build(*backend, c, &Backend::profile);
  }
};

}  // namespace

TEST(ProfileStage, NcuMetricValuesLandInTheStageData) {
  ProfileFixture f;
  auto p = f.profile(kBackendTestsDir / "profiles" / "ncu-details-metrics.csv", {"dram__bytes.sum"});
  ASSERT_TRUE(p.ok);
  const auto& d = p.data;
  EXPECT_FALSE(d.contains("note")) << d.dump(2);
  EXPECT_EQ(d["tool"], "ncu");
  EXPECT_EQ(d["metrics"], nlohmann::json({"dram__bytes.sum"}));
  EXPECT_EQ(d["collected"], nlohmann::json({"gpu__time_duration.sum", "dram__bytes.sum"}));
  EXPECT_EQ(d["kernel_filter"], "regex:^(_Z8job_tilePf)$");  // ptxas's name for job_tile
  EXPECT_EQ(d["clock_control"], "base");
  EXPECT_EQ(d["exit"], "exit code 0");
  EXPECT_EQ(d["launches"], 3);
  ASSERT_EQ(d["kernels"].size(), 3u);
  EXPECT_EQ(d["kernels"][0]["metrics"]["gpu__time_duration.sum"]["value"], 62432);
  EXPECT_EQ(d["kernels"][0]["metrics"]["dram__bytes.sum"]["value"], 183069952);
  EXPECT_EQ(d["kernels"][2]["metrics"]["gpu__time_duration.sum"]["value"], 60928);
  ASSERT_EQ(d["summary"].size(), 1u);
  const auto& s = d["summary"][0];
  EXPECT_EQ(s["name"], "axpy_kernel");
  EXPECT_EQ(s["launches"], 3);
  EXPECT_EQ(s["metrics"]["gpu__time_duration.sum"]["median"], 61056);
  EXPECT_EQ(s["metrics"]["gpu__time_duration.sum"]["unit"], "ns");
  EXPECT_EQ(s["metrics"]["dram__bytes.sum"]["median"], 180697600);
  EXPECT_TRUE(d["advice"].empty());
  EXPECT_FALSE(d.contains("output"));  // the harness's stdout is not kept

  // What ncu was asked: the CSV into a log file, no report export, the job's kernel only, and
  // the benchmark of the job's case around it.
  auto args = f.ncu_args();
  auto has = [&](const std::string& a) { return std::find(args.begin(), args.end(), a) != args.end(); };
  EXPECT_FALSE(has("--export"));
  ASSERT_TRUE(has("--log-file"));
  EXPECT_EQ(*(std::find(args.begin(), args.end(), "--log-file") + 1),
            (f.root / "work" / "profile" / "ncu.csv").string());
  EXPECT_TRUE(has("regex:^(_Z8job_tilePf)$"));
  EXPECT_TRUE(has("gpu__time_duration.sum,dram__bytes.sum"));
  EXPECT_TRUE(has("benchmark"));
  EXPECT_TRUE(has("--max-samples"));
}

TEST(ProfileStage, WithoutMetricsTheSpeedOfLightSectionAndItsAdviceAreKept) {
  ProfileFixture f;
  auto p = f.profile(kBackendTestsDir / "profiles" / "ncu-details-speedoflight.csv", {});
  ASSERT_TRUE(p.ok);
  const auto& d = p.data;
  EXPECT_FALSE(d.contains("note")) << d.dump(2);
  const auto& m = d["summary"][0]["metrics"];
  EXPECT_EQ(m["Duration"]["median"], 62368);
  EXPECT_EQ(m["Compute (SM) Throughput"]["median"], 42.56);
  EXPECT_EQ(m["Compute (SM) Throughput"]["unit"], "%");
  ASSERT_EQ(d["advice"].size(), 1u);
  EXPECT_EQ(d["advice"][0]["rule"], "SOLBottleneck");
  EXPECT_EQ(d["advice"][0]["kernel"], "axpy_kernel");
  auto args = f.ncu_args();
  EXPECT_NE(std::find(args.begin(), args.end(), "SpeedOfLight"), args.end());
}

TEST(ProfileStage, NoCounterPermissionIsANoteNotAFailure) {
  ProfileFixture f;
  const fs::path out = f.root / "perm.txt";
  std::ofstream(out) << "==PROF== Connected to process 4242 (/cache/kfleet-harness)\n"
                        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                        "NVIDIA GPU Performance Counters on the target device 0.\n"
                        "==PROF== Disconnected from process 4242\n";
  auto p = f.profile(out, {"dram__bytes.sum"}, 1);
  EXPECT_TRUE(p.ok);
  EXPECT_FALSE(p.infra_error);
  const auto& d = p.data;
  // at(): a key the stage did not write fails here (a const json's [] on a missing key is
  // undefined behaviour, which ASan caught as a read of freed memory).
  ASSERT_TRUE(d.contains("exit")) << d.dump(2);
  EXPECT_EQ(d.at("exit"), "exit code 1");
  EXPECT_TRUE(d.value("summary", nlohmann::json::array()).empty());
  EXPECT_TRUE(d.value("kernels", nlohmann::json::array()).empty());
  ASSERT_TRUE(d.contains("note")) << d.dump(2);
  const std::string note = d["note"];
  EXPECT_NE(note.find("ERR_NVGPUCTRPERM"), std::string::npos) << note;
  EXPECT_NE(note.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos) << note;
  EXPECT_NE(note.find("root"), std::string::npos) << note;
  ASSERT_TRUE(d.contains("tool_output"));
}

TEST(ProfileStage, AFilterThatMatchesNothingSaysWhatRan) {
  ProfileFixture f;
  auto p = f.profile(kBackendTestsDir / "profiles" / "ncu-logfile-no-match.csv", {});
  EXPECT_TRUE(p.ok);
  const std::string note = p.data.value("note", "");
  EXPECT_EQ(note, "ncu profiled no kernel: no launch matched regex:^(_Z8job_tilePf)$ (the process "
                  "launched _Z11axpy_kernelfPKfPfi, _Z4fillPfi, "
                  "_ZN37_GLOBAL__N__db13b745_5_va_cu_ccb4ed0b11anon_kernelEPfi)");
}

TEST(ProfileStage, GarbageFromTheProfilerIsANote) {
  ProfileFixture f;
  const fs::path out = f.root / "garbage.txt";
  std::ofstream(out) << "\"ID\",\"Kernel Name\",\"Metric Name\"\n\"0\",\"k\n\xff\xfe";
  auto p = f.profile(out, {});
  EXPECT_TRUE(p.ok);
  ASSERT_TRUE(p.data.contains("note")) << p.data.dump(2);
  EXPECT_NE(p.data["note"].get<std::string>().find("left no metric values"), std::string::npos);
}
