// problem.yaml's format: what a good definition reads as, and for each kind of mistake the
// exact message, at file:line:column: field, as job files report theirs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "kfleet/common/problem.hpp"
#include "kfleet/testing/files.hpp"
#include "test_paths.hpp"

namespace kfleet {
namespace {

const std::string kGood = R"(problem: p
version: 1
dims: [T, H]
scalars:
  - {name: eps, dtype: fp32, value: 1.0e-6}
inputs:
  - {name: x, dtype: bf16, shape: [T, H], init: {dist: normal, std: 2}}
  - {name: w, dtype: bf16, shape: [H], init: {dist: uniform, min: 0.5, max: 1.5}}
outputs:
  - {name: y, dtype: bf16, shape: [T, H], check: {kind: tolerance, atol: 0.01, rtol: 0.01}, lazy: [zeros, {copy: x}]}
flops: 4*T*H
bytes: 4*T*H + 2*H
cases:
  - {name: small, dims: {T: 2, H: 8}}
  - {name: big, dims: {T: 4096, H: 4096}, scalars: {eps: 1.0e-5}}
reference: {cpu: reference.cpp}
kernels:
  - {name: naive, source: naive.cu, languages: [cuda, hip]}
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "test bug: '" << from << "' is not in the document";
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(ProblemFormat, ReadsAGoodDefinition) {
  auto p = parse_problem(kGood, "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  const ProblemDef& d = *p.def;
  EXPECT_EQ(d.name, "p");
  EXPECT_EQ(d.abi, "generic");
  EXPECT_EQ(d.dims, (std::vector<std::string>{"T", "H"}));
  ASSERT_EQ(d.inputs.size(), 2u);
  EXPECT_EQ(d.inputs[0].init.dist, "normal");
  EXPECT_EQ(d.inputs[0].init.std, 2);
  EXPECT_EQ(d.inputs[0].line, 7);
  EXPECT_EQ(d.outputs[0].check.atol, 0.01);
  ASSERT_EQ(d.outputs[0].lazy.size(), 2u);
  EXPECT_EQ(d.outputs[0].lazy[1].to_string(), "copy of x");
  EXPECT_EQ(*d.flops->eval(d.cases[1].dims), 4LL * 4096 * 4096);
  EXPECT_EQ(d.scalar_value(d.scalars[0], d.cases[0]), 1.0e-6);
  EXPECT_EQ(d.scalar_value(d.scalars[0], d.cases[1]), 1.0e-5);
  EXPECT_EQ(d.reference.at("cpu").path, "reference.cpp");
  EXPECT_EQ(d.kernels[0].languages, (std::vector<std::string>{"cuda", "hip"}));
  const auto slots = d.abi_slots();
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[2].tensor->name, "y");
  EXPECT_EQ(slots[2].role, "output");
}

TEST(ProblemFormat, InPlaceOutputsShareTheInputsSlot) {
  std::string doc = replace(kGood, "  - {name: y, dtype: bf16, shape: [T, H], check",
                            "  - {name: x, in_place_of: x, check");
  doc = replace(doc, "{copy: x}", "mean");
  auto p = parse_problem(doc, "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  const auto slots = p.def->abi_slots();
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].role, "inout");
  EXPECT_EQ(p.def->outputs[0].dtype, "bf16");
  EXPECT_EQ(p.def->outputs[0].shape.size(), 2u);
}

TEST(ProblemFormat, Expressions) {
  std::string why;
  const std::vector<std::string> names = {"M", "K"};
  auto e = DimExpr::parse("cdiv(K, 128) * (M + 1) - max(M, 3) % 2 + min(7, K / 3)", names, &why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(*e->eval({{"M", 4}, {"K", 300}}), 3 * 5 - 0 + 7);
  EXPECT_EQ(*DimExpr::parse("-7 / 2", names, &why)->eval({}), -4);  // floor division
  EXPECT_EQ(*DimExpr::parse("cdiv(-7, 2)", names, &why)->eval({}), -3);
  EXPECT_FALSE(DimExpr::parse("M +", names, &why));
  EXPECT_EQ(why, "'M +' ends where a value was expected");
  EXPECT_FALSE(DimExpr::parse("N * 2", names, &why));
  EXPECT_EQ(why, "unknown name 'N' in 'N * 2' (dims: M, K)");
  EXPECT_FALSE(DimExpr::parse("(M", names, &why));
  EXPECT_EQ(why, "expected ')' at column 3 of '(M'");
  EXPECT_FALSE(DimExpr::parse("M $ 2", names, &why));
  EXPECT_EQ(why, "unexpected '$' at column 3 of 'M $ 2'");
  EXPECT_EQ(DimExpr::parse("M / (K - K)", names, &why)->eval({{"M", 1}, {"K", 2}}).error().message,
            "'M / (K - K)': division by zero");
  EXPECT_EQ(DimExpr::parse("M * M * M", names, &why)->eval({{"M", 1LL << 30}}).error().message,
            "'M * M * M': overflow");
}

struct Bad {
  std::string from, to;  // kGood with `from` replaced by `to`
  std::string issue;     // the first issue, as printed
};

// Each edit of the good document `doc` (from -> to) is refused, its first issue exactly this.
void expect_first_issues(const std::string& doc, const std::string& file,
                         const std::vector<Bad>& table) {
  for (const auto& b : table) {
    const auto p = parse_problem(replace(doc, b.from, b.to), file);
    ASSERT_FALSE(p.issues.empty()) << "accepted: " << b.to;
    EXPECT_EQ(p.issues[0].to_string(), b.issue) << "for: " << b.to << "\nall issues:\n" << p.error_text();
    EXPECT_FALSE(p.ok());
  }
}

TEST(ProblemFormat, EachMistakeHasItsMessage) {
  const std::vector<Bad> table = {
      {"version: 1", "version: 0", "p.yaml:2:10: version: is 0; must be between 1 and 1000000"},
      {"version: 1\n", "", "p.yaml:1:1: version: missing required field 'version' (a whole number >= 1; raise it when the contract changes)"},
      {"problem: p", "problem: P-1", "p.yaml:1:10: problem: 'P-1' must be lower-case letters, digits and _, at most 31 characters"},
      {"problem: p", "problem: p\ncolour: blue", "p.yaml:2:1: colour: unknown key 'colour'; allowed: problem, version, summary, abi, dims, scalars, inputs, outputs, workspace, flops, bytes, cases, reference, kernels"},
      {"flops: 4*T*H", "flop: 4*T*H", "p.yaml:11:1: flop: unknown key 'flop'; did you mean 'flops'? allowed: problem, version, summary, abi, dims, scalars, inputs, outputs, workspace, flops, bytes, cases, reference, kernels"},
      {"dims: [T, H]", "dims: [T, T]", "p.yaml:3:11: dims[1]: dimension T appears twice"},
      {"dims: [T, H]", "dims: [T, H, cdiv]", "p.yaml:3:14: dims[2]: 'cdiv' must be an identifier (not cdiv, min, max)"},
      {"dtype: fp32, value", "dtype: float, value", "p.yaml:5:24: scalars[0].dtype: 'float' is not one of: fp32, fp64, int32, int64"},
      {", value: 1.0e-6}", "}", "p.yaml:5:5: scalars[0].value: missing required field 'value' (the scalar's value; only a scale that an fp8 input is scaled_by goes without)"},
      {"shape: [T, H], init: {dist: normal", "shape: [T, Q], init: {dist: normal", "p.yaml:7:39: inputs[0].shape[1]: unknown name 'Q' in 'Q' (dims: T, H)"},
      {"shape: [T, H], init: {dist: normal", "shape: [T, H +], init: {dist: normal", "p.yaml:7:39: inputs[0].shape[1]: 'H +' ends where a value was expected"},
      {"{dist: normal, std: 2}", "{dist: gaussian, std: 2}", "p.yaml:7:56: inputs[0].init.dist: 'gaussian' is not one of: normal, uniform, int, group_ends, scale"},
      {"{dist: normal, std: 2}", "{dist: normal, std: 0}", "p.yaml:7:69: inputs[0].init.std: is 0; must be > 0 and <= 1000000000"},
      {"{dist: normal, std: 2}", "{dist: normal, min: 2}", "p.yaml:7:69: inputs[0].init.min: 'min' does not apply to dist: normal (it takes mean, std, block_amplitude, row_scale, row_offset, neg_inf, outliers, step)"},
      {"{dist: normal, std: 2}", "{dist: normal, std: 2, row_scale: [10, 1]}", "p.yaml:7:83: inputs[0].init.row_scale: lo must be <= hi"},
      {"{dist: normal, std: 2}", "{dist: normal, std: 2, neg_inf: [0, 1.5]}", "p.yaml:7:85: inputs[0].init.neg_inf[1]: is 1.5; must be >= 0 and <= 1"},
      {"{dist: normal, std: 2}", "{dist: normal, std: 2, outliers: {columns: 17, min: 1, max: 2}}", "p.yaml:7:92: inputs[0].init.outliers.columns: is 17; must be between 1 and 16"},
      {"{dist: normal, std: 2}", "{dist: normal, std: 2, outliers: {columns: [1, 1], min: 1, max: 2}}", "p.yaml:7:96: inputs[0].init.outliers.columns[1]: column 1 appears twice"},
      {"{dist: normal, std: 2}", "{dist: normal, std: 2, outliers: {columns: 9, min: 1, max: 2}}", "p.yaml:14:5: cases[0]: case small: x: 9 outlier columns in rows of 8"},
      {"{dist: uniform, min: 0.5, max: 1.5}", "{dist: uniform, min: 0.5, max: 1.5, step: 0}", "p.yaml:8:88: inputs[1].init.step: is 0; must be > 0 and <= 1000000000"},
      {"{name: small, dims: {T: 2, H: 8}}", "{name: small, dims: {T: 2, H: 8}, required: yes please}", "p.yaml:14:49: cases[0].required: must be true or false, not 'yes please'"},
      {"{name: small, dims: {T: 2, H: 8}}", "{name: small, dims: {T: 2, H: 8}, init: {z: {dist: normal}}}", "p.yaml:14:46: cases[0].init.z: unknown key 'z'; did you mean 'x'? allowed: x, w"},
      {"{name: small, dims: {T: 2, H: 8}}", "{name: small, dims: {T: 2, H: 8}, init: {x: {dist: int, min: 0, max: 3}}}", "p.yaml:14:5: cases[0].init.x.dist: dist: int does not fit dtype bf16 (it draws integers: int32 or int64)"},
      {"{name: small, dims: {T: 2, H: 8}}", "{name: small, dims: {T: 2, H: 8}, init: {x: {dist: normal, stdev: 1}}}", "p.yaml:14:64: cases[0].init.x.stdev: unknown key 'stdev'; did you mean 'std'? allowed: dist, mean, std, min, max, sorted, unique, total, block_amplitude, row_scale, row_offset, neg_inf, outliers, step"},
      {"{dist: uniform, min: 0.5, max: 1.5}", "{dist: uniform, min: 1.5, max: 0.5}", "p.yaml:8:77: inputs[1].init.max: max must be > min"},
      {"{dist: normal, std: 2}", "{dist: int, min: 0, max: 9}", "p.yaml:7:49: inputs[0].init.dist: dist: int does not fit dtype bf16 (it draws integers: int32 or int64)"},
      {"{name: x, dtype: bf16, shape: [T, H], init: {dist: normal, std: 2}}", "{name: x, dtype: bf16, shape: [T, H]}", "p.yaml:7:5: inputs[0].init: missing required field 'init' (how its values are drawn, e.g. {dist: normal, std: 1})"},
      {"{name: x, dtype: bf16", "{name: x, dtype: fp8_e4m3", "p.yaml:7:5: inputs[0].scaled_by: an fp8 input needs scaled_by: (its dequantisation scales)"},
      {"{name: w, dtype: bf16", "{name: x, dtype: bf16", "p.yaml:8:12: inputs[1].name: input x appears twice"},
      {"{name: y, dtype: bf16, shape: [T, H], check", "{name: x, dtype: bf16, shape: [T, H], check", "p.yaml:10:12: outputs[0].name: output x has an input's name; write in_place_of: x if it overwrites that input"},
      {"{name: y, dtype: bf16, shape: [T, H], check", "{name: y, in_place_of: z, check", "p.yaml:10:28: outputs[0].in_place_of: 'z' is not an input"},
      {"{name: y, dtype: bf16, shape: [T, H], check", "{name: y, in_place_of: x, dtype: bf16, check", "p.yaml:10:38: outputs[0].dtype: an output in place of an input takes the input's dtype; remove it"},
      {"{kind: tolerance, atol: 0.01, rtol: 0.01}", "{kind: tolerance, atol: 0.01}", "p.yaml:10:50: outputs[0].check.rtol: atol and rtol go together (|x - r| <= atol + rtol * |r|)"},
      {"{kind: tolerance, atol: 0.01, rtol: 0.01}", "{kind: tolerance}", "p.yaml:10:50: outputs[0].check: kind: tolerance needs at least one of atol (with rtol), max_abs, rel_l2"},
      {"{kind: tolerance, atol: 0.01, rtol: 0.01}", "{kind: close, atol: 0.01, rtol: 0.01}", "p.yaml:10:57: outputs[0].check.kind: 'close' is not one of: tolerance, exact, topk"},
      {"{kind: tolerance, atol: 0.01, rtol: 0.01}", "{kind: exact, atol: 0.01}", "p.yaml:10:70: outputs[0].check.atol: 'atol' does not apply to kind: exact"},
      {"{kind: tolerance, atol: 0.01, rtol: 0.01}", "{kind: topk, of: x}", "p.yaml:10:50: outputs[0].check.kind: kind: topk checks an output of indices (int32 or int64)"},
      {"lazy: [zeros, {copy: x}]", "lazy: []", "p.yaml:10:99: outputs[0].lazy: list at least one do-nothing output (zeros, mean, {copy: INPUT}, iota)"},
      {"lazy: [zeros, {copy: x}]", "lazy: [zero]", "p.yaml:10:100: outputs[0].lazy[0]: 'zero' is not one of: zeros, mean, iota; did you mean 'zeros'?"},
      {"lazy: [zeros, {copy: x}]", "lazy: [zeros, {copy: q}]", "p.yaml:10:99: outputs[0].lazy[1]: 'q' is not an input"},
      {"lazy: [zeros, {copy: x}]", "lazy: [iota]", "p.yaml:10:99: outputs[0].lazy[0]: iota (0, 1, 2, ... along each row) is for integer outputs"},
      {"lazy: [zeros, {copy: x}]", "lazy: [zeros, {copy: w}]", "p.yaml:14:5: cases[0]: case small: lazy copy of w into y: the shapes differ"},
      {"{name: small, dims: {T: 2, H: 8}}", "{name: small, dims: {T: 2}}", "p.yaml:14:25: cases[0].dims.H: missing a value for dimension H"},
      {"{name: small, dims: {T: 2, H: 8}}", "{name: small, dims: {T: 2, H: 8, D: 1}}", "p.yaml:14:38: cases[0].dims.D: unknown key 'D'; did you mean 'T'? allowed: T, H"},
      {"{name: small, dims: {T: 2, H: 8}}", "{name: small, dims: {T: 0, H: 8}}", "p.yaml:14:29: cases[0].dims.T: is 0; must be >= 1"},
      {"{name: small, dims: {T: 2, H: 8}}", "{name: big, dims: {T: 2, H: 8}}", "p.yaml:15:12: cases[1].name: case big appears twice"},
      {"scalars: {eps: 1.0e-5}", "scalars: {epsilon: 1.0e-5}", "p.yaml:15:53: cases[1].scalars.epsilon: unknown key 'epsilon'; allowed: eps"},
      {"flops: 4*T*H", "flops: 4*T*H - 10000", "p.yaml:14:5: cases[0]: case small: flops is -9936; it must be >= 0"},
      {"bytes: 4*T*H + 2*H", "bytes: 4*T*H / (H - 8)", "p.yaml:14:5: cases[0]: case small: bytes: '4*T*H / (H - 8)': division by zero"},
      {"reference: {cpu: reference.cpp}", "reference: {cuda: reference.cu}", "p.yaml:16:12: reference.cpu: missing required field 'cpu' (the CPU reference CI checks, e.g. reference.cpp)"},
      {"reference: {cpu: reference.cpp}", "reference: {cpu: ../reference.cpp}", "p.yaml:16:18: reference.cpu: '../reference.cpp' must be a path inside the problem's folder, or lib:PATH inside kernels/ (no leading '/', no '..')"},
      {"languages: [cuda, hip]", "languages: [cuda, rocm]", "p.yaml:18:48: kernels[0].languages[1]: 'rocm' is not one of: cuda, hip"},
      {"cases:\n", "cases: []\nx:\n", "p.yaml:14:1: x: unknown key 'x'; allowed: problem, version, summary, abi, dims, scalars, inputs, outputs, workspace, flops, bytes, cases, reference, kernels"},
      {"dims: [T, H]", "dims: [T, H", "p.yaml:4:8: (syntax): YAML syntax error: end of sequence flow not found"},
  };
  expect_first_issues(kGood, "p.yaml", table);
}

// A case may draw an input its own way (the edge of real data) and be required of every job.
TEST(ProblemFormat, CasesDrawTheirOwnInputsAndCanBeRequired) {
  std::string doc = replace(kGood, "{name: small, dims: {T: 2, H: 8}}",
                            "{name: small, dims: {T: 2, H: 8}, required: true, doc: at the edge, "
                            "init: {x: {dist: normal, std: 1, row_offset: [-3, 3], row_scale: [1, 10], "
                            "neg_inf: [0, 0.5], step: 0.25, outliers: {columns: [1, 6], min: 100, max: 200}}}}");
  auto p = parse_problem(doc, "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  const ProblemDef& d = *p.def;
  EXPECT_EQ(d.required_cases(), std::vector<std::string>{"small"});
  EXPECT_EQ(d.cases[0].doc, "at the edge");
  const ProblemInit& x = d.init_of(*d.input("x"), d.cases[0]);
  EXPECT_EQ(x.std, 1);
  EXPECT_EQ(*x.row_offset, std::make_pair(-3.0, 3.0));
  EXPECT_EQ(*x.row_scale, std::make_pair(1.0, 10.0));
  EXPECT_EQ(*x.neg_inf, std::make_pair(0.0, 0.5));
  EXPECT_EQ(x.step, 0.25);
  ASSERT_TRUE(x.outliers);
  EXPECT_EQ(x.outliers->columns, 2);
  EXPECT_EQ(x.outliers->at, (std::vector<std::int64_t>{1, 6}));
  // The other case and the other input keep the input's own draw.
  EXPECT_EQ(d.init_of(*d.input("x"), d.cases[1]).std, 2);
  EXPECT_FALSE(d.cases[1].required);
  EXPECT_EQ(d.init_of(*d.input("w"), d.cases[0]).dist, "uniform");
  // Past a row, and -inf in an integer tensor: refused.
  auto bad = parse_problem(replace(doc, "columns: [1, 6]", "columns: [1, 8]"), "p.yaml");
  EXPECT_NE(bad.error_text().find("outlier column 8 is past its rows of 8"), std::string::npos) << bad.error_text();
}

// A family's case may widen its output's bounds (scaled_mm@4's n8192: an fp8 GEMM's error grows
// with K); the other cases keep the output's own. A generic problem's spec has one check per
// output, so it is refused there, and so is a bound on an output that is not checked by tolerance.
TEST(ProblemFormat, AFamilysCaseMaySetItsOwnBounds) {
  const std::string doc = kfleet::testing::read_file(testing::source_dir() / "kernels/problems/scaled_mm/problem.yaml");
  auto p = parse_problem(doc, "scaled_mm.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  const ProblemDef& d = *p.def;
  const ProblemTensor& out = *d.output("d");
  const ProblemCheck big = d.check_of(out, *d.find_case("n8192"));
  EXPECT_DOUBLE_EQ(big.atol, 0.028);
  EXPECT_DOUBLE_EQ(big.rtol, 0.01);   // the output's own, kept
  EXPECT_DOUBLE_EQ(big.rel_l2, 0.01);
  EXPECT_EQ(big.kind, "tolerance");
  EXPECT_DOUBLE_EQ(d.check_of(out, *d.find_case("small")).atol, 0.01);
  EXPECT_DOUBLE_EQ(d.check_of(out, *d.find_case("stress")).atol, 0.01);
  // stress widens allclose by its outputs' sums of |terms| (version 4); the others do not
  EXPECT_DOUBLE_EQ(d.check_of(out, *d.find_case("stress")).dot_rtol, 0.001);
  EXPECT_DOUBLE_EQ(d.check_of(out, *d.find_case("stress")).rtol, 0.01);
  EXPECT_LT(big.dot_rtol, 0);
  // The library's file changes; its lines are not part of what is checked here.
  const std::string from = "check: {d: {atol: 0.028}}";
  const std::vector<std::pair<std::string, std::string>> table = {
      {"check: {e: {atol: 0.028}}", "cases[2].check.e: unknown key 'e'; did you mean 'd'? allowed: d"},
      {"check: {d: {atl: 0.028}}", "cases[2].check.d.atl: unknown key 'atl'; did you mean 'atol'? allowed: atol, rtol, max_abs, rel_l2, dot_rtol"},
      {"check: {d: {}}", "cases[2].check.d: a case's check sets at least one of atol, rtol, max_abs, rel_l2, dot_rtol"},
      {"check: {d: {atol: -1}}", "cases[2].check.d.atol: is -1; must be >= 0 and <= 1000000"},
  };
  for (const auto& [to, issue] : table) {
    const auto bad = parse_problem(replace(doc, from, to), "scaled_mm.yaml");
    ASSERT_FALSE(bad.issues.empty()) << "accepted: " << to;
    const std::string got = bad.issues[0].to_string();
    EXPECT_EQ(got.substr(got.find(": ") + 2), issue) << got;
  }
  const auto generic = parse_problem(replace(kGood, "{name: small, dims: {T: 2, H: 8}}",
                                             "{name: small, dims: {T: 2, H: 8}, check: {y: {atol: 1}}}"), "p.yaml");
  ASSERT_FALSE(generic.issues.empty());
  EXPECT_EQ(generic.issues[0].to_string(),
            "p.yaml:14:5: cases[0]: case small: check.y: a case's own bounds are for the families (abi: attention "
            "or scaled_mm) so far; a generic problem's spec has one check per output");
  // dot_rtol needs a sum of products whose sums of |terms| the harness computes: scaled_mm's
  const std::string att = kfleet::testing::read_file(testing::source_dir() / "kernels/problems/attention/problem.yaml");
  const auto softmax = parse_problem(replace(att, "{name: small, dims: {B: 1, H: 2, S: 64, D: 64}}",
                                             "{name: small, dims: {B: 1, H: 2, S: 64, D: 64}, check: {o: {dot_rtol: 0.001}}}"),
                                     "attention.yaml");
  ASSERT_FALSE(softmax.issues.empty());
  EXPECT_NE(softmax.issues[0].to_string().find("case small: check.o: dot_rtol is for the scaled_mm family"),
            std::string::npos) << softmax.issues[0].to_string();
}

TEST(ProblemFormat, Fp8ScalesAndGroupEnds) {
  const std::string doc = R"Y(problem: q
version: 2
dims: [M, N, K, G]
inputs:
  - {name: a, dtype: fp8_e4m3, shape: [M, K], init: {dist: uniform, block_amplitude: [0.1, 10]}, scaled_by: {tensor: a_scale, block: [1, 128]}}
  - {name: a_scale, dtype: fp32, shape: [M, "cdiv(K, 128)"], init: {dist: scale}}
  - {name: ends, dtype: int32, shape: [G], init: {dist: group_ends, total: M}}
outputs:
  - {name: out, dtype: bf16, shape: [M, N], check: {kind: rel_l2_typo}, lazy: [zeros]}
flops: 2*M*N*K
bytes: M*K
cases:
  - {name: c, dims: {M: 4, N: 4, K: 300, G: 2}}
reference: {cpu: r.cpp}
)Y";
  auto p = parse_problem(replace(doc, "{kind: rel_l2_typo}", "{kind: tolerance, rel_l2: 0.01}"), "q.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  EXPECT_EQ(p.def->inputs[0].scaled_by->block, (std::vector<std::int64_t>{1, 128}));
  EXPECT_EQ(p.def->inputs[0].init.block_amplitude->second, 10);
  EXPECT_EQ(p.def->inputs[2].init.total->text(), "M");
  const std::vector<Bad> table = {
      {"[M, \"cdiv(K, 128)\"]", "[M, \"K / 128\"]", "q.yaml:13:5: cases[0]: case c: a_scale must have shape [4, 3] (one scale per block of a)"},
      {"block: [1, 128]", "block: [128]", "q.yaml:5:109: inputs[0].scaled_by.block: has 1 edges; a has rank 2"},
      {"{tensor: a_scale, block: [1, 128]}", "{tensor: ends, block: [1, 128]}", "q.yaml:5:109: inputs[0].scaled_by.tensor: 'ends' must be an fp32 input with init: {dist: scale}"},
      {"block_amplitude: [0.1, 10]}, scaled_by: {tensor: a_scale, block: [1, 128]}", "min: -1}, scaled_by: {scalar: s}", "q.yaml:5:90: inputs[0].scaled_by.scalar: 's' must be an fp32 scalar with no value (the quantiser sets it)"},
      {"{tensor: a_scale, block: [1, 128]}", "{tensor: a_scale, scalar: s}", "q.yaml:5:109: inputs[0].scaled_by: give either tensor: (block scales, with block:) or scalar: (one scale for the tensor), not both"},
      {"{dist: group_ends, total: M}", "{dist: group_ends}", "q.yaml:7:50: inputs[2].init.total: missing required field 'total' (the last end: the number of rows the groups split, e.g. M)"},
      {"{dist: group_ends, total: M}", "{dist: group_ends, total: Q}", "q.yaml:7:76: inputs[2].init.total: unknown name 'Q' in 'Q' (dims: M, N, K, G)"},
      {"block_amplitude: [0.1, 10]", "block_amplitude: [10, 0.1]", "q.yaml:5:86: inputs[0].init.block_amplitude: lo must be <= hi"},
  };
  expect_first_issues(replace(doc, "{kind: rel_l2_typo}", "{kind: tolerance, rel_l2: 0.01}"), "q.yaml",
                      table);
}

TEST(ProblemLibraryLoad, NamesMissingFilesAndMisnamedFolders) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / ("problems-" + std::to_string(::getpid())) / "problems";
  fs::remove_all(root.parent_path());
  fs::create_directories(root / "p");
  fs::create_directories(root / "other");
  std::ofstream(root / "p" / "problem.yaml") << kGood;
  std::ofstream(root / "p" / "reference.cpp") << "";
  std::ofstream(root / "other" / "problem.yaml") << replace(kGood, "problem: p", "problem: q");
  std::ofstream(root / "other" / "reference.cpp") << "";
  std::ofstream(root / "other" / "naive.cu") << "";
  const auto lib = load_problem_library(root.string());
  ASSERT_EQ(lib.problems.size(), 2u);
  ASSERT_EQ(lib.issues.size(), 2u);
  EXPECT_EQ(lib.issues[0].to_string(), (root / "other/problem.yaml").string() +
            ":1:1: problem: 'q' lives in folder other; the folder is named after the problem");
  EXPECT_EQ(lib.issues[1].to_string(), (root / "p/problem.yaml").string() +
            ":18:27: kernels[0].source: 'naive.cu' does not exist (looked for " + (root / "p/naive.cu").string() + ")");
  EXPECT_EQ(problem_file_path(lib.root, (root / "p").string(), ProblemFile{"lib:suite/x.cu"}),
            (root.parent_path() / "suite/x.cu").string());
  EXPECT_EQ(load_problem_library((root / "nowhere").string()).issues.size(), 1u);
  fs::remove_all(root.parent_path());
}

}  // namespace
}  // namespace kfleet
