// Replay mode's launch list on recorded data (no GPU): the text format and its errors, the
// refusals the recorder and the measurer apply, and the graph the measurer rebuilds.
#include "launch_list.hpp"

#include <cstring>

#include <gtest/gtest.h>

namespace kfleet::harness {
namespace {

// What the recorder wrote for kernels/suite/fa_s512.cu's benchmark on an H200 (shape
// B=2,H=8,S=512,D=64): one kernel node whose 48-byte Params hold the five buffers' addresses.
const char* kRecorded =
    "kfleet-launch-list 1\n"
    "list benchmark\n"
    "status 0\n"
    "args 0100000002000000080000000002000040000000000000000000000000000000000000000000000000000000"
    "006000000000200000600000000040000060000000006000006000000000803f0000803f0000803f0000003e0000"
    "8000006000000000000400000000\n"
    "buffer 0x600000000000 1048576 input Q\n"
    "buffer 0x600000200000 1048576 input K\n"
    "buffer 0x600000400000 1048576 input V\n"
    "buffer 0x600000600000 1048576 output\n"
    "buffer 0x600000800000 67108864 workspace\n"
    "kernel _ZN43_GLOBAL__N__7b29f2e5_10_fa_s512_cu_7a23aae22wg13fa_s512_wgmmaENS_6ParamsE 8 16 1 "
    "256 1 1 0 0 0 148480 148480 0 0:48 "
    "000000000060000000002000006000000000400000600000000060000060000000020000000000003baa383e0000803f\n"
    "end\n";

LaunchList recorded() {
  std::vector<LaunchList> lists;
  EXPECT_EQ(parse_launch_lists(kRecorded, &lists), "");
  EXPECT_EQ(lists.size(), 1u);
  return lists.at(0);
}

std::string parse_error(const std::string& text) {
  std::vector<LaunchList> lists;
  return parse_launch_lists(text, &lists);
}

LaunchNode kernel(const std::string& name, std::vector<std::uint64_t> words) {
  LaunchNode n;
  n.kind = LaunchNode::Kind::kernel;
  n.kernel.function = name;
  n.kernel.params.resize(words.size() * 8);
  std::memcpy(n.kernel.params.data(), words.data(), n.kernel.params.size());
  n.kernel.slots.push_back({0, static_cast<std::uint32_t>(n.kernel.params.size())});
  return n;
}

constexpr std::uint64_t kLo = 0x600000000000ull, kHi = kLo + (1ull << 40);

LaunchList with_buffers() {
  LaunchList l;
  l.buffers = {{"input A", kLo, 4096}, {"output", kLo + 0x200000, 8192}};
  return l;
}

TEST(LaunchListFormat, RecordedListRoundTrips) {
  const LaunchList l = recorded();
  EXPECT_EQ(l.what, "benchmark");
  ASSERT_EQ(l.nodes.size(), 1u);
  EXPECT_EQ(l.nodes[0].kind, LaunchNode::Kind::kernel);
  EXPECT_EQ(l.nodes[0].kernel.grid[0], 8u);
  EXPECT_EQ(l.nodes[0].kernel.grid[1], 16u);
  EXPECT_EQ(l.nodes[0].kernel.block[0], 256u);
  EXPECT_EQ(l.nodes[0].kernel.shared_bytes, 148480u);
  EXPECT_EQ(l.buffers.size(), 5u);
  EXPECT_EQ(l.buffers[4].name, "workspace");
  EXPECT_EQ(serialize({l}), kRecorded);
}

TEST(LaunchListFormat, EveryNodeKindRoundTrips) {
  LaunchList l = with_buffers();
  l.what = "correctness seed 2";
  l.status = 1;
  l.args = {1, 2, 3};
  LaunchNode k = kernel("_Z1kPf", {kLo});
  k.kernel.cluster[0] = 2, k.kernel.cluster[1] = 1, k.kernel.cluster[2] = 1;
  k.kernel.non_portable_cluster = 1;
  LaunchNode m;
  m.kind = LaunchNode::Kind::memset;
  m.memset = {kLo + 0x200000, 0, 2048, 1, 0xFFFFFFFF, 4};
  LaunchNode c;
  c.kind = LaunchNode::Kind::memcpy;
  c.memcpy = {kLo + 0x200000, kLo, 4096};
  l.nodes = {k, m, c, LaunchNode{}};
  l.edges = {{0, 1}, {1, 2}, {2, 3}};
  std::vector<LaunchList> back;
  ASSERT_EQ(parse_launch_lists(serialize({l, l}), &back), "");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(launch_list_difference(l, back[1]), "");
  EXPECT_EQ(serialize(back), serialize({l, l}));
}

TEST(LaunchListFormat, MalformedInputSaysWhereAndWhat) {
  EXPECT_NE(parse_error("").find("empty file"), std::string::npos);
  EXPECT_NE(parse_error("{\"json\":1}\n").find("line 1: expected 'kfleet-launch-list 1'"), std::string::npos);
  const std::string head = "kfleet-launch-list 1\nlist x\n";
  EXPECT_NE(parse_error(head + "frob 1\nend\n").find("line 3: unknown record 'frob'"), std::string::npos);
  EXPECT_NE(parse_error(head + "kernel k 1 1 1\nend\n").find("wants 15 fields, got 4"), std::string::npos);
  EXPECT_NE(parse_error(head + "kernel k 1 1 1 1 1 1 0 0 0 0 -1 -1 0:8 zz\nend\n").find("not hex"),
            std::string::npos);
  EXPECT_NE(parse_error(head + "kernel k 1 1 1 1 1 1 0 0 0 0 -1 -1 0:16 0011\nend\n")
                .find("slot lies past the parameter bytes"), std::string::npos);
  EXPECT_NE(parse_error(head + "kernel k x 1 1 1 1 1 0 0 0 0 -1 -1 - -\nend\n").find("not a number"),
            std::string::npos);
  EXPECT_NE(parse_error(head + "empty\nedge 0 5\nend\n").find("names a node the list does not have"),
            std::string::npos);
  EXPECT_NE(parse_error(head + "empty\nempty\nedge 0 1 sideways\nend\n").find("'programmatic' or 'launch-completion'"),
            std::string::npos);
  EXPECT_NE(parse_error(head + "empty\n").find("no 'end' (a truncated file)"), std::string::npos);
  EXPECT_NE(parse_error(head + "list y\n").find("line 3: 'list' before the previous list's 'end'"),
            std::string::npos);
  EXPECT_NE(parse_error("kfleet-launch-list 1\nempty\n").find("outside a list"), std::string::npos);
  EXPECT_NE(parse_error(head + "memset 0x10 0 4 1 0 3\nend\n").find("element size must be 1, 2 or 4"),
            std::string::npos);
  EXPECT_NE(parse_error(head + "status one\nend\n").find("'status' wants one integer"), std::string::npos);
}

TEST(LaunchListRefusals, HonestRecordingPasses) {
  const LaunchList l = recorded();
  // Every address the kernel holds is device memory, and all of it lies in the buffers.
  EXPECT_EQ(check_addresses(l, kLo, kHi, [](std::uint64_t v) { return v >= kLo && v < kHi; }), "");
}

TEST(LaunchListRefusals, AddressInsideTheArenaButOutsideEveryBuffer) {
  LaunchList l = with_buffers();
  l.nodes = {kernel("_Z1kPf", {kLo, kLo + 0x100000})};
  const std::string why = check_addresses(l, kLo, kHi, nullptr);
  EXPECT_NE(why.find("kernel _Z1kPf"), std::string::npos);
  EXPECT_NE(why.find("byte 8"), std::string::npos);
  EXPECT_NE(why.find("reserved range but outside its buffers"), std::string::npos);
}

TEST(LaunchListRefusals, DeviceMemoryTheHarnessDidNotGive) {
  LaunchList l = with_buffers();
  const std::uint64_t own = 0x7f1234000000ull;  // the launch's own cudaMalloc, or the reference
  l.nodes = {kernel("_Z5cachePf", {kLo, own})};
  const std::string why = check_addresses(l, kLo, kHi, [&](std::uint64_t v) { return v == own; });
  EXPECT_NE(why.find("device memory the harness did not give the launch"), std::string::npos);
  // The same word where it is not device memory (a scale, a count) is no address.
  EXPECT_EQ(check_addresses(l, kLo, kHi, [](std::uint64_t) { return false; }), "");
}

TEST(LaunchListRefusals, OnePastTheEndIsInsideItsBuffer) {
  LaunchList l = with_buffers();
  l.nodes = {kernel("_Z1kPf", {kLo + 4096, kLo + 0x200000 + 8192})};
  EXPECT_EQ(check_addresses(l, kLo, kHi, nullptr), "");
}

TEST(LaunchListRefusals, MemsetAndMemcpyMustStayInOneBuffer) {
  LaunchList l = with_buffers();
  LaunchNode m;
  m.kind = LaunchNode::Kind::memset;
  m.memset = {kLo + 0x200000, 0, 4096, 1, 0, 4};  // 16 KiB into an 8 KiB output
  l.nodes = {m};
  EXPECT_NE(check_addresses(l, kLo, kHi, nullptr).find("memset (operation 0)"), std::string::npos);
  LaunchNode c;
  c.kind = LaunchNode::Kind::memcpy;
  c.memcpy = {kLo + 0x200000, 0x7ffc00001000ull, 64};  // from a host stack address
  l.nodes = {c};
  EXPECT_NE(check_addresses(l, kLo, kHi, nullptr).find("host memory"), std::string::npos);
  c.memcpy = {kLo + 0x200000, kLo, 4096};
  l.nodes = {c};
  EXPECT_EQ(check_addresses(l, kLo, kHi, nullptr), "");
}

// Found by fuzz_launch_list: a memset whose pitch or width makes its span wrap past 2^64 was
// checked as a few bytes inside the output, and would have been handed to the GPU whole.
TEST(LaunchListRefusals, MemsetSpanThatWrapsIsRefused) {
  LaunchList l = with_buffers();
  LaunchNode m;
  m.kind = LaunchNode::Kind::memset;
  m.memset = {kLo + 0x200000, 0xfffffffffffff000ull, 4096, 2, 0, 1};  // pitch * 1 + 4096 wraps to 0
  l.nodes = {m};
  EXPECT_NE(check_addresses(l, kLo, kHi, nullptr).find("covers more bytes than an address can hold"),
            std::string::npos);
  l.nodes[0].memset = {kLo + 0x200000, 0, 0x4000000000000000ull, 1, 0, 4};  // width * 4 wraps
  EXPECT_NE(check_addresses(l, kLo, kHi, nullptr).find("covers more bytes"), std::string::npos);
  l.nodes[0].memset = {kLo + 0x200000, 4096, 1024, 2, 0, 1};  // two rows of an 8 KiB output
  EXPECT_EQ(check_addresses(l, kLo, kHi, nullptr), "");
}

// Found by fuzz_launch_list: a number is the whole word. A NUL byte inside one ended it early
// for strtoull, so "0x600000000<NUL>garbage" was read as 0x600000000; a tab is no separator.
TEST(LaunchListFormat, NumbersAreWholeWords) {
  const std::string head = "kfleet-launch-list 1\nlist x\n";
  EXPECT_NE(parse_error(head + std::string("buffer 0x6000\0zz 8 output\nend\n", 30))
                .find("'buffer' wants VA BYTES NAME"), std::string::npos);
  EXPECT_NE(parse_error(head + "status\t0\nend\n").find("unknown record"), std::string::npos);
  EXPECT_NE(parse_error(head + "edge +0 1\nend\n").find("'edge' wants FROM TO"), std::string::npos);
  EXPECT_NE(parse_error(head + "status 1\r\nend\n").find("'status' wants one integer"),
            std::string::npos);
  EXPECT_EQ(parse_error(head + "status -3\nbuffer 0x10 8  two  words\nend\n"), "");
}

TEST(LaunchListRefusals, TwoRecordingsThatDifferAreNamed) {
  const LaunchList a = recorded();
  LaunchList b = a;
  b.nodes[0].kernel.grid[0] = 9;
  EXPECT_NE(launch_list_difference(a, b).find("operation 0 was"), std::string::npos);
  b = a;
  b.nodes.push_back(LaunchNode{});
  EXPECT_EQ(launch_list_difference(a, b), "1 operations the first time, 2 the second");
  b = a;
  b.status = 1;
  EXPECT_EQ(launch_list_difference(a, b), "the launch function returned 0 then 1");
  b = a;
  b.nodes[0].kernel.params[40] ^= 1;  // a scale that changed between two launches
  EXPECT_NE(launch_list_difference(a, b), "");
}

TEST(GraphRebuild, RecordedSingleKernelIsAChain) {
  const LaunchList l = recorded();
  GraphPlan plan;
  ASSERT_EQ(plan_graph(l, &plan), "");
  EXPECT_EQ(plan.order, std::vector<std::uint32_t>{0});
  EXPECT_TRUE(is_chain(plan));
  // The parameters point into the buffers mapped at the same addresses in the measurer.
  std::uint64_t q = 0, o = 0;
  std::memcpy(&q, &l.nodes[0].kernel.params[0], 8);
  std::memcpy(&o, &l.nodes[0].kernel.params[24], 8);
  EXPECT_EQ(q, l.buffers[0].va);
  EXPECT_EQ(o, l.buffers[3].va);
}

TEST(GraphRebuild, SideStreamsJoinedBackFormADiamondNotAChain) {
  LaunchList l;
  l.nodes.assign(4, LaunchNode{});
  l.edges = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  GraphPlan plan;
  ASSERT_EQ(plan_graph(l, &plan), "");
  EXPECT_FALSE(is_chain(plan));
  ASSERT_EQ(plan.order.size(), 4u);
  EXPECT_EQ(plan.order.front(), 0u);
  EXPECT_EQ(plan.order.back(), 3u);
  EXPECT_EQ(plan.deps[3], (std::vector<std::uint32_t>{1, 2}));
}

// A library kernel launched with programmatic stream serialization (CUDA's programmatic
// dependent launch) is captured as a programmatic edge: the next kernel may begin before it
// ends. The list keeps the edge's port, and the plan adds it apart from the ordinary edges, so
// replay does not turn it into a full wait (and the launch gap it hides).
TEST(GraphRebuild, ProgrammaticEdgesKeepTheirPortAndAreAddedApart) {
  LaunchList l;
  l.what = "benchmark";
  l.nodes = {kernel("_Z1aPf", {kLo}), kernel("_Z1bPf", {kLo}), kernel("_Z1cPf", {kLo})};
  l.edges = {{0, 1, kEdgePortProgrammatic}, {1, 2, kEdgePortLaunchCompletion}, {0, 2}};
  const std::string text = serialize({l});
  EXPECT_NE(text.find("edge 0 1 programmatic\n"), std::string::npos);
  EXPECT_NE(text.find("edge 1 2 launch-completion\n"), std::string::npos);
  EXPECT_NE(text.find("edge 0 2\n"), std::string::npos);
  std::vector<LaunchList> back;
  ASSERT_EQ(parse_launch_lists(text, &back), "");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].edges, l.edges);
  EXPECT_EQ(launch_list_difference(l, back[0]), "");
  LaunchList ordinary = l;
  ordinary.edges[0].port = 0;
  EXPECT_EQ(launch_list_difference(l, ordinary), "the dependencies between operations differ");

