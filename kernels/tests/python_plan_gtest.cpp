// The plan kfleet-measure --plan writes for the Python recorder (python_plan.hpp): the args'
// fields as torch views need them, read from the ABI structs themselves (no GPU).
#include "python_plan.hpp"

#include "options.hpp"
#include "problem_spec.hpp"

#include <cstring>

#include <gtest/gtest.h>

#include "kfleet_harness/abi.h"

namespace kfleet::harness {
namespace {

template <typename T>
std::vector<std::uint8_t> bytes_of(const T& v) {
  const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
  return std::vector<std::uint8_t>(b, b + sizeof v);
}

void* at(std::uint64_t va) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(va)); }

TEST(PythonPlan, AttentionFieldsNameEveryTensorWithItsAddressDtypeAndShape) {
  kfleet_attention_args a{};
  a.abi_version = KFLEET_ABI_VERSION;
  a.batch = 2, a.heads = 8, a.seq_len = 512, a.head_dim = 64, a.causal = 1;
  a.q_dtype = KFLEET_FP16, a.kv_dtype = KFLEET_FP8_E4M3, a.out_dtype = KFLEET_FP16;
  a.q = at(0x600000000000), a.k = at(0x600000200000), a.v = at(0x600000400000);
  a.o = at(0x600000600000), a.workspace = at(0x600000800000), a.workspace_bytes = 64 << 20;
  a.q_scale = 1, a.k_scale = 1.0f / 448, a.v_scale = 1.0f / 448, a.softmax_scale = 0.125f;
  std::string err;
  const std::string j = args_fields_json("attention", bytes_of(a), &err);
  ASSERT_EQ(err, "");
  EXPECT_NE(j.find("{\"name\":\"q\",\"va\":105553116266496,\"bytes\":1048576,\"dtype\":\"fp16\","
                   "\"shape\":[2,8,512,64]}"), std::string::npos) << j;
  EXPECT_NE(j.find("{\"name\":\"k\",\"va\":105553118363648,\"bytes\":524288,\"dtype\":\"fp8_e4m3\""),
            std::string::npos) << j;
  EXPECT_NE(j.find("{\"name\":\"workspace\",\"va\":105553124655104,\"bytes\":67108864,\"dtype\":\"u8\","
                   "\"shape\":[67108864]}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"causal\":true"), std::string::npos);
  // %.9g gives a float back exactly: the scale the launch reads is the one the args hold.
  EXPECT_NE(j.find("\"k_scale\":0.00223214296"), std::string::npos) << j;
  EXPECT_EQ(static_cast<float>(0.00223214296), 1.0f / 448);
  EXPECT_NE(j.find("\"softmax_scale\":0.125"), std::string::npos);
}

TEST(PythonPlan, ScaledMmFollowsTheBLayoutAndLeavesAnAbsentBiasNull) {
  kfleet_scaled_mm_args a{};
  a.abi_version = KFLEET_ABI_VERSION;
  a.m = 128, a.n = 256, a.k = 64, a.b_layout = KFLEET_B_KN;
  a.a_dtype = a.b_dtype = KFLEET_FP8_E4M3, a.out_dtype = KFLEET_BF16;
  a.a = at(0x600000000000), a.b = at(0x600000200000), a.d = at(0x600000400000);
  a.a_scale = 0.5f, a.b_scale = 0.25f;
  std::string err;
  const std::string j = args_fields_json("scaled_mm", bytes_of(a), &err);
  ASSERT_EQ(err, "");
  EXPECT_NE(j.find("{\"name\":\"b\",\"va\":105553118363648,\"bytes\":16384,\"dtype\":\"fp8_e4m3\","
                   "\"shape\":[64,256]}"), std::string::npos) << j;
  EXPECT_NE(j.find("{\"name\":\"bias\",\"va\":0,\"bytes\":0,\"dtype\":\"bf16\",\"shape\":[256]}"),
            std::string::npos) << j;
  EXPECT_NE(j.find("\"b_layout\":\"kn\""), std::string::npos);
  EXPECT_NE(j.find("{\"name\":\"d\",\"va\":105553120460800,\"bytes\":65536,\"dtype\":\"bf16\""),
            std::string::npos) << j;
}

TEST(PythonPlan, ABadStructIsNamedNotGuessed) {
  std::string err;
  EXPECT_EQ(args_fields_json("attention", std::vector<std::uint8_t>(12), &err), "");
  EXPECT_NE(err.find("the attention args are 12 bytes, not"), std::string::npos) << err;
  kfleet_attention_args a{};
  a.q_dtype = static_cast<kfleet_dtype>(9);
  EXPECT_EQ(args_fields_json("attention", bytes_of(a), &err), "");
  EXPECT_NE(err.find("tensor q has dtype 9"), std::string::npos) << err;
  EXPECT_EQ(args_fields_json("conv", {}, &err), "");
  EXPECT_NE(err.find("family conv has no Python launch ABI"), std::string::npos);
}

