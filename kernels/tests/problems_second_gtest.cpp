// Each new problem's fp64 reference against a second, plain implementation that works as its
// naive GPU kernel does (fp32 arithmetic, from the encoded bytes the device holds, the output
// rounded once to its dtype), judged by the problem's own check; and against values worked out
// by hand on tiny inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "problem_test_support.hpp"
#include "numeric.hpp"
#include "problem_cpu.hpp"

namespace kfleet::problems {
namespace {

using test_support::dev;
using test_support::library;

using Second = Tensors (*)(const CaseData&);

Tensors second_rmsnorm(const CaseData& d) {
  const auto T = d.dim("T"), H = d.dim("H");
  const Tensor &x = d.inputs.at("x"), &w = d.inputs.at("weight");
  Tensor y = output_tensor(d, "y");
  for (std::int64_t t = 0; t < T; ++t) {
    float ss = 0;
    for (std::int64_t i = 0; i < H; ++i) ss += dev(x, t * H + i) * dev(x, t * H + i);
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(H) + static_cast<float>(d.scalars.at("eps")));
    for (std::int64_t i = 0; i < H; ++i) y.real[t * H + i] = dev(x, t * H + i) * inv * dev(w, i);
  }
  return {{"y", y}};
}

Tensors second_softmax(const CaseData& d) {
  const auto R = d.dim("R"), V = d.dim("V");
  const Tensor& x = d.inputs.at("x");
  Tensor y = output_tensor(d, "y");
  for (std::int64_t r = 0; r < R; ++r) {
    float mx = -INFINITY, sum = 0;
    for (std::int64_t v = 0; v < V; ++v) mx = std::max(mx, dev(x, r * V + v));
    for (std::int64_t v = 0; v < V; ++v) sum += std::exp(dev(x, r * V + v) - mx);
    for (std::int64_t v = 0; v < V; ++v) y.real[r * V + v] = std::exp(dev(x, r * V + v) - mx) / sum;
  }
  return {{"y", y}};
}

Tensors second_rope(const CaseData& d) {
  const auto T = d.dim("T"), D = d.dim("D"), half = D / 2;
  const Tensor &pos = d.inputs.at("positions"), &cs = d.inputs.at("cos_sin");
  Tensors out;
  for (const char* name : {"q", "k"}) {
    const Tensor& x = d.inputs.at(name);
    const auto H = d.dim(name == std::string("q") ? "HQ" : "HK");
    Tensor o = output_tensor(d, name);
    for (std::int64_t t = 0; t < T; ++t) {
      const auto p = static_cast<std::int64_t>(dev(pos, t));
      for (std::int64_t h = 0; h < H; ++h) {
        for (std::int64_t i = 0; i < half; ++i) {
          const float c = dev(cs, p * D + i), s = dev(cs, p * D + half + i);
          const float x1 = dev(x, (t * H + h) * D + i), x2 = dev(x, (t * H + h) * D + half + i);
          o.real[(t * H + h) * D + i] = x1 * c - x2 * s;
          o.real[(t * H + h) * D + half + i] = x2 * c + x1 * s;
        }
      }
    }
    out[name] = o;
  }
  return out;
}

Tensors second_grouped_gemm(const CaseData& d) {
  const auto G = d.dim("G"), M = d.dim("M"), N = d.dim("N"), K = d.dim("K");
  const Tensor &a = d.inputs.at("a"), &w = d.inputs.at("w"), &ends = d.inputs.at("ends");
  Tensor out = output_tensor(d, "out");
  for (std::int64_t m = 0; m < M; ++m) {
    std::int64_t g = 0;  // the first group whose end is past m (as the naive kernel searches)
    while (g < G - 1 && static_cast<std::int64_t>(dev(ends, g)) <= m) ++g;
    for (std::int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (std::int64_t k = 0; k < K; ++k) acc += dev(a, m * K + k) * dev(w, (g * N + n) * K + k);
      out.real[m * N + n] = acc;
    }
  }
  return {{"out", out}};
}

Tensors second_topk(const CaseData& d) {
  // Selection by repeated maximum (the naive kernel's method), not by sorting.
  const auto R = d.dim("R"), V = d.dim("V"), KK = d.dim("KK");
  const Tensor& x = d.inputs.at("x");
  Tensor values = output_tensor(d, "values"), indices = output_tensor(d, "indices");
  for (std::int64_t r = 0; r < R; ++r) {
    std::vector<bool> taken(static_cast<std::size_t>(V), false);
    for (std::int64_t j = 0; j < KK; ++j) {
      std::int64_t best = -1;
      for (std::int64_t v = 0; v < V; ++v) {
        if (taken[v]) continue;
        if (best < 0 || dev(x, r * V + v) > dev(x, r * V + best)) best = v;
      }
      taken[best] = true;
      values.real[r * KK + j] = dev(x, r * V + best);
      indices.real[r * KK + j] = static_cast<double>(best);
    }
  }
  return {{"values", values}, {"indices", indices}};
}

Tensors second_fp8_block_gemm(const CaseData& d) {
  // From the fp8 codes and the scale tensors, block by block, as the naive kernel does.
  const auto M = d.dim("M"), N = d.dim("N"), K = d.dim("K"), KB = (K + 127) / 128;
  const Tensor &a = d.inputs.at("a"), &b = d.inputs.at("b");
  const Tensor &as = d.inputs.at("a_scale"), &bs = d.inputs.at("b_scale");
  Tensor out = output_tensor(d, "out");
  for (std::int64_t m = 0; m < M; ++m) {
    for (std::int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (std::int64_t kb = 0; kb < KB; ++kb) {
        float part = 0;
        for (std::int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k) part += dev(a, m * K + k) * dev(b, n * K + k);
        acc += part * dev(as, m * KB + kb) * dev(bs, (n / 128) * KB + kb);
      }
      out.real[m * N + n] = acc;
    }
  }
  return {{"out", out}};
}

TEST(ProblemReferences, AgreeWithASecondPlainImplementation) {
  const std::map<std::string, Second> second = {
      {"rmsnorm", second_rmsnorm}, {"softmax", second_softmax}, {"rope", second_rope},
      {"grouped_gemm", second_grouped_gemm}, {"topk", second_topk}, {"fp8_block_gemm", second_fp8_block_gemm}};
  for (const auto& [name, fn] : second) {
    const ProblemDef* p = library().find(name);
    ASSERT_NE(p, nullptr) << name;
    int cases = 0;
    for (const auto& c : p->cases) {
      // Every small case, and every required case (what every job runs) whatever its size.
      if (!c.required && (*p->flops->eval(c.dims) > 20'000'000 || *p->bytes->eval(c.dims) > 1'000'000)) continue;
      ++cases;
      for (std::uint64_t seed : {0u, 3u}) {
        auto data = make_case(*p, c, seed);
        ASSERT_TRUE(data.ok());
        const Tensors ref = find_reference(name)(*data);
        const Tensors got = fn(*data);
        for (const auto& o : p->outputs) {
          EXPECT_EQ(check_output(*data, o, ref.at(o.name), rounded(got.at(o.name))), "")
              << name << "/" << c.name << " seed " << seed;
        }
      }
    }
    EXPECT_GE(cases, 2) << name << ": fewer than two small cases";
  }
}

// ---- values worked out by hand ----

Tensor tensor(const std::string& dtype, std::vector<std::int64_t> shape, std::vector<double> v) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.real = std::move(v);
  return t;
}

