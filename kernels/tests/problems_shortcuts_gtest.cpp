// The shortcut kernels of the library (kernels/problems/<name>/tests/*.cu other than wrong.cu
// and nothing.cu): kernels that are faster because they assume something about their data that
// benign data keeps and the edge of real data breaks. Each one's arithmetic is run here on the
// CPU, on the very inputs the harness draws (make_case), as the kernel does it (fp16 and bf16
// steps rounded where it rounds, its order of reduction where that matters): each passes every
// benign small case of its problem and fails a required case, naming an output. The GPU run of
// the same kernels is scripts/gpu-problems-proof.sh's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "problem_test_support.hpp"
#include "numeric.hpp"
#include "problem_cpu.hpp"

namespace kfleet::problems {
namespace {
namespace fs = std::filesystem;

using test_support::dev;
using test_support::library;
std::int32_t dev_int(const Tensor& t, std::size_t i) {
  std::int32_t v;
  std::memcpy(&v, &t.bytes[4 * i], 4);
  return v;
}
std::uint16_t bits16(const Tensor& t, std::size_t i) {
  std::uint16_t h;
  std::memcpy(&h, &t.bytes[2 * i], 2);
  return h;
}

// One fp16 / bf16 operation's result: the exact value rounded once to the format.
float h(double x) { return harness::fp16_decode(harness::fp16_encode(static_cast<float>(x))); }
float bf(double x) { return harness::bf16_decode(harness::bf16_encode(static_cast<float>(x))); }

constexpr double kUnwritten = NAN;  // what a kernel leaves in an output it does not write

// ---- softmax ----

Tensors softmax_shifted(const CaseData& d, bool by_first) {
  const auto R = static_cast<std::size_t>(d.dim("R")), V = static_cast<std::size_t>(d.dim("V"));
  const Tensor& x = d.inputs.at("x");
  Tensor y = output_tensor(d, "y");
  for (std::size_t r = 0; r < R; ++r) {
    const float shift = by_first ? dev(x, r * V) : 0.0f;
    float sum = 0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(dev(x, r * V + v) - shift);
    const float inv = 1.0f / sum;
    for (std::size_t v = 0; v < V; ++v) y.real[r * V + v] = h(std::exp(dev(x, r * V + v) - shift) * inv);
  }
  return {{"y", y}};
}
Tensors softmax_no_max(const CaseData& d) { return softmax_shifted(d, false); }
Tensors softmax_first_shift(const CaseData& d) { return softmax_shifted(d, true); }

// ---- rmsnorm ----

Tensors rmsnorm_fp16_sum(const CaseData& d) {
  constexpr std::size_t kThreads = 256;
  const auto T = static_cast<std::size_t>(d.dim("T")), H = static_cast<std::size_t>(d.dim("H"));
  const Tensor &x = d.inputs.at("x"), &w = d.inputs.at("weight");
  Tensor y = output_tensor(d, "y");
  for (std::size_t t = 0; t < T; ++t) {
    std::vector<float> partial(kThreads, 0.0f);
    for (std::size_t th = 0; th < kThreads; ++th)
      for (std::size_t i = th; i < H; i += kThreads) {
        const float v = h(dev(x, t * H + i));
        partial[th] = h(static_cast<double>(v) * v + partial[th]);  // __hfma: one rounding
      }
    for (std::size_t s = kThreads / 2; s > 0; s /= 2)
      for (std::size_t th = 0; th < s; ++th) partial[th] = h(static_cast<double>(partial[th]) + partial[th + s]);
    const float inv = 1.0f / std::sqrt(partial[0] / static_cast<float>(H) + static_cast<float>(d.scalars.at("eps")));
    for (std::size_t i = 0; i < H; ++i) y.real[t * H + i] = bf(dev(x, t * H + i) * inv * dev(w, i));
  }
  return {{"y", y}};
}

Tensors rmsnorm_row_in_registers(const CaseData& d) {
  constexpr std::size_t kHeld = 1024 * 8;
  const auto T = static_cast<std::size_t>(d.dim("T")), H = static_cast<std::size_t>(d.dim("H"));
  const Tensor &x = d.inputs.at("x"), &w = d.inputs.at("weight");
  Tensor y = output_tensor(d, "y");
  for (std::size_t t = 0; t < T; ++t) {
    float ss = 0;
    for (std::size_t i = 0; i < std::min(H, kHeld); ++i) ss += dev(x, t * H + i) * dev(x, t * H + i);
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(H) + static_cast<float>(d.scalars.at("eps")));
    for (std::size_t i = 0; i < H; ++i)
      y.real[t * H + i] = i < kHeld ? bf(dev(x, t * H + i) * inv * dev(w, i)) : kUnwritten;
  }
  return {{"y", y}};
}

// ---- rope ----

template <class Rotate>
Tensors rope_with(const CaseData& d, Rotate rotate, bool pos16) {
  const auto T = static_cast<std::size_t>(d.dim("T")), D = static_cast<std::size_t>(d.dim("D")), half = D / 2;
  const Tensor &pos = d.inputs.at("positions"), &cs = d.inputs.at("cos_sin");
  Tensors out;
  for (const char* name : {"q", "k"}) {
    const Tensor& x = d.inputs.at(name);
    const auto H = static_cast<std::size_t>(d.dim(name == std::string("q") ? "HQ" : "HK"));
    Tensor o = output_tensor(d, name);
    for (std::size_t t = 0; t < T; ++t) {
      std::int64_t p = dev_int(pos, t);
      if (pos16) p = static_cast<std::uint16_t>(p);
      for (std::size_t hh = 0; hh < H; ++hh)
        for (std::size_t i = 0; i < half; ++i) {
          const std::size_t at = (t * H + hh) * D;
          const float c = dev(cs, static_cast<std::size_t>(p) * D + i), s = dev(cs, static_cast<std::size_t>(p) * D + half + i);
          rotate(dev(x, at + i), dev(x, at + half + i), c, s, &o.real[at + i], &o.real[at + half + i]);
        }
    }
    out[name] = o;
  }
  return out;
}
void rotate_fp32(float x1, float x2, float c, float s, double* o1, double* o2) {
  *o1 = bf(x1 * c - x2 * s);
  *o2 = bf(x2 * c + x1 * s);
}
void rotate_bf16(float x1, float x2, float c, float s, double* o1, double* o2) {
  const float cb = bf(c), sb = bf(s);
  *o1 = bf(static_cast<double>(bf(static_cast<double>(x1) * cb)) - bf(static_cast<double>(x2) * sb));
  *o2 = bf(static_cast<double>(bf(static_cast<double>(x2) * cb)) + bf(static_cast<double>(x1) * sb));
}
Tensors rope_pos16(const CaseData& d) { return rope_with(d, rotate_fp32, true); }
Tensors rope_bf16_math(const CaseData& d) { return rope_with(d, rotate_bf16, false); }

// ---- topk ----

Tensors topk_neg_inf_sentinel(const CaseData& d) {
  const auto R = static_cast<std::size_t>(d.dim("R")), V = static_cast<std::size_t>(d.dim("V")),
             KK = static_cast<std::size_t>(d.dim("KK"));
  const Tensor& x = d.inputs.at("x");
  Tensor values = output_tensor(d, "values"), indices = output_tensor(d, "indices");
  for (std::size_t r = 0; r < R; ++r) {
    std::vector<float> bv(KK, -INFINITY);
    std::vector<int> bi(KK, -1);
    for (std::size_t i = 0; i < V; ++i) {
      const float v = dev(x, r * V + i);
      if (!(v > bv[KK - 1])) continue;
      std::size_t j = KK - 1;
      while (j > 0 && v > bv[j - 1]) {
        bv[j] = bv[j - 1];
        bi[j] = bi[j - 1];
        --j;
      }
      bv[j] = v;
      bi[j] = static_cast<int>(i);
    }
    for (std::size_t j = 0; j < KK; ++j) {
      values.real[r * KK + j] = bv[j];
      indices.real[r * KK + j] = bi[j];
    }
  }
  return {{"values", values}, {"indices", indices}};
}

Tensors topk_int_bits(const CaseData& d) {
  const auto R = static_cast<std::size_t>(d.dim("R")), V = static_cast<std::size_t>(d.dim("V")),
             KK = static_cast<std::size_t>(d.dim("KK"));
  const Tensor& x = d.inputs.at("x");
  Tensor values = output_tensor(d, "values"), indices = output_tensor(d, "indices");
  for (std::size_t r = 0; r < R; ++r) {
    std::vector<long long> keys(V);
    for (std::size_t i = 0; i < V; ++i)
      keys[i] = (static_cast<long long>(static_cast<std::int16_t>(bits16(x, r * V + i))) * (1ll << 32)) |
                (0xFFFFFFFFll - static_cast<long long>(i));
    std::sort(keys.begin(), keys.end(), std::greater<>());  // the k rounds of integer max
    for (std::size_t j = 0; j < KK; ++j) {
      const auto i = static_cast<std::size_t>(0xFFFFFFFFll - (keys[j] & 0xFFFFFFFFll));
      values.real[r * KK + j] = dev(x, r * V + i);
      indices.real[r * KK + j] = static_cast<double>(i);
    }
  }
  return {{"values", values}, {"indices", indices}};
}

// ---- grouped_gemm ----

// Row m of group g times expert g's weight; groups the kernel never reaches stay unwritten.
Tensors grouped_with(const CaseData& d, std::int64_t (*group_of)(const CaseData&, std::int64_t m)) {
  const auto M = d.dim("M"), N = d.dim("N"), K = d.dim("K");
  const Tensor &a = d.inputs.at("a"), &w = d.inputs.at("w");
  Tensor out = output_tensor(d, "out");
  for (std::int64_t m = 0; m < M; ++m) {
    const std::int64_t g = group_of(d, m);
    for (std::int64_t n = 0; n < N; ++n) {
      if (g < 0) {
        out.real[m * N + n] = kUnwritten;
        continue;
      }
      float acc = 0;
      for (std::int64_t k = 0; k < K; ++k) acc += dev(a, m * K + k) * dev(w, (g * N + n) * K + k);
      out.real[m * N + n] = bf(acc);
    }
  }
  return {{"out", out}};
}
std::int64_t warp_vote_group(const CaseData& d, std::int64_t m) {
  const auto G = d.dim("G");
  const Tensor& ends = d.inputs.at("ends");
  std::int64_t votes = 0;
  for (std::int64_t lane = 0; lane < 32 && lane < G; ++lane) votes += dev_int(ends, lane) <= m;
  return std::min(votes, G - 1);
}
std::int64_t first_min_gm_group(const CaseData& d, std::int64_t m) {
  const auto G = d.dim("G"), M = d.dim("M");
  const Tensor& ends = d.inputs.at("ends");
  std::int64_t g = 0;
  while (g < G - 1 && dev_int(ends, g) <= m) ++g;
  return g < std::min(G, M) ? g : -1;  // only min(G, M) groups are launched
}
Tensors grouped_gemm_warp_lookup(const CaseData& d) { return grouped_with(d, warp_vote_group); }
Tensors grouped_gemm_min_gm_grid(const CaseData& d) { return grouped_with(d, first_min_gm_group); }

// ---- fp8_block_gemm ----

enum class Epilogue { bf16, fp16, fp16_clamp };

Tensors fp8_with(const CaseData& d, Epilogue epilogue) {
  const auto M = d.dim("M"), N = d.dim("N"), K = d.dim("K"), KB = (K + 127) / 128;
  const Tensor &a = d.inputs.at("a"), &b = d.inputs.at("b");
  const Tensor &as = d.inputs.at("a_scale"), &bs = d.inputs.at("b_scale");
  Tensor out = output_tensor(d, "out");
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (std::int64_t kb = 0; kb < KB; ++kb) {
        float part = 0;
        for (std::int64_t k = kb * 128; k < std::min(K, (kb + 1) * 128); ++k) part += dev(a, m * K + k) * dev(b, n * K + k);
        acc += part * static_cast<float>(as.real[m * KB + kb]) * static_cast<float>(bs.real[(n / 128) * KB + kb]);
      }
      const double stored = epilogue == Epilogue::fp16 ? h(acc)
                            : epilogue == Epilogue::fp16_clamp ? std::min(std::max(acc, -65504.0f), 65504.0f)
                                                               : acc;
      out.real[m * N + n] = bf(stored);
    }
  return {{"out", out}};
}
Tensors fp8_fp16_range_clamp(const CaseData& d) { return fp8_with(d, Epilogue::fp16_clamp); }
Tensors fp8_fp16_epilogue(const CaseData& d) { return fp8_with(d, Epilogue::fp16); }

