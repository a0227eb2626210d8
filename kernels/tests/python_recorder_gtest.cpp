// The Python recorder's launch-list writer against the C++ parser (PYTHON.md):
// kernels/harness/python/kfleet_record.py run with python3 (no torch) on recorded data, a
// Triton attention kernel's capture as the driver gives it back; its list must parse with
// parse_launch_lists, pass the measurer's address check and plan, and its device-code file must
// be one device_code_in_file takes. Its refusals exit 4 with a record error naming the cause.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "device_code.hpp"
#include "launch_list.hpp"
#include "kfleet/testing/files.hpp"

namespace kfleet::harness {
namespace {
namespace fs = std::filesystem;

class PythonRecorder : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* t = std::getenv("TMPDIR");
    std::string pattern = std::string(t && *t ? t : "/tmp") + "/kfleet-pyrec-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    fixture_ = kfleet::testing::read_file(fs::path(KFLEET_SOURCE_DIR) / "kernels/tests/python/attention_capture.json");
    ASSERT_FALSE(fixture_.empty());
    // A cubin as the driver sees one: an ELF header saying EM_CUDA (190).
    std::string cubin(64, '\0');
    cubin.replace(0, 4, "\x7f" "ELF");
    cubin[4] = 2;
    cubin[18] = static_cast<char>(190);
    cubin += std::string(32, 'a');
    std::ofstream(dir_ / "attn.cubin", std::ios::binary) << cubin;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the recorder on `doc`; returns its exit status, its stdout in *out.
  int record(const std::string& doc, std::string* out) {
    std::ofstream(dir_ / "capture.json") << doc;
    const std::string cmd =
        "PYTHONDONTWRITEBYTECODE=1 python3 -B " KFLEET_SOURCE_DIR "/kernels/harness/python/kfleet_record.py"
        " --from-captures '" + (dir_ / "capture.json").string() + "' --record '" +
        (dir_ / "launches.txt").string() + "' --device-code-dir '" + (dir_ / "dc").string() + "' 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return -1;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
    const int st = ::pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  static std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
      s.replace(pos, from.size(), to);
    return s;
  }

  fs::path dir_;
  std::string fixture_;
};

TEST_F(PythonRecorder, ItsListParsesPassesTheMeasurersChecksAndNamesLoadableDeviceCode) {
  std::string out;
  ASSERT_EQ(record(fixture_, &out), 0) << out;
  EXPECT_NE(out.find("{\"type\":\"recorded\",\"lists\":1,\"operations\":2"), std::string::npos) << out;
  std::vector<LaunchList> lists;
  ASSERT_EQ(parse_launch_lists(kfleet::testing::read_file(dir_ / "launches.txt"), &lists), "");
  ASSERT_EQ(lists.size(), 1u);
  const LaunchList& l = lists[0];
  EXPECT_EQ(l.what, "benchmark");
  EXPECT_EQ(l.status, 0);
  EXPECT_EQ(l.args.size(), 104u);  // sizeof(kfleet_attention_args) on x86-64
  ASSERT_EQ(l.buffers.size(), 5u);
  EXPECT_EQ(l.buffers[4].name, "workspace");
  EXPECT_EQ(l.buffers[4].va, 0x600000800000ull);
  ASSERT_EQ(l.nodes.size(), 2u);
  ASSERT_EQ(l.nodes[0].kind, LaunchNode::Kind::kernel);
  const KernelNode& k = l.nodes[0].kernel;
  EXPECT_EQ(k.function, "_attn_fwd");
  EXPECT_EQ(k.grid[0], 4u);
  EXPECT_EQ(k.grid[1], 16u);
  EXPECT_EQ(k.block[0], 128u);
  EXPECT_EQ(k.shared_bytes, 98304u);
  EXPECT_EQ(k.max_dynamic_shared, 98304);
  ASSERT_EQ(k.slots.size(), 9u);  // Triton's two trailing scratch pointers included
  EXPECT_EQ(k.slots[8].offset, 56u);
  EXPECT_EQ(k.params.size(), 64u);
  EXPECT_EQ(l.nodes[1].kind, LaunchNode::Kind::memset);
  ASSERT_EQ(l.edges.size(), 1u);
  // The measurer's own checks on the list (replay.cu's checked_recording).
  EXPECT_EQ(check_addresses(l, 0x600000000000ull, 0x610000000000ull, nullptr), "");
  GraphPlan plan;
  EXPECT_EQ(plan_graph(l, &plan), "");
  EXPECT_TRUE(is_chain(plan));
  // The device code the agent passes as --device-code: one cubin, named by its content.
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir_ / "dc"))
    if (e.is_regular_file()) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].extension(), ".cubin");
  EXPECT_EQ(files[0].stem().string().size(), 16u);
  std::string code;
  EXPECT_EQ(device_code_in_file(kfleet::testing::read_file(files[0]), &code), "");
  EXPECT_EQ(code, kfleet::testing::read_file(dir_ / "attn.cubin"));
}

TEST_F(PythonRecorder, AKernelWithoutDeviceCodeIsRefusedByName) {
  std::string out;
  EXPECT_EQ(record(replace_all(fixture_, "\"image\": \"attn.cubin\"", "\"image\": null"), &out), 4);
  EXPECT_NE(out.find("\"phase\":\"record\""), std::string::npos) << out;
  EXPECT_NE(out.find("kernel _attn_fwd (operation 0) has no device code"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir_ / "launches.txt"));
}

TEST_F(PythonRecorder, AHostNodeIsRefused) {
  std::string out;
  EXPECT_EQ(record(replace_all(fixture_, "\"type\": \"memset\"", "\"type\": \"host\""), &out), 4);
  EXPECT_NE(out.find("the launch enqueued a host function node"), std::string::npos) << out;
}

TEST_F(PythonRecorder, AnAddressOutsideTheBuffersIsRefused) {
  std::string out;
  EXPECT_EQ(record(replace_all(fixture_, "\"params\": \"0000000000600000", "\"params\": \"0000000001600000"), &out), 4);
  EXPECT_NE(out.find("parameter 0 byte 0, holds 0x600100000000: an address in the harness's "
                     "reserved range but outside its buffers"), std::string::npos) << out;
}

TEST_F(PythonRecorder, TwoRecordingsThatDifferAreRefused) {
  std::string doc = fixture_;
  const std::size_t second = doc.find("\"grid\": [4, 16, 1]", doc.find("\"grid\": [4, 16, 1]") + 1);
  ASSERT_NE(second, std::string::npos);
  doc.replace(second, 18, "\"grid\": [8, 16, 1]");
  std::string out;
  EXPECT_EQ(record(doc, &out), 4);
  EXPECT_NE(out.find("two recordings of the same args differ (operation 0 was 'kernel _attn_fwd 4 16 1"),
            std::string::npos) << out;
}

}  // namespace
}  // namespace kfleet::harness
