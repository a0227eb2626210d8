// The agent's Python for Triton and torch kernels (discovery/python.hpp): the probe run with a
// real python3 (which here has neither torch nor triton, and says so), fake interpreters, the
// probe's output (which GPUs run which language: common/tests/language_gtest.cpp).
#include "discovery/python.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace kb = kfleet::backends;
namespace fs = std::filesystem;

namespace {

class FakePython : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfleet_py_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string script(const std::string& body) {
    const fs::path p = dir_ / "python";
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    ::chmod(p.c_str(), 0755);
    return p.string();
  }
  fs::path dir_;
};

TEST(PythonProbe, TorchAndTritonGiveBothLanguages) {
  auto r = kb::parse_python_probe("/opt/py/bin/python3",
      "some import noise\nKFLEET_PYTHON_PROBE {\"python\": \"/opt/py/bin/python3\", "
      "\"python_version\": \"3.12.3\", \"torch\": \"2.11.0+cu130\", \"torch_cuda\": \"13.0\", "
      "\"keep_graph\": true, \"triton\": \"3.6.0\", \"paths\": [\"/opt/py\", \"relative\"], "
      "\"cc\": \"/usr/bin/cc\", \"cuda_home\": \"/usr/local/cuda\"}\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->languages, (std::vector<std::string>{"torch", "triton"}));
  EXPECT_TRUE(r->missing.empty());
  EXPECT_TRUE(r->keep_graph);
  EXPECT_EQ(r->paths, std::vector<std::string>{"/opt/py"});  // absolute paths only
  EXPECT_EQ(r->cc, "/usr/bin/cc");
  EXPECT_EQ(r->cuda_home, "/usr/local/cuda");
  const auto j = r->to_json();
  EXPECT_EQ(j["torch"], "2.11.0+cu130");
  EXPECT_EQ(j["triton"], "3.6.0");
  EXPECT_FALSE(j.contains("missing"));
}

TEST(PythonProbe, EachMissingPieceIsNamed) {
  auto no_triton = kb::parse_python_probe("py", "KFLEET_PYTHON_PROBE {\"torch\": \"2.11.0\", "
      "\"torch_cuda\": \"12.8\", \"triton_error\": \"ModuleNotFoundError: No module named 'triton'\"}");
  ASSERT_TRUE(no_triton);
  EXPECT_EQ(no_triton->languages, std::vector<std::string>{"torch"});
  ASSERT_EQ(no_triton->missing.size(), 1u);
  EXPECT_EQ(no_triton->missing[0], "triton: ModuleNotFoundError: No module named 'triton'");
  auto cpu_torch = kb::parse_python_probe("py", "KFLEET_PYTHON_PROBE {\"torch\": \"2.11.0+cpu\", "
      "\"torch_cuda\": \"\", \"triton\": \"3.6.0\"}");
  ASSERT_TRUE(cpu_torch);
  EXPECT_TRUE(cpu_torch->languages.empty());
  EXPECT_EQ(cpu_torch->missing.at(0), "torch 2.11.0+cpu was built without CUDA");
  EXPECT_FALSE(kb::parse_python_probe("py", "Python 2.7\n"));
}

TEST(PythonProbe, ARealPython3RunsTheProbe) {
  // CI's python3 has no torch: the probe still runs and says what is missing.
  auto r = kb::discover_python("python3", 60);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->python_version.empty());
  if (r->torch_version.empty()) {
    EXPECT_TRUE(r->languages.empty());
    ASSERT_FALSE(r->missing.empty());
    EXPECT_EQ(r->missing[0].rfind("torch: ", 0), 0u) << r->missing[0];
  }
}

TEST_F(FakePython, AnInterpreterThatFailsIsAnUnavailableSetupError) {
  auto r = kb::discover_python(script("echo broken >&2; exit 3"), 10);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, kfleet::Errc::unavailable);
  EXPECT_NE(r.error().message.find("broken"), std::string::npos) << r.error().message;
  EXPECT_FALSE(kb::discover_python((dir_ / "none").string(), 10));
}

TEST_F(FakePython, TheProbeLineIsReadFromItsOutput) {
  auto r = kb::discover_python(script("echo 'KFLEET_PYTHON_PROBE {\"python\": \"/x/python\", "
                                      "\"torch\": \"2.9.0\", \"torch_cuda\": \"12.8\", \"triton\": \"3.5.0\"}'"), 10);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->python, "/x/python");
  EXPECT_EQ(r->languages.size(), 2u);
}

}  // namespace