struct Shortcut {
  const char* problem;
  const char* kernel;  // kernels/problems/<problem>/tests/<kernel>.cu
  ReferenceFn emulate;
};

const std::vector<Shortcut>& shortcuts() {
  static const std::vector<Shortcut> s = {
      {"softmax", "no_max", softmax_no_max},
      {"softmax", "first_shift", softmax_first_shift},
      {"rmsnorm", "fp16_sum", rmsnorm_fp16_sum},
      {"rmsnorm", "row_in_registers", rmsnorm_row_in_registers},
      {"rope", "pos16", rope_pos16},
      {"rope", "bf16_math", rope_bf16_math},
      {"topk", "neg_inf_sentinel", topk_neg_inf_sentinel},
      {"topk", "int_bits", topk_int_bits},
      {"grouped_gemm", "warp_lookup", grouped_gemm_warp_lookup},
      {"grouped_gemm", "min_gm_grid", grouped_gemm_min_gm_grid},
      {"fp8_block_gemm", "fp16_range_clamp", fp8_fp16_range_clamp},
      {"fp8_block_gemm", "fp16_epilogue", fp8_fp16_epilogue},
  };
  return s;
}

bool small(const ProblemDef& def, const ProblemCase& c) {
  return *def.flops->eval(c.dims) <= 20'000'000 && *def.bytes->eval(c.dims) <= 1'000'000;
}

