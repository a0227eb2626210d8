// The pieces of a Python kernel's stage the agent calls (common/python_stage.hpp): the recorder's
// command line, its sandbox's reads, and the device code it wrote, checked before the measurer
// gets it.
#include "common/python_stage.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace kb = kfleet::backends;
namespace fs = std::filesystem;

namespace {

TEST(PythonStage, TheRecordersCommandLineCarriesTheStageAsTheHarnessWouldGetIt) {
  kb::PythonRecorderCall c{"/opt/py/bin/python3", "/srv/kfleet/kernels/harness", "/cache/e1/kfleet-measure",
                           "/run/7/bundle/attn.py", "triton", "", "/run/7/device-code-1",
                           "/run/7/py-cache", "/run/7/launches-1.txt"};
  const auto argv = kb::python_recorder_argv(c, {"correctness", "--case", "small", "--shape", "B=1,H=2,S=128,D=64"});
  const std::vector<std::string> want = {
      "/opt/py/bin/python3", "-B", "-s", "/srv/kfleet/kernels/harness/python/kfleet_record.py",
      "--measure", "/cache/e1/kfleet-measure", "--source", "/run/7/bundle/attn.py", "--language", "triton",
      "--device-code-dir", "/run/7/device-code-1", "--cache-dir", "/run/7/py-cache",
      "correctness", "--case", "small", "--shape", "B=1,H=2,S=128,D=64",
      "--record", "/run/7/launches-1.txt"};
  EXPECT_EQ(argv, want);
  c.entry = "launch_bn64";
  const auto with_entry = kb::python_recorder_argv(c, {"benchmark"});
  EXPECT_EQ(std::vector<std::string>(with_entry.begin() + 10, with_entry.begin() + 12),
            (std::vector<std::string>{"--entry", "launch_bn64"}));
  // kfleet's torch.compile reference: the recorder wraps the entry in torch.compile.
  c.source = "/srv/kfleet/kernels/problems/rmsnorm/reference_torch.py";
  c.language = "torch";
  c.entry = "kfleet_problem_launch";
  c.torch_compile = "max-autotune-no-cudagraphs";
  const auto compiled = kb::python_recorder_argv(c, {"benchmark"});
  EXPECT_EQ(std::vector<std::string>(compiled.begin() + 6, compiled.begin() + 14),
            (std::vector<std::string>{"--source", c.source, "--language", "torch", "--entry",
                                      "kfleet_problem_launch", "--torch-compile",
                                      "max-autotune-no-cudagraphs"}));
}

// Exit 3 with a setup error printed before the recorder announced the job's code is the fleet's
// (a missing torch or triton, no GPU); after that line the job's code runs in the process and
// could print the same, so it is the kernel's; other statuses are never the fleet's here.
TEST(PythonStage, ARecorderThatCannotStartIsTheFleetsSetupOnlyBeforeTheJobsCode) {
  using nlohmann::json;
  const json setup = {{"type", "error"}, {"phase", "setup"},
                      {"message", "the agent's Python cannot import triton (No module named 'triton')"}};
  const json job_code = {{"type", "job_code"}, {"source", "attn.py"}};
  EXPECT_EQ(kb::python_recorder_setup_failure(3, {setup}),
            "the agent's Python cannot import triton (No module named 'triton')");
  EXPECT_EQ(kb::python_recorder_setup_failure(3, {json{{"type", "log"}}, setup}),
            "the agent's Python cannot import triton (No module named 'triton')");
  EXPECT_EQ(kb::python_recorder_setup_failure(3, {job_code, setup}), "");
  EXPECT_EQ(kb::python_recorder_setup_failure(4, {setup}), "");
  EXPECT_EQ(kb::python_recorder_setup_failure(3, {json{{"type", "error"}, {"phase", "record"},
                                                       {"message", "refused"}}}),
            "");
  EXPECT_EQ(kb::python_recorder_setup_failure(3, {}), "");  // said nothing: not known to be setup
}

TEST(PythonStage, TheSandboxReadsTheInstallTheCompilerAndCuda) {
  kb::PythonRuntime py;
  py.python = "/opt/py/bin/python3";
  py.paths = {"/opt/py", "/opt/py/lib/python3.12/site-packages"};
  py.cc = "/usr/bin/cc";
  py.cuda_home = "/usr/local/cuda";
  const auto paths = kb::python_recorder_read_paths(py, "/srv/kfleet/kernels/harness");
  for (const char* p : {"/opt/py", "/opt/py/bin", "/opt/py/lib/python3.12/site-packages", "/usr/bin",
                        "/usr/local/cuda", "/srv/kfleet/kernels/harness/python"})
    EXPECT_NE(std::find(paths.begin(), paths.end(), p), paths.end()) << p;
}

TEST(PythonStage, TheRecordersPathHasTheVenvsToolsForLoadInline) {
  kb::PythonRuntime py;
  py.python = "/opt/torch/.venv/bin/python3";  // ninja is beside it, as pip installs it
  EXPECT_EQ(kb::python_recorder_path_env(py, "/usr/local/cuda"),
            "/usr/local/cuda/bin:/opt/torch/.venv/bin:/usr/bin:/bin");
  py.python = "/usr/bin/python3";  // the system's Python: no folder twice
  EXPECT_EQ(kb::python_recorder_path_env(py, "/usr/local/cuda"), "/usr/local/cuda/bin:/usr/bin:/bin");
}

TEST(PythonStage, InductorCompilesInTheRecorderItselfUnderAMemoryLimit) {
  constexpr std::uint64_t GiB = 1ull << 30;
  EXPECT_EQ(kb::recorder_compile_workers(8 * GiB), 1u);   // the default sandbox: no worker pool
  EXPECT_EQ(kb::recorder_compile_workers(64 * GiB), 1u);
  EXPECT_EQ(kb::recorder_compile_workers(0), 0u);         // no limit: inductor's default
}

class DeviceCodeDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfleet_pydc_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void file(const std::string& name) { std::ofstream(dir_ / name) << "x"; }
  fs::path dir_;
};