  GraphPlan plan;
  ASSERT_EQ(plan_graph(l, &plan), "");
  EXPECT_EQ(plan.order, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_TRUE(plan.deps[1].empty());
  EXPECT_EQ(plan.deps[2], (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(plan.programmatic, (std::vector<LaunchEdge>{{0, 1, 1}, {1, 2, 2}}));
  EXPECT_FALSE(is_chain(plan));
  // Only kernels have the ports: a programmatic edge to a memset is refused.
  l.nodes[2].kind = LaunchNode::Kind::memset;
  EXPECT_EQ(plan_graph(l, &plan), "edge 1 -> 2 is programmatic but not from a kernel to a kernel");
}

TEST(GraphRebuild, CyclesRepeatsAndSelfEdgesAreErrors) {
  LaunchList l;
  l.nodes.assign(3, LaunchNode{});
  GraphPlan plan;
  l.edges = {{0, 1}, {1, 2}, {2, 0}};
  EXPECT_EQ(plan_graph(l, &plan), "the dependencies form a cycle");
  l.edges = {{0, 1}, {0, 1}};
  EXPECT_NE(plan_graph(l, &plan).find("listed twice"), std::string::npos);
  l.edges = {{1, 1}};
  EXPECT_NE(plan_graph(l, &plan).find("depends on itself"), std::string::npos);
  l.edges = {{0, 7}};
  EXPECT_NE(plan_graph(l, &plan).find("missing node"), std::string::npos);
  l.edges = {{0, 1}, {1, 2}};
  ASSERT_EQ(plan_graph(l, &plan), "");
  EXPECT_TRUE(is_chain(plan));
}

// A HIP launch's LDS (static, from the code object, plus the launch's dynamic bytes) against
// what a workgroup of the device has: the measuring process refuses a launch over it, naming
// the amounts (replay_hip.cu runs this before every kernel).
TEST(LaunchListRefusals, HipLaunchWithMoreLdsThanAWorkgroupHasIsRefused) {
  EXPECT_EQ(lds_over_limit("k", 32768, 32768, 65536, "gfx1151"), "");
  EXPECT_EQ(lds_over_limit("_Z1kPf", 65536, 256, 65536, "gfx1151"),
            "kernel _Z1kPf asks for 65792 bytes of LDS (65536 static + 256 dynamic, at its launch): a "
            "workgroup on gfx1151 has 65536; the launch is refused, since it would read memory it does not own");
  EXPECT_EQ(lds_over_limit("k", 1 << 20, 0, 0, "gfx1151"), "");  // the device said nothing: no guess
}

}  // namespace
}  // namespace kfleet::harness