// The first failing output's reason ("" when every output passes its check).
std::string verdict(const ProblemDef& p, const CaseData& data, const Tensors& got) {
  const Tensors ref = find_reference(p.name)(data);
  for (const auto& o : p.outputs) {
    const std::string why = check_output(data, o, ref.at(o.name), got.at(o.name));
    if (!why.empty()) return why;
  }
  return "";
}

// Every generic problem has two shortcut kernels or more in tests/, each with its emulation here.
TEST(ProblemShortcuts, EveryProblemHasTwoShortcutsEachEmulatedHere) {
  std::set<std::string> emulated;
  for (const auto& s : shortcuts()) emulated.insert(std::string(s.problem) + "/" + s.kernel);
  for (const auto& p : library().problems) {
    if (p.abi != "generic") continue;
    int n = 0;
    for (const auto& e : fs::directory_iterator(fs::path(library().root) / p.name / "tests")) {
      const std::string stem = e.path().stem().string();
      if (e.path().extension() != ".cu" || stem == "wrong" || stem == "nothing") continue;
      ++n;
      EXPECT_TRUE(emulated.count(p.name + "/" + stem)) << e.path() << " has no CPU emulation in this test";
    }
    EXPECT_GE(n, 2) << p.name;
  }
  for (const auto& s : shortcuts())
    EXPECT_TRUE(fs::exists(fs::path(library().root) / s.problem / "tests" / (std::string(s.kernel) + ".cu")))
        << s.problem << "/" << s.kernel;
}