TEST_F(DeviceCodeDir, ImagesTheRecorderWroteAreListedSorted) {
  file("ffff000011112222.fatbin");
  file("0123456789abcdef.cubin");
  auto r = kb::python_device_code(dir_.string());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (dir_ / "0123456789abcdef.cubin").string() + "," + (dir_ / "ffff000011112222.fatbin").string());
}

TEST_F(DeviceCodeDir, AnythingElseIsTheJobsFailureNamed) {
  file("0123456789abcdef.cubin");
  fs::create_symlink("/etc/passwd", dir_ / "aaaaaaaaaaaaaaaa.cubin");
  auto r = kb::python_device_code(dir_.string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'aaaaaaaaaaaaaaaa.cubin'"), std::string::npos) << r.error().message;
  fs::remove(dir_ / "aaaaaaaaaaaaaaaa.cubin");
  file("evil,name.cubin");
  EXPECT_FALSE(kb::python_device_code(dir_.string()));
  fs::remove(dir_ / "evil,name.cubin");
  fs::create_directory(dir_ / "0123456789abcdee.cubin");
  EXPECT_FALSE(kb::python_device_code(dir_.string()));
}

TEST_F(DeviceCodeDir, ALaunchThatDeclinedEveryRecordingIsSaidToHave) {
  const std::string list = (dir_ / "launches.txt").string();
  std::ofstream(list) << "kfleet-launch-list 1\nlist correctness\nstatus 1\nargs 00\nend\n"
                         "list benchmark\nstatus 1\nargs 00\nend\n";
  EXPECT_NE(kb::python_launches_declined(list).find("declined the case"), std::string::npos);
  std::ofstream(list) << "kfleet-launch-list 1\nlist correctness\nstatus 1\nend\nlist b\nstatus 0\nend\n";
  EXPECT_EQ(kb::python_launches_declined(list), "");  // one recording launched: not declined
  std::ofstream(list) << "garbage\n";
  EXPECT_EQ(kb::python_launches_declined(list), "");
  EXPECT_EQ(kb::python_launches_declined((dir_ / "missing").string()), "");
}

TEST_F(DeviceCodeDir, NoDeviceCodeIsNamed) {
  auto r = kb::python_device_code(dir_.string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("wrote no device code"), std::string::npos);
  EXPECT_FALSE(kb::python_device_code((dir_ / "missing").string()));
}

}  // namespace
