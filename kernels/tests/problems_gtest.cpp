// The problem library as CI holds it without a GPU: every definition parses and names files
// that exist, every problem has a CPU reference and two cases or more, the inputs follow their
// distributions, and on every small case the reference (rounded to the output's dtype) passes
// each output's check while each do-nothing output fails it (gate strength).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <cstring>

#include "problem_test_support.hpp"
#include "launch_list.hpp"
#include "numeric.hpp"
#include "problem_cpu.hpp"

namespace kfleet::problems {
namespace {

using test_support::library;
// Cases small enough for an fp64 reference in a unit test.
bool small(const ProblemDef& def, const ProblemCase& c) {
  auto f = def.flops->eval(c.dims);
  auto b = def.bytes->eval(c.dims);
  return f && b && *f <= 20'000'000 && *b <= 1'000'000;
}

TEST(ProblemLibrary, LoadsEveryProblemWithoutIssues) {
  const auto& lib = library();
  std::string text;
  for (const auto& i : lib.issues) text += i.to_string() + "\n";
  EXPECT_TRUE(lib.issues.empty()) << text;
  std::set<std::string> names;
  for (const auto& p : lib.problems) names.insert(p.name);
  EXPECT_EQ(names, (std::set<std::string>{"attention", "fp8_block_gemm", "grouped_gemm", "rmsnorm",
                                          "rope", "scaled_mm", "softmax", "topk"}));
}

TEST(ProblemLibrary, EveryProblemHasACpuReferenceAndTwoCases) {
  std::set<std::string> with_reference;
  for (const auto& p : library().problems) {
    EXPECT_GE(p.cases.size(), 2u) << p.name;
    EXPECT_NE(find_reference(p.name), nullptr) << p.name << " has no CPU reference in registry.cpp";
    EXPECT_TRUE(p.reference.count("cpu")) << p.name;
    EXPECT_GE(std::count_if(p.cases.begin(), p.cases.end(), [&](const ProblemCase& c) { return small(p, c); }), 1)
        << p.name << " has no case small enough for CI";
    if (p.abi == "generic") {
      EXPECT_FALSE(p.kernels.empty()) << p.name << " has no kernel";
      EXPECT_LE(p.abi_slots().size(), 12u) << p.name;
    }
    with_reference.insert(p.name);
  }
  const auto reg = referenced_problems();
  EXPECT_EQ(std::set<std::string>(reg.begin(), reg.end()), with_reference)
      << "registry.cpp lists a problem the library does not have";
}

TEST(ProblemLibrary, ReferencePassesAndEveryDoNothingOutputFails) {
  int checked = 0;
  for (const auto& p : library().problems) {
    const ReferenceFn ref = find_reference(p.name);
    ASSERT_NE(ref, nullptr) << p.name;
    for (const auto& c : p.cases) {
      if (!small(p, c) && !c.required) continue;  // the required cases too: gate strength at the edge
      for (std::uint64_t seed : {0u, 1u}) {
        auto data = make_case(p, c, seed);
        ASSERT_TRUE(data.ok()) << data.error().message;
        const Tensors out = ref(*data);
        for (const auto& o : p.outputs) {
          SCOPED_TRACE(p.name + "/" + c.name + "/" + o.name + " seed " + std::to_string(seed));
          ASSERT_TRUE(out.count(o.name));
          const Tensor perfect = rounded(out.at(o.name));
          EXPECT_EQ(check_output(*data, o, out.at(o.name), perfect), "");
          for (const auto& l : o.lazy) {
            const Tensor lazy = lazy_output(*data, o, l, out.at(o.name));
            EXPECT_NE(check_output(*data, o, out.at(o.name), lazy), "")
                << "the do-nothing output '" << l.to_string() << "' passes the check";
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 40);
}

// Every generic problem has a required case at the edge of real data, saying where its data
// comes from, drawing some input its own way, and small enough for every job (its tensors hold
// at most 64 MiB together).
TEST(ProblemLibrary, EveryGenericProblemHasASmallDocumentedRequiredCase) {
  int required = 0;
  for (const auto& p : library().problems) {
    if (p.abi != "generic") continue;
    EXPECT_FALSE(p.required_cases().empty()) << p.name;
    EXPECT_GE(p.version, 2) << p.name << ": adding a required case changes the contract";
    for (const auto& c : p.cases) {
      if (!c.required) continue;
      ++required;
      EXPECT_GE(c.doc.size(), 80u) << p.name << "/" << c.name << ": say where its distribution comes from";
      // Its own draws (init) are optional: grouped_gemm's edge is its shape (more experts
      // than rows), drawn as every case's is.
      std::uint64_t bytes = 0;
      for (const auto* list : {&p.inputs, &p.outputs})
        for (const auto& t : *list) {
          auto shape = p.shape_of(t, c);
          ASSERT_TRUE(shape) << p.name << "/" << c.name << "/" << t.name;
          std::uint64_t n = 1;
          for (auto e : *shape) n *= static_cast<std::uint64_t>(e);
          bytes += n * (t.dtype == "fp8_e4m3" ? 1 : t.dtype == "bf16" || t.dtype == "fp16" ? 2 : t.dtype == "int64" ? 8 : 4);
        }
      EXPECT_LE(bytes, 64ull << 20) << p.name << "/" << c.name << " is not small enough for every job";
    }
  }
  EXPECT_GE(required, 6);
}

TEST(ProblemInputs, FollowTheirDistributionsAndAreDeterministic) {
  const auto& lib = library();
  for (const auto& p : lib.problems) {
    for (const auto& c : p.cases) {
      if (!small(p, c)) continue;
      auto a = make_case(p, c, 7), b = make_case(p, c, 7), other = make_case(p, c, 8);
      ASSERT_TRUE(a.ok() && b.ok() && other.ok());
      for (const auto& in : p.inputs) {
        SCOPED_TRACE(p.name + "/" + c.name + "/" + in.name);
        const Tensor& t = a->inputs.at(in.name);
        EXPECT_EQ(t.real, b->inputs.at(in.name).real);
        EXPECT_EQ(t.bytes, b->inputs.at(in.name).bytes);
        if (in.init.dist != "scale" && t.elements() > 4) {
          EXPECT_NE(t.real, other->inputs.at(in.name).real);
        }
        const ProblemInit& init = p.init_of(in, c);
        for (double v : t.real) ASSERT_TRUE(std::isfinite(v) || (init.neg_inf && v == -INFINITY)) << v;
        if (init.dist == "int") {
          for (double v : t.real) ASSERT_TRUE(v >= init.min && v <= init.max) << v;
        }
        if (init.dist == "group_ends") {
          EXPECT_TRUE(std::is_sorted(t.real.begin(), t.real.end()));
          EXPECT_EQ(t.real.back(), static_cast<double>(*init.total->eval(c.dims)));
        }
        if (in.dtype == "fp8_e4m3" && in.scaled_by && !in.scaled_by->tensor.empty()) {
          // real = decode(code) * the scale of the element's block
          const Tensor& s = a->inputs.at(in.scaled_by->tensor);
          const auto cols = static_cast<std::size_t>(t.shape[1]);
          const auto scols = static_cast<std::size_t>(s.shape[1]);
          const auto& blk = in.scaled_by->block;
          for (std::size_t i = 0; i < t.elements(); ++i) {
            const std::size_t r = i / cols, col = i % cols;
            const double scale = s.real[(r / static_cast<std::size_t>(blk[0])) * scols + col / static_cast<std::size_t>(blk[1])];
            ASSERT_EQ(t.real[i], harness::fp8_e4m3_decode(t.bytes[i]) * scale) << i;
          }
        }
      }
    }
  }
}

// The required cases draw what their docs say: each edge is really in the data.
TEST(ProblemInputs, TheStressCasesHoldTheirEdges) {
  auto stress = [&](const char* name, std::uint64_t seed = 0) {
    const ProblemDef* p = library().find(name);
    EXPECT_NE(p, nullptr);
    auto d = make_case(*p, *p->find_case("stress"), seed);
    EXPECT_TRUE(d.ok());
    return *d;
  };
  {  // softmax: row offsets to +-3e4, spreads to std 1500
    const auto d = stress("softmax");
    const auto& x = d.inputs.at("x").real;
    const std::size_t R = 16, V = 4096;
    double lo_mean = 1e9, hi_mean = -1e9, widest = 0;
    for (std::size_t r = 0; r < R; ++r) {
      double sum = 0, mn = 1e9, mx = -1e9;
      for (std::size_t v = 0; v < V; ++v) {
        sum += x[r * V + v];
        mn = std::min(mn, x[r * V + v]);
        mx = std::max(mx, x[r * V + v]);
      }
      lo_mean = std::min(lo_mean, sum / V);
      hi_mean = std::max(hi_mean, sum / V);
      widest = std::max(widest, mx - mn);
    }
    EXPECT_GT(hi_mean - lo_mean, 1e4);
    EXPECT_GT(widest, 1000);
    for (double v : x) ASSERT_LE(std::fabs(v), 65504);
  }
  {  // rmsnorm: 4 massive channels in every row
    const auto d = stress("rmsnorm");
    const auto& x = d.inputs.at("x").real;
    const std::size_t T = 8, H = 16384;
    int massive_columns = 0;
    for (std::size_t i = 0; i < H; ++i) {
      bool all = true;
      for (std::size_t t = 0; t < T; ++t) all = all && std::fabs(x[t * H + i]) >= 499;
      massive_columns += all;
    }
    EXPECT_EQ(massive_columns, 4);
  }
  {  // rope: positions past 65535, dimensions 5 and 37 of q and k massive
    const auto d = stress("rope");
    const auto& pos = d.inputs.at("positions").real;
    EXPECT_GT(*std::max_element(pos.begin(), pos.end()), 65535);
    const auto& q = d.inputs.at("q").real;
    for (std::size_t row = 0; row < q.size() / 64; ++row) {
      ASSERT_GE(std::fabs(q[row * 64 + 5]), 49.5);
      ASSERT_GE(std::fabs(q[row * 64 + 37]), 49.5);
    }
  }
  {  // topk: finite values all negative, repeats, -inf, rows with fewer finite values than k
    const auto d = stress("topk");
    const auto& x = d.inputs.at("x").real;
    const std::size_t R = 32, V = 1024;
    int short_rows = 0;
    std::set<double> distinct;
    for (std::size_t r = 0; r < R; ++r) {
      int finite = 0;
      for (std::size_t v = 0; v < V; ++v) {
        const double e = x[r * V + v];
        if (std::isfinite(e)) {
          ++finite;
          ASSERT_LT(e, 0);
          distinct.insert(e);
        } else {
          ASSERT_EQ(e, -INFINITY);
        }
      }
      short_rows += finite < 16;
    }
    EXPECT_GE(short_rows, 1);
    EXPECT_LT(distinct.size(), 1000u);  // values repeat
  }
  {  // grouped_gemm: most groups empty, some of one row
    const auto d = stress("grouped_gemm");
    const auto& ends = d.inputs.at("ends").real;
    int empty = 0, one = 0;
    double begin = 0;
    for (double e : ends) {
      empty += e == begin;
      one += e - begin == 1;
      begin = e;
    }
    EXPECT_GE(empty, 30);
    EXPECT_GE(one, 1);
  }
  {  // fp8: +-448 codes, subnormal codes, scales spanning more than 1e6, values past fp16
    const auto d = stress("fp8_block_gemm");
    const auto& a = d.inputs.at("a");
    int max_codes = 0, subnormal = 0;
    for (auto code : a.bytes) {
      max_codes += (code & 0x7F) == 0x7E;
      subnormal += (code & 0x78) == 0 && (code & 0x07) != 0;
    }
    EXPECT_GE(max_codes, 16);
    EXPECT_GE(subnormal, 100);
    const auto& sc = d.inputs.at("a_scale").real;
    EXPECT_GT(*std::max_element(sc.begin(), sc.end()) / *std::min_element(sc.begin(), sc.end()), 1e6);
    double biggest = 0;
    for (double v : a.real) biggest = std::max(biggest, std::fabs(v));
    EXPECT_GT(biggest, 65504);
  }
}

TEST(ProblemChecks, TopkAcceptsEveryTieBreakAndRefusesWrongSets) {
  const ProblemDef* p = library().find("topk");
  ASSERT_NE(p, nullptr);
  auto data = make_case(*p, *p->find_case("ties"), 0);
  ASSERT_TRUE(data.ok());
  const Tensors ref = find_reference("topk")(*data);
  const ProblemTensor& o = *p->output("indices");
  const Tensor& x = data->inputs.at("x");
  const auto V = static_cast<std::size_t>(data->dim("V")), KK = static_cast<std::size_t>(data->dim("KK"));
  // The same answer with ties broken the other way: the highest index first.
  Tensor other = ref.at("indices");
  int ties = 0;
  for (std::size_t r = 0; r < other.elements() / KK; ++r) {
    std::vector<std::size_t> idx(V);
    for (std::size_t i = 0; i < V; ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      const double va = x.real[r * V + a], vb = x.real[r * V + b];
      return va != vb ? va > vb : a > b;
    });
    for (std::size_t j = 0; j < KK; ++j) {
      ties += other.real[r * KK + j] != static_cast<double>(idx[j]);
      other.real[r * KK + j] = static_cast<double>(idx[j]);
    }
  }
  EXPECT_GT(ties, 0) << "the ties case has no ties near the top: the test proves nothing";
  EXPECT_EQ(check_output(*data, o, ref.at("indices"), other), "");
  // Wrong: an index repeated, one out of range, the k-th largest replaced by the (k+1)-th.
  Tensor dup = ref.at("indices");
  dup.real[1] = dup.real[0];
  EXPECT_NE(check_output(*data, o, ref.at("indices"), dup).find("appears twice"), std::string::npos);
  Tensor out_of_range = ref.at("indices");
  out_of_range.real[0] = static_cast<double>(V);
  EXPECT_NE(check_output(*data, o, ref.at("indices"), out_of_range).find("outside"), std::string::npos);
  Tensor unsorted = ref.at("indices");
  std::swap(unsorted.real[0], unsorted.real[KK - 1]);
  if (x.real[static_cast<std::size_t>(unsorted.real[0])] != x.real[static_cast<std::size_t>(unsorted.real[KK - 1])]) {
    EXPECT_NE(check_output(*data, o, ref.at("indices"), unsorted), "");
  }
}

TEST(ProblemChecks, ToleranceAndExactSayWhatFailed) {
  const ProblemDef* p = library().find("rmsnorm");
  ASSERT_NE(p, nullptr);
  auto data = make_case(*p, *p->find_case("small"), 0);
  ASSERT_TRUE(data.ok());
  const Tensors ref = find_reference("rmsnorm")(*data);
  Tensor bad = rounded(ref.at("y"));
  bad.real[3] += 1.0;
  EXPECT_EQ(check_output(*data, *p->output("y"), ref.at("y"), bad),
            "y: 1 of 1024 elements outside atol 0.01 + rtol 0.01 * |ref|");
  bad.real[3] = std::nan("");
  EXPECT_EQ(check_output(*data, *p->output("y"), ref.at("y"), bad), "y: output has 1 NaN and 0 Inf of 1024 elements");
  const ProblemDef* t = library().find("topk");
  auto td = make_case(*t, *t->find_case("small"), 0);
  ASSERT_TRUE(td.ok());
  const Tensors tref = find_reference("topk")(*td);
  Tensor v = tref.at("values");
  v.real[2] = 0.5;
  const std::string why = check_output(*td, *t->output("values"), tref.at("values"), v);
  EXPECT_EQ(why.rfind("values: 1 of 32 elements differ (exact check); first at 2: 0.5, want ", 0), 0u) << why;
}

// The struct a launch gets, filled from a definition and a case: every field where PROBLEM-ABI.md says,
// byte-identical when built twice (replay compares the recorded bytes with its own), and its
// words pass the recorder's address scan with the tensors in the fixed arena.
TEST(ProblemArgs, FilledFromADefinitionAndACase) {
  const ProblemDef* p = library().find("rope");
  ASSERT_NE(p, nullptr);
  auto data = make_case(*p, *p->find_case("small"), 0);
  ASSERT_TRUE(data.ok());
  constexpr std::uint64_t base = 0x600000000000ull;
  const std::vector<std::uint64_t> addr = {base, base + 0x10000, base + 0x20000, base + 0x30000};
  auto spec = args_spec(*data, addr, base + 0x100000, 1 << 20);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  kfleet_problem_args a, b;
  ASSERT_EQ(build_problem_args(*spec, &a), "");
  ASSERT_EQ(build_problem_args(*spec, &b), "");
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
  EXPECT_EQ(a.abi_version, 1u);
  EXPECT_EQ(a.struct_bytes, sizeof(kfleet_problem_args));
  EXPECT_STREQ(a.problem, "rope");
  EXPECT_EQ(a.num_tensors, 4);
  EXPECT_EQ(a.num_dims, 5);
  EXPECT_EQ(a.dims[0], 8);   // T
  EXPECT_EQ(a.dims[3], 64);  // D
  EXPECT_EQ(a.dims[5], 0);   // unused entries are zero
  const kfleet_tensor& q = a.tensors[0];
  EXPECT_EQ(q.role, KFLEET_TENSOR_INOUT);
  EXPECT_EQ(q.dtype, KFLEET_BF16);
  EXPECT_EQ(q.rank, 3);
  EXPECT_EQ(q.shape[1], 4);
  EXPECT_EQ(q.stride[0], 4 * 64);
  EXPECT_EQ(q.stride[2], 1);
  EXPECT_EQ(q.bytes, 8 * 4 * 64 * 2);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q.data), base);
  EXPECT_EQ(a.tensors[2].role, KFLEET_TENSOR_INPUT);
  EXPECT_EQ(a.tensors[2].dtype, KFLEET_INT32);
  EXPECT_EQ(a.tensors[4].data, nullptr);

  // The recorder's scan of kernel parameters: the whole struct by value, one 1896-byte slot.
  harness::LaunchList l;
  for (int i = 0; i < 4; ++i) l.buffers.push_back({"t" + std::to_string(i), addr[i], static_cast<std::uint64_t>(a.tensors[i].bytes)});
  l.buffers.push_back({"workspace", base + 0x100000, 1 << 20});
  harness::LaunchNode n;
  n.kind = harness::LaunchNode::Kind::kernel;
  n.kernel.params.assign(reinterpret_cast<const std::uint8_t*>(&a), reinterpret_cast<const std::uint8_t*>(&a) + sizeof a);
  n.kernel.slots.push_back({0, static_cast<std::uint32_t>(sizeof a)});
  l.nodes.push_back(n);
  const auto nothing_else = [](std::uint64_t) { return false; };
  EXPECT_EQ(harness::check_addresses(l, base, base + (1ull << 40), nothing_else), "");
  kfleet_problem_args c = a;
  c.tensors[1].data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(base + 0x90000));  // in no buffer
  std::memcpy(l.nodes[0].kernel.params.data(), &c, sizeof c);
  EXPECT_NE(harness::check_addresses(l, base, base + (1ull << 40), nothing_else), "");
}

TEST(ProblemArgs, RefusesWhatTheAbiCannotHold) {
  ArgsSpec s;
  s.problem = "p";
  kfleet_problem_args a;
  s.tensors.resize(13, ArgsTensor{KFLEET_FP32, KFLEET_TENSOR_INPUT, {1}, 0});
  EXPECT_EQ(build_problem_args(s, &a), "13 tensors; the ABI holds 12");
  s.tensors.resize(1);
  s.tensors[0].shape.assign(7, 1);
  EXPECT_EQ(build_problem_args(s, &a), "tensor 0 has rank 7; the ABI holds 6");
  s.tensors[0].shape = {1};
  s.problem = std::string(32, 'x');
  EXPECT_EQ(build_problem_args(s, &a), "the problem's name must have 1 to 31 characters");
  const ProblemDef* mm = library().find("scaled_mm");
  auto data = make_case(*mm, mm->cases[0], 0);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(args_spec(*data, {}, 0, 0).error().message, "scaled_mm uses the family ABI scaled_mm, not kfleet_problem_args");
}

}  // namespace
}  // namespace kfleet::problems
