// The harness's checks on the library's data (problem_checks.hpp: what kfleet-measure runs on a
// kernel's outputs) and the draws it fills inputs with (problem_inputs.hpp), on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "problem_test_support.hpp"
#include "case_spec.hpp"
#include "problem_checks.hpp"
#include "problem_cpu.hpp"
#include "numeric.hpp"
#include "problem_inputs.hpp"
#include "problem_spec.hpp"

namespace kfleet::harness {
namespace {

// The draws the harness fills inputs with (host and device run this same code).
TEST(ProblemInputs, DrawsFollowTheirDistributions) {
  RealDraw normal;
  normal.normal = 1;
  normal.a = 1.5;
  normal.b = 2;
  RealDraw uniform;
  uniform.a = -0.5;
  uniform.b = 0.25;
  const std::uint64_t seed = input_stream("rmsnorm", "case/small", 7, 0);
  EXPECT_NE(seed, input_stream("rmsnorm", "case/small", 7, 1));
  EXPECT_NE(seed, input_stream("rmsnorm", "case/small", 8, 0));
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = draw_real(normal, seed, static_cast<std::uint64_t>(i));
    EXPECT_LE(std::fabs(x - 1.5), 12.0);  // Irwin-Hall: within 6 std
    sum += x;
    sq += x * x;
    const double u = draw_real(uniform, seed, static_cast<std::uint64_t>(i));
    EXPECT_TRUE(u >= -0.5 && u < 0.25) << u;
    const auto k = draw_int(seed, static_cast<std::uint64_t>(i), -3, 4);
    EXPECT_TRUE(k >= -3 && k <= 4) << k;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 1.5, 0.02);
  EXPECT_NEAR(var, 4.0, 0.05);
  EXPECT_EQ(draw_real(normal, seed, 12345), draw_real(normal, seed, 12345));  // a pure function
  RealDraw amp;
  amp.amp_lo = 0.1;
  amp.amp_hi = 10;
  double lo = 1e9, hi = 0;
  for (std::uint64_t b = 0; b < 10000; ++b) {
    const double f = draw_amplitude(amp, seed, b);
    lo = std::min(lo, f);
    hi = std::max(hi, f);
  }
  EXPECT_GE(lo, 0.1);
  EXPECT_LE(hi, 10.0);
  EXPECT_LT(lo, 0.12);
  EXPECT_GT(hi, 8.0);
}

}  // namespace
}  // namespace kfleet::harness