CaseData hand_case(const std::string& problem, std::map<std::string, std::int64_t> dims, Tensors inputs) {
  CaseData d;
  d.def = library().find(problem);
  EXPECT_NE(d.def, nullptr);
  d.dims = std::move(dims);
  for (const auto& s : d.def->scalars) d.scalars[s.name] = s.value.value_or(NAN);
  d.inputs = std::move(inputs);
  auto outputs = blank_outputs(*d.def, d.dims);
  EXPECT_TRUE(outputs.ok());
  if (outputs) d.outputs = std::move(*outputs);
  return d;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

std::vector<double> run(const std::string& problem, const CaseData& d, const std::string& out) {
  return find_reference(problem)(d).at(out).real;
}

TEST(ProblemReferences, KnownValues) {
  {  // rms of (3, 4) is sqrt(12.5); weight (1, 2)
    auto d = hand_case("rmsnorm", {{"T", 1}, {"H", 2}},
                       {{"x", tensor("bf16", {1, 2}, {3, 4})}, {"weight", tensor("bf16", {2}, {1, 2})}});
    d.scalars["eps"] = 0;
    expect_near_all(run("rmsnorm", d, "y"), {3 / std::sqrt(12.5), 8 / std::sqrt(12.5)}, 1e-12);
  }
  {  // exp(0), exp(log 2), exp(log 3) over their sum 6; shifting the row changes nothing
    auto d = hand_case("softmax", {{"R", 2}, {"V", 3}},
                       {{"x", tensor("fp16", {2, 3}, {0, std::log(2.0), std::log(3.0), 100, 100 + std::log(2.0), 100 + std::log(3.0)})}});
    expect_near_all(run("softmax", d, "y"), {1.0 / 6, 1.0 / 3, 0.5, 1.0 / 6, 1.0 / 3, 0.5}, 1e-12);
  }
  {  // position 1: cos 0.6, sin 0.8; (1, 2) -> (1*0.6 - 2*0.8, 2*0.6 + 1*0.8)
    auto d = hand_case("rope", {{"T", 1}, {"HQ", 1}, {"HK", 1}, {"D", 2}, {"P", 2}},
                       {{"q", tensor("bf16", {1, 1, 2}, {1, 2})}, {"k", tensor("bf16", {1, 1, 2}, {3, 0})},
                        {"positions", tensor("int32", {1}, {1})}, {"cos_sin", tensor("fp32", {2, 2}, {5, 5, 0.6, 0.8})}});
    expect_near_all(run("rope", d, "q"), {-1.0, 2.0}, 1e-12);
    expect_near_all(run("rope", d, "k"), {1.8, 2.4}, 1e-12);
  }
  {  // ends (0, 2, 3): group 0 empty, rows 0-1 use expert 1, row 2 expert 2
    auto d = hand_case("grouped_gemm", {{"G", 3}, {"M", 3}, {"N", 1}, {"K", 2}},
                       {{"a", tensor("bf16", {3, 2}, {1, 2, 3, 4, 5, 6})},
                        {"w", tensor("bf16", {3, 1, 2}, {9, 9, 1, 1, 1, -1})},
                        {"ends", tensor("int32", {3}, {0, 2, 3})}});
    expect_near_all(run("grouped_gemm", d, "out"), {3, 7, -1}, 0);
  }
  {  // (1, 3, 2, 3): the two 3s, lowest index first
    auto d = hand_case("topk", {{"R", 1}, {"V", 4}, {"KK", 2}}, {{"x", tensor("bf16", {1, 4}, {1, 3, 2, 3})}});
    expect_near_all(run("topk", d, "values"), {3, 3}, 0);
    expect_near_all(run("topk", d, "indices"), {1, 3}, 0);
  }
  {  // real values carry their scales: (1, 2) . (3, 4) = 11
    auto d = hand_case("fp8_block_gemm", {{"M", 1}, {"N", 1}, {"K", 2}},
                       {{"a", tensor("fp8_e4m3", {1, 2}, {1, 2})}, {"b", tensor("fp8_e4m3", {1, 2}, {3, 4})}});
    expect_near_all(run("fp8_block_gemm", d, "out"), {11}, 0);
  }
}

}  // namespace
}  // namespace kfleet::problems