TEST(PythonPlan, ThePlanHoldsEachRecordingsArgsBuffersAndFields) {
  kfleet_attention_args a{};
  a.abi_version = KFLEET_ABI_VERSION;
  a.batch = a.heads = a.seq_len = a.head_dim = 1;
  PlanRecording r{"correctness seed 3", bytes_of(a), {{"input Q", 0x600000000000ull, 2}}};
  std::string err;
  const std::string j = plan_json("attention", 0x600000000000ull, 0x610000000000ull, {r}, &err);
  ASSERT_EQ(err, "");
  EXPECT_EQ(j.rfind("{\"type\":\"plan\",\"version\":1,\"family\":\"attention\","
                    "\"arena\":[105553116266496,106652627894272],\"recordings\":[{\"what\":"
                    "\"correctness seed 3\",\"args\":\"01000000", 0), 0u) << j;
  EXPECT_NE(j.find("\"buffers\":[{\"name\":\"input Q\",\"va\":105553116266496,\"bytes\":2}]"),
            std::string::npos) << j;
}

// A problem of the library: the recorder's args carry the spec's names, each tensor's role, the
// dims and scalars by name, read back from the very kfleet_problem_args bytes.
ProblemSpec rope_like() {
  ProblemSpec spec;
  spec.problem = "rope";
  spec.version = 2;
  spec.dims = {"T", "D"};
  spec.scalars = {{"eps", "fp32"}, {"window", "int32"}};
  spec.tensors = {{"q", KFLEET_TENSOR_INOUT, KFLEET_BF16, {}},
                  {"positions", KFLEET_TENSOR_INPUT, KFLEET_INT32, {}},
                  {"out", KFLEET_TENSOR_OUTPUT, KFLEET_FP32, {}}};
  SpecCase c;
  c.name = "small";
  c.dims = {8, 64};
  c.scalars = {1e-6, 4096};
  c.shapes = {{8, 64}, {8}, {8, 64}};
  spec.cases = {c};
  return spec;
}

TEST(PythonPlan, AProblemsFieldsCarryTheSpecsNamesRolesDimsAndScalars) {
  const ProblemSpec spec = rope_like();
  const SpecCase& c = spec.cases[0];
  kfleet_problem_args args{};
  const std::string built = problems::build_problem_args(
      spec_args(spec, c, {0x600000000000ull, 0x600000200000ull, 0x600000400000ull}, c.scalars,
                0x600000600000ull, 1 << 20),
      &args);
  ASSERT_EQ(built, "");
  std::string err;
  const std::string j = problem_fields_json(spec, c, bytes_of(args), &err);
  ASSERT_EQ(err, "");
  EXPECT_NE(j.find("{\"name\":\"q\",\"va\":105553116266496,\"bytes\":1024,\"dtype\":\"bf16\","
                   "\"shape\":[8,64],\"role\":\"inout\"}"), std::string::npos) << j;
  EXPECT_NE(j.find("{\"name\":\"positions\",\"va\":105553118363648,\"bytes\":32,\"dtype\":\"int32\","
                   "\"shape\":[8],\"role\":\"input\"}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"dtype\":\"fp32\",\"shape\":[8,64],\"role\":\"output\"}"), std::string::npos) << j;
  EXPECT_NE(j.find("{\"name\":\"workspace\",\"va\":105553122557952,\"bytes\":1048576"), std::string::npos) << j;
  EXPECT_NE(j.find("\"T\":8,\"D\":64,\"eps\":1e-06,\"window\":4096"), std::string::npos) << j;
  EXPECT_NE(j.find("\"problem\":\"rope\",\"problem_version\":2"), std::string::npos) << j;
  // The same bytes under another family's reading are refused by size, not misread.
  EXPECT_EQ(args_fields_json("attention", bytes_of(args), &err), "");
  EXPECT_NE(err.find("not"), std::string::npos);
}

TEST(PythonPlan, AProblemWhoseFieldsShareANameIsRefused) {
  ProblemSpec spec = rope_like();
  spec.dims = {"T", "q"};  // a dim named as a tensor: one attribute in Python
  const SpecCase& c = spec.cases[0];
  kfleet_problem_args args{};
  ASSERT_EQ(problems::build_problem_args(
                spec_args(spec, c, {0x600000000000ull, 0x600000200000ull, 0x600000400000ull},
                          c.scalars, 0, 0), &args), "");
  std::string err;
  EXPECT_EQ(problem_fields_json(spec, c, bytes_of(args), &err), "");
  EXPECT_NE(err.find("names two of its fields 'q'"), std::string::npos) << err;
}

TEST(PythonPlan, ThePlanIsAStageOptionThatExcludesRecordAndReplay) {
  Options o;
  const char* ok[] = {"kfleet-measure", "correctness", "--shape", "B=1,H=2,S=128,D=64", "--plan", "/run/p.json"};
  EXPECT_EQ(parse_options(6, ok, &o), "");
  EXPECT_EQ(o.plan_path, "/run/p.json");
  const char* both[] = {"kfleet-measure", "correctness", "--plan", "p.json", "--record", "l.txt"};
  EXPECT_NE(parse_options(6, both, &o).find("--plan excludes --record and --replay"), std::string::npos);
  const char* empty[] = {"kfleet-measure", "benchmark", "--plan", ""};
  EXPECT_NE(parse_options(4, empty, &o), "");
}

}  // namespace
}  // namespace kfleet::harness