namespace kfleet::problems {
namespace {

using harness::ProblemSpec;
using test_support::library;
using test_support::read_back;

// The harness's checks (problem_checks.hpp, what kfleet-measure runs) on the library's own data:
// the fp64 CPU reference, rounded to each output's dtype, passes every output's check, and
// every do-nothing output of the spec fails it, naming the output and the check.
TEST(HarnessProblemChecks, TheLibrarysReferencePassesAndEveryLazyOutputFails) {
  int checked = 0;
  for (const auto& def : library().problems) {
    if (def.abi != "generic") continue;
    const ProblemSpec spec = read_back(def);
    const ReferenceFn ref_fn = find_reference(def.name);
    ASSERT_NE(ref_fn, nullptr);
    for (const auto& c : def.cases) {
      if (!test_support::small(def, c)) continue;
      for (const std::uint64_t seed : {0u, 1u}) {
        auto data = make_case(def, c, seed);
        ASSERT_TRUE(data.ok());
        const Tensors refs = ref_fn(*data);
        harness::SpecInputs inputs(spec.tensors.size());
        for (std::size_t i = 0; i < spec.tensors.size(); ++i)
          if (spec.tensors[i].role != KFLEET_TENSOR_OUTPUT) inputs[i] = data->inputs.at(spec.tensors[i].name).real;
        const harness::SpecCase& sc = *spec.find_case(c.name);
        for (std::size_t k = 0; k < spec.outputs.size(); ++k) {
          const auto& out = spec.outputs[k];
          const auto& ref = refs.at(out.name).real;
          std::vector<double> perfect(ref.size());
          const kfleet_dtype dt = spec.tensors[static_cast<std::size_t>(out.slot)].dtype;
          for (std::size_t i = 0; i < ref.size(); ++i) perfect[i] = harness::round_to_dtype(dt, ref[i]);
          EXPECT_EQ(harness::problem_output_check(spec, sc, k, perfect, ref, inputs).reason, "")
              << def.name << " " << c.name << " seed " << seed;
          for (const auto& l : out.lazy) {
            const auto lazy = harness::problem_lazy_output(spec, sc, k, l, ref, inputs);
            const auto r = harness::problem_output_check(spec, sc, k, lazy, ref, inputs);
            EXPECT_EQ(r.reason.rfind("output " + out.name + " (" + out.check.kind + " check): ", 0), 0u)
                << def.name << " " << c.name << " " << harness::lazy_name(spec, l) << " gave '" << r.reason << "'";
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 40);
}

}  // namespace
}  // namespace kfleet::problems

namespace kfleet::harness {
namespace {

const char* kTopkSpec =
    "kfleet-problem-spec 2\n"
    "problem tk 1\n"
    "dims R V KK\n"
    "tensor x input fp32\n"
    "tensor idx output int32\n"
    "init x normal mean=0 std=1\n"
    "output idx idx\n"
    "check idx topk of=x largest=1\n"
    "lazy idx zeros\n"
    "case c\n"
    "case_dims c 1 6 2\n"
    "case_scalars c\n"
    "case_shape c x 1 6\n"
    "case_shape c idx 1 2\n"
    "case_cost c 6 32 0\n"
    "end\n";

TEST(HarnessProblemChecks, TopkAcceptsAnyOrderOfTiedIndicesOnly) {
  ProblemSpec s;
  ASSERT_EQ(parse_problem_spec(kTopkSpec, &s), "");
  const SpecCase& c = s.cases[0];
  SpecInputs inputs = {{3, 1, 3, 2, 3, 0}, {}};
  const std::vector<double> ref = {0, 2};  // values 3, 3
  EXPECT_EQ(problem_output_check(s, c, 0, {4, 0}, ref, inputs).reason, "");  // other tied indices
  EXPECT_EQ(problem_output_check(s, c, 0, {2, 4}, ref, inputs).reason, "");
  EXPECT_EQ(problem_output_check(s, c, 0, {2, 2}, ref, inputs).reason,
            "output idx (topk check): row 0, entry 1: index 2 appears twice");
  EXPECT_EQ(problem_output_check(s, c, 0, {0, 3}, ref, inputs).reason,
            "output idx (topk check): row 0, entry 1: index 3 holds 2; the top-k value there is 3 (ties may come "
            "in any order)");
  EXPECT_NE(problem_output_check(s, c, 0, {0, 6}, ref, inputs).reason.find("index 6 is outside [0, 6)"), std::string::npos);
  EXPECT_NE(problem_output_check(s, c, 0, {0, -1}, ref, inputs).reason.find("outside"), std::string::npos);
  const auto bad_ref = problem_output_check(s, c, 0, {0, 2}, {0, 9}, inputs);
  EXPECT_TRUE(bad_ref.reference_fault);
}

TEST(HarnessProblemChecks, PoisonLeftIsCountedPerDtype) {
  std::size_t unwritten = 0;
  const std::vector<std::uint8_t> bf16 = {0x80, 0x3f, 0xff, 0xff};  // 1.0, poison
  auto v = decode_output(KFLEET_BF16, bf16, 2, nullptr, &unwritten);
  EXPECT_EQ(v[0], 1.0);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(unwritten, 1u);
  const std::vector<std::uint8_t> i32 = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};  // -1, -1
  const std::vector<double> ref = {-1, 5};  // the first -1 is the right answer, the second poison
  v = decode_output(KFLEET_INT32, i32, 2, &ref, &unwritten);
  EXPECT_EQ(v[0], -1.0);
  EXPECT_EQ(unwritten, 1u);
  const std::vector<std::uint8_t> f32 = {0xff, 0xff, 0xff, 0xff};
  decode_output(KFLEET_FP32, f32, 1, nullptr, &unwritten);
  EXPECT_EQ(unwritten, 1u);
  EXPECT_EQ(round_to_dtype(KFLEET_BF16, 1.0 + 1.0 / 512), 1.0);  // bf16 has 8 significant bits
}

// Each integer width reads its own bytes at its own stride, and -1 counts as poison only where
// the reference does not hold -1: each array is chosen so that counting the other way (poison
// where the reference holds -1, or where the value is not -1) gives another number.
TEST(HarnessProblemChecks, IntegerPoisonIsMinusOneTheReferenceDoesNotHold) {
  std::size_t unwritten = 9;
  const std::vector<double> ref = {-1, 5, 7};
  const std::vector<std::uint8_t> i32 = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(decode_output(KFLEET_INT32, i32, 3, &ref, &unwritten), (std::vector<double>{-1, -1, -1}));
  EXPECT_EQ(unwritten, 2u);
  const std::vector<double> ref4 = {-1, 5, 7, 9};
  std::vector<std::uint8_t> i64(32, 0xff);  // -1, 3 * 2^32 + 2, -1, -1
  const std::uint8_t second[8] = {2, 0, 0, 0, 3, 0, 0, 0};
  std::copy(second, second + 8, i64.begin() + 8);
  EXPECT_EQ(decode_output(KFLEET_INT64, i64, 4, &ref4, &unwritten),
            (std::vector<double>{-1, 3.0 * 4294967296.0 + 2, -1, -1}));
  EXPECT_EQ(unwritten, 2u);  // the first -1 is the reference's, the last two are poison
  decode_output(KFLEET_INT64, i64, 4, nullptr, &unwritten);
  EXPECT_EQ(unwritten, 0u);  // without a reference no -1 is taken for poison
  const std::vector<std::uint8_t> f16 = {0x00, 0x3c, 0xff, 0xff};  // 1.0, poison
  const auto h = decode_output(KFLEET_FP16, f16, 2, nullptr, &unwritten);
  EXPECT_EQ(h[0], 1.0);
  EXPECT_EQ(unwritten, 1u);
}

}  // namespace
}  // namespace kfleet::harness

namespace kfleet::harness {
namespace {

// The fp8 quantiser's walk over blocks (one thread per block on the device): every element of
// the tensor in exactly one block, the block block_index names, partial edge blocks included,
// blocks numbered as the scale tensor [cdiv(rows, br), cdiv(cols, bc)] holds them.
TEST(ProblemInputs, BlockWalkCoversEveryElementOnceInItsBlock) {
  const std::vector<std::vector<long long>> cases = {{5, 320, 1, 128}, {192, 320, 128, 128}, {8, 256, 1, 128},
                                                     {3, 7, 2, 4},     {1, 1, 128, 128},    {300, 5, 128, 128}};
  for (const auto& t : cases) {
    BlockMap m;
    m.rank = 2;
    m.shape[0] = t[0];
    m.shape[1] = t[1];
    m.block[0] = t[2];
    m.block[1] = t[3];
    const auto nb0 = static_cast<std::size_t>((t[0] + t[2] - 1) / t[2]), nb1 = static_cast<std::size_t>((t[1] + t[3] - 1) / t[3]);
    const std::size_t n = static_cast<std::size_t>(t[0] * t[1]);
    std::vector<int> seen(n, 0);
    for (std::size_t b = 0; b < nb0 * nb1; ++b) {
      long long bc[6] = {};
      const std::size_t volume = block_origin(b, m, bc);
      EXPECT_EQ(bc[0], static_cast<long long>(b / nb1));
      EXPECT_EQ(bc[1], static_cast<long long>(b % nb1));
      for (std::size_t j = 0; j < volume; ++j) {
        std::size_t i = 0;
        if (!block_element(bc, j, m, &i)) continue;
        ASSERT_LT(i, n);
        ++seen[i];
        EXPECT_EQ(block_index(i, m), b);
        const std::size_t row = i / static_cast<std::size_t>(t[1]), col = i % static_cast<std::size_t>(t[1]);
        EXPECT_EQ(b, row / static_cast<std::size_t>(t[2]) * nb1 + col / static_cast<std::size_t>(t[3]));
      }
    }
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "element " << i << " of " << t[0] << "x" << t[1];
  }
}

// An output's check as the harness reads it from a problem's spec, on four fp32 values: CHECK
// is the rest of the spec's `check` line.
ProblemSpec four_values(const std::string& check) {
  ProblemSpec s;
  const std::string text =
      "kfleet-problem-spec 2\n"
      "problem four 1\n"
      "dims N\n"
      "tensor x input fp32\n"
      "tensor y output fp32\n"
      "init x normal mean=0 std=1\n"
      "output y y\n"
      "check y " + check + "\n"
      "lazy y zeros\n"
      "case c\n"
      "case_dims c 4\n"
      "case_scalars c\n"
      "case_shape c x 4\n"
      "case_shape c y 4\n"
      "case_cost c 4 32 0\n"
      "end\n";
  EXPECT_EQ(parse_problem_spec(text, &s), "") << check;
  return s;
}

// atol 0 is a bound: rtol alone then judges every element, and 2 % off fails rtol 1 %.
TEST(HarnessProblemChecks, ToleranceWithZeroAtolIsRtolAlone) {
  const ProblemSpec s = four_values("tolerance atol=0 rtol=0.01");
  const SpecInputs inputs(2);
  const std::vector<double> ref = {1, 2, 4, 8};
  EXPECT_EQ(problem_output_check(s, s.cases[0], 0, {1, 2, 4.02, 8}, ref, inputs).reason, "");
  const OutputCheck r = problem_output_check(s, s.cases[0], 0, {1, 2, 4, 8.16}, ref, inputs);
  EXPECT_EQ(r.violations, 1u);
  EXPECT_EQ(r.reason, "output y (tolerance check): 1 of 4 elements outside atol 0 + rtol 0.01 * |ref|");
}

// The exact check reads every element, and names the first that differs: here only the last.
TEST(HarnessProblemChecks, ExactCheckReadsEveryElement) {
  const ProblemSpec s = four_values("exact");
  const SpecInputs inputs(2);
  const std::vector<double> ref = {1, 2, 3, 4};
  EXPECT_EQ(problem_output_check(s, s.cases[0], 0, {1, 2, 3, 4}, ref, inputs).reason, "");
  const OutputCheck r = problem_output_check(s, s.cases[0], 0, {1, 2, 3, 5}, ref, inputs);
  EXPECT_EQ(r.violations, 1u);
  EXPECT_EQ(r.reason, "output y (exact check): 1 of 4 elements differ from the reference; first at 3: 5, want 4");
  EXPECT_EQ(problem_output_check(s, s.cases[0], 0, {1, 7, 3, 5}, ref, inputs).reason,
            "output y (exact check): 2 of 4 elements differ from the reference; first at 1: 7, want 2");
}

// topk judges every row, not only the first: the second row's wrong index is named.
TEST(HarnessProblemChecks, TopkReadsEveryRow) {
  std::string text = kTopkSpec;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"case_dims c 1 6 2", "case_dims c 2 6 2"}, {"case_shape c x 1 6", "case_shape c x 2 6"},
           {"case_shape c idx 1 2", "case_shape c idx 2 2"}}) {
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  ProblemSpec s;
  ASSERT_EQ(parse_problem_spec(text, &s), "");
  SpecInputs inputs = {{3, 1, 3, 2, 3, 0, 0, 9, 1, 8, 2, 3}, {}};
  const std::vector<double> ref = {0, 2, 1, 3};  // row 0: 3, 3; row 1: 9, 8
  EXPECT_EQ(problem_output_check(s, s.cases[0], 0, {0, 4, 1, 3}, ref, inputs).reason, "");
  EXPECT_EQ(problem_output_check(s, s.cases[0], 0, {0, 4, 1, 5}, ref, inputs).reason,
            "output idx (topk check): row 1, entry 1: index 5 holds 3; the top-k value there is 8 (ties may come "
            "in any order)");
  // A reference index one past the row is the reference's fault, not the kernel's.
  const auto past = problem_output_check(s, s.cases[0], 0, {0, 4, 1, 3}, {0, 2, 1, 6}, inputs);
  EXPECT_TRUE(past.reference_fault);
  EXPECT_EQ(past.reason, "output idx (topk check): row 1, entry 1: the reference's index 6 is out of range");
}

// The do-nothing outputs a check must fail (the gate-strength test) hold what their names say:
// the reference's mean everywhere, a copy of an input, each row's own indices.
TEST(HarnessProblemChecks, LazyOutputsHoldWhatTheirNamesSay) {
  ProblemSpec s;
  ASSERT_EQ(parse_problem_spec("kfleet-problem-spec 2\n"
                               "problem lazy 1\n"
                               "dims R C\n"
                               "tensor x input fp32\n"
                               "tensor y output bf16\n"
                               "init x normal mean=0 std=1\n"
                               "output y y\n"
                               "check y tolerance atol=0.01 rtol=0.01\n"
                               "lazy y mean\n"
                               "lazy y copy x\n"
                               "lazy y iota\n"
                               "lazy y zeros\n"
                               "case c\n"
                               "case_dims c 2 3\n"
                               "case_scalars c\n"
                               "case_shape c x 2 3\n"
                               "case_shape c y 2 3\n"
                               "case_cost c 6 36 0\n"
                               "end\n",
                               &s),
            "");
  const auto& lazy = s.outputs[0].lazy;
  ASSERT_EQ(lazy.size(), 4u);
  const SpecInputs inputs = {{1.001, 2, 3, 4, 5, 6}, {}};
  const std::vector<double> ref = {1, 2, 3, 4, 5, 7};  // mean 22 / 6 = 3.667, 3.671875 in bf16
  EXPECT_EQ(problem_lazy_output(s, s.cases[0], 0, lazy[0], ref, inputs), std::vector<double>(6, 3.671875));
  EXPECT_EQ(problem_lazy_output(s, s.cases[0], 0, lazy[1], ref, inputs),
            (std::vector<double>{1, 2, 3, 4, 5, 6}));  // 1.001 rounds to 1 in bf16
  EXPECT_EQ(problem_lazy_output(s, s.cases[0], 0, lazy[2], ref, inputs), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(problem_lazy_output(s, s.cases[0], 0, lazy[3], ref, inputs), std::vector<double>(6, 0.0));
  EXPECT_EQ(lazy_name(s, lazy[0]), "mean");
  EXPECT_EQ(lazy_name(s, lazy[1]), "copy of x");
  EXPECT_EQ(lazy_name(s, lazy[2]), "iota");
  EXPECT_EQ(slots_checks_read(s), std::vector<int>{0});  // the copy reads x
}

}  // namespace
}  // namespace kfleet::harness