// Right on the benign cases (so a search would keep them), wrong on a required case (so no job
// of the problem can pass with them), and the failure names an output.
TEST(ProblemShortcuts, EachPassesTheBenignCasesAndFailsARequiredOne) {
  for (const auto& s : shortcuts()) {
    const ProblemDef* p = library().find(s.problem);
    ASSERT_NE(p, nullptr) << s.problem;
    int benign = 0, failed_required = 0;
    for (const auto& c : p->cases) {
      if (c.required) {
        for (std::uint64_t seed : {0u, 1u}) {
          SCOPED_TRACE(std::string(s.problem) + "/" + s.kernel + " on " + c.name + " seed " + std::to_string(seed));
          auto data = make_case(*p, c, seed);
          ASSERT_TRUE(data.ok()) << data.error().message;
          const std::string why = verdict(*p, *data, s.emulate(*data));
          EXPECT_NE(why, "") << "the shortcut passes the required case";
          bool names_output = false;
          for (const auto& o : p->outputs) names_output = names_output || why.rfind(o.name + ":", 0) == 0;
          EXPECT_TRUE(names_output) << why;
          failed_required += !why.empty();
        }
      } else if (small(*p, c)) {
        ++benign;
        for (std::uint64_t seed : {0u, 1u, 2u}) {
          auto data = make_case(*p, c, seed);
          ASSERT_TRUE(data.ok()) << data.error().message;
          EXPECT_EQ(verdict(*p, *data, s.emulate(*data)), "")
              << s.problem << "/" << s.kernel << " fails the benign case " << c.name << " seed " << seed;
        }
      }
    }
    EXPECT_GE(benign, 1) << s.problem;
    EXPECT_GE(failed_required, 2) << s.problem << "/" << s.kernel;
  }
}

}  // namespace
}  // namespace kfleet::problems
