// The problem spec (PROBLEM-ABI.md, "The problem spec"): what kfleet writes from the library
// (case_spec.hpp) is what the harness reads (problem_spec.hpp), for every problem of the
// library; the reader's refusals name the line; and a problem's buffers, as the harness maps
// them, go through the launch list's address checks as the families' do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "problem_test_support.hpp"
#include "case_spec.hpp"
#include "launch_list.hpp"
#include "problem_cpu.hpp"
#include "problem_checks.hpp"
#include "numeric.hpp"
#include "problem_inputs.hpp"
#include "problem_reference_check.hpp"
#include "problem_spec.hpp"
#include "python_plan.hpp"

namespace kfleet::problems {
namespace {

using harness::ProblemSpec;

using test_support::library;
using test_support::read_back;

TEST(ProblemSpec, EveryGenericProblemRoundTrips) {
  int generic = 0;
  for (const auto& def : library().problems) {
    if (def.abi != "generic") {
      EXPECT_FALSE(problem_spec_text(def).ok()) << def.name << ": a family problem has no spec";
      continue;
    }
    ++generic;
    const ProblemSpec s = read_back(def);
    EXPECT_EQ(s.problem, def.name);
    EXPECT_EQ(s.version, static_cast<std::uint32_t>(def.version));
    EXPECT_EQ(s.dims, def.dims);
    ASSERT_EQ(s.scalars.size(), def.scalars.size());
    for (std::size_t i = 0; i < def.scalars.size(); ++i) {
      EXPECT_EQ(s.scalars[i].name, def.scalars[i].name);
      EXPECT_EQ(s.scalars[i].dtype, def.scalars[i].dtype);
    }
    const auto slots = def.abi_slots();
    ASSERT_EQ(s.tensors.size(), slots.size()) << def.name;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const auto& t = s.tensors[i];
      EXPECT_EQ(t.name, slots[i].tensor->name);
      EXPECT_EQ(t.dtype, abi_dtype(slots[i].tensor->dtype)) << t.name;
      EXPECT_EQ(t.role, slots[i].role == "input" ? KFLEET_TENSOR_INPUT
                        : slots[i].role == "inout" ? KFLEET_TENSOR_INOUT : KFLEET_TENSOR_OUTPUT);
      if (slots[i].role != "output") {
        const ProblemInit& init = slots[i].tensor->init;
        EXPECT_EQ(t.init.dist, init.dist) << t.name;
        if (init.dist == "normal") {
          EXPECT_EQ(t.init.mean, init.mean);
          EXPECT_EQ(t.init.std, init.std);
        }
        if (init.dist == "uniform" || init.dist == "int") {
          EXPECT_EQ(t.init.min, init.min);
          EXPECT_EQ(t.init.max, init.max);
        }
        EXPECT_EQ(t.init.sorted, init.sorted);
        EXPECT_EQ(t.init.unique, init.unique);
        const auto& sb = slots[i].tensor->scaled_by;
        EXPECT_EQ(t.init.scale_tensor >= 0, sb && !sb->tensor.empty()) << t.name;
        if (sb && !sb->tensor.empty()) {
          EXPECT_EQ(s.tensors[static_cast<std::size_t>(t.init.scale_tensor)].name, sb->tensor);
          EXPECT_EQ(t.init.block, sb->block);
        }
        if (init.block_amplitude) {
          EXPECT_EQ(t.init.amp_lo, init.block_amplitude->first);
          EXPECT_EQ(t.init.amp_hi, init.block_amplitude->second);
        }
      }
    }
    ASSERT_EQ(s.outputs.size(), def.outputs.size());
    for (std::size_t i = 0; i < def.outputs.size(); ++i) {
      const auto& o = s.outputs[i];
      const auto& d = def.outputs[i];
      EXPECT_EQ(o.name, d.name);
      EXPECT_EQ(s.tensors[static_cast<std::size_t>(o.slot)].name, d.in_place_of.empty() ? d.name : d.in_place_of);
      EXPECT_EQ(o.check.kind, d.check.kind);
      EXPECT_EQ(o.check.atol, d.check.atol);
      if (d.check.atol >= 0) {
        EXPECT_EQ(o.check.rtol, std::max(d.check.rtol, 0.0));
      }
      EXPECT_EQ(o.check.max_abs, d.check.max_abs);
      EXPECT_EQ(o.check.rel_l2, d.check.rel_l2);
      if (d.check.kind == "topk") {
        EXPECT_EQ(s.tensors[static_cast<std::size_t>(o.check.of)].name, d.check.of);
        EXPECT_EQ(o.check.largest, d.check.largest);
      }
      ASSERT_EQ(o.lazy.size(), d.lazy.size());
      for (std::size_t j = 0; j < d.lazy.size(); ++j) {
        EXPECT_EQ(o.lazy[j].kind, d.lazy[j].kind);
        if (d.lazy[j].kind == "copy") {
          EXPECT_EQ(s.tensors[static_cast<std::size_t>(o.lazy[j].input)].name, d.lazy[j].input);
        }
      }
    }
    ASSERT_EQ(s.cases.size(), def.cases.size());
    for (std::size_t ci = 0; ci < def.cases.size(); ++ci) {
      const ProblemCase& c = def.cases[ci];
      const auto& sc = s.cases[ci];
      EXPECT_EQ(sc.name, c.name);
      for (std::size_t d = 0; d < def.dims.size(); ++d) EXPECT_EQ(sc.dims[d], c.dims.at(def.dims[d]));
      for (std::size_t i = 0; i < slots.size(); ++i) EXPECT_EQ(sc.shapes[i], *def.shape_of(*slots[i].tensor, c)) << c.name;
      for (std::size_t k = 0; k < def.scalars.size(); ++k) {
        const double v = def.scalar_value(def.scalars[k], c);
        if (std::isnan(v)) {
          EXPECT_TRUE(std::isnan(sc.scalars[k]));
        } else {
          EXPECT_EQ(sc.scalars[k], v);
        }
      }
      for (std::size_t i = 0; i < def.inputs.size(); ++i) {  // each input's draw in this case
        const ProblemInit& want = def.init_of(def.inputs[i], c);
        const harness::SpecInit& got = sc.inits[i];
        EXPECT_EQ(got.dist, want.dist) << c.name << "/" << def.inputs[i].name;
        EXPECT_EQ(got.row_scale_hi, want.row_scale ? want.row_scale->second : 0.0);
        EXPECT_EQ(got.row_offset_lo, want.row_offset ? want.row_offset->first : 0.0);
        EXPECT_EQ(got.neg_inf_hi, want.neg_inf ? want.neg_inf->second : 0.0);
        EXPECT_EQ(got.step, want.step);
        EXPECT_EQ(got.outliers, want.outliers ? want.outliers->columns : 0);
        EXPECT_EQ(got.outlier_at, want.outliers ? want.outliers->at : std::vector<std::int64_t>{});
        EXPECT_EQ(got.amp_hi, want.block_amplitude ? want.block_amplitude->second : 0.0);
        if (want.dist == "int") {
          EXPECT_EQ(got.max, want.max) << c.name;
        }
      }
      EXPECT_EQ(sc.flops, static_cast<double>(*def.flops->eval(c.dims)));
      EXPECT_EQ(sc.bytes, static_cast<double>(*def.bytes->eval(c.dims)));
      for (std::size_t i = 0; i < slots.size(); ++i)
        if (slots[i].tensor->init.dist == "group_ends") {
          EXPECT_EQ(sc.totals[i], *slots[i].tensor->init.total->eval(c.dims));
        }
    }
  }
  EXPECT_GE(generic, 6);
}

// What the harness draws for a case, slot by slot (GenericProblem::fill runs these functions on
// the device, from the spec it reads): the same functions here on the host, from the spec.
std::vector<std::vector<std::uint8_t>> harness_draw(const ProblemSpec& s, const harness::SpecCase& c,
                                                    std::uint64_t seed) {
  std::vector<std::vector<std::uint8_t>> raw(s.tensors.size());
  for (std::size_t i = 0; i < s.tensors.size(); ++i)
    if (s.tensors[i].role != KFLEET_TENSOR_OUTPUT) raw[i].assign(c.elements(i) * abi_dtype_bytes(s.tensors[i].dtype), 0);
  for (std::size_t i = 0; i < s.tensors.size(); ++i) {
    const harness::SpecTensor& t = s.tensors[i];
    const harness::SpecInit& init = c.inits[i];
    if (t.role == KFLEET_TENSOR_OUTPUT || init.dist == "scale") continue;
    const std::uint64_t stream = harness::input_stream(s.problem, "case/" + c.name, seed, static_cast<int>(i));
    const std::size_t n = c.elements(i), cols = static_cast<std::size_t>(c.shapes[i].back());
    if (init.dist == "int" || init.dist == "group_ends") {
      std::vector<std::int64_t> v;
      EXPECT_EQ(harness::draw_int_values(init.dist == "group_ends", static_cast<std::int64_t>(init.min),
                                         static_cast<std::int64_t>(init.max), init.sorted, init.unique,
                                         c.totals[i], n, cols, stream, &v), "");
      for (std::size_t k = 0; k < n && k < v.size(); ++k) {
        const auto x = static_cast<std::int32_t>(v[k]);
        std::memcpy(&raw[i][4 * k], &x, 4);
      }
      continue;
    }
    const harness::RealDraw d = harness::spec_real_draw(init, c.shapes[i].back(), stream);
    const auto rows = harness::draw_rows(d, stream, n / cols);
    const harness::RowDraw* r = rows.empty() ? nullptr : rows.data();
    if (t.dtype == KFLEET_FP8_E4M3) {
      const std::size_t st = static_cast<std::size_t>(init.scale_tensor);
      harness::BlockMap m;
      m.rank = static_cast<int>(c.shapes[i].size());
      for (std::size_t k = 0; k < c.shapes[i].size(); ++k) {
        m.shape[k] = c.shapes[i][k];
        m.block[k] = init.block[k];
      }
      for (std::size_t b = 0; b < c.elements(st); ++b) {
        const float amp = static_cast<float>(harness::draw_amplitude(d, stream, b));
        const float scale = harness::fp8_quantise_block(
            b, m, [&](std::size_t e) { return harness::draw_value(d, stream, e, r) * amp; },
            [&](std::size_t e, std::uint8_t code) { raw[i][e] = code; });
        std::memcpy(&raw[st][4 * b], &scale, 4);
      }
      continue;
    }
    for (std::size_t k = 0; k < n; ++k) {  // as the device's store(): through fp32
      const float f = static_cast<float>(harness::draw_value(d, stream, k, r));
      if (t.dtype == KFLEET_FP32) {
        std::memcpy(&raw[i][4 * k], &f, 4);
      } else {
        const std::uint16_t h = t.dtype == KFLEET_BF16 ? harness::bf16_encode(f) : harness::fp16_encode(f);
        std::memcpy(&raw[i][2 * k], &h, 2);
      }
    }
  }
  return raw;
}

// The CPU side (make_case, from the parsed definition) draws the bytes the harness draws (from
// the spec it reads): CI's emulations and CPU references see a kernel's very inputs. Every
// small case and every required case of every generic problem, at two seeds.
TEST(ProblemSpec, TheCpuSideDrawsWhatTheHarnessDraws) {
  int slots = 0;
  for (const auto& def : library().problems) {
    if (def.abi != "generic") continue;
    const ProblemSpec s = read_back(def);
    for (const auto& c : def.cases) {
      if (!c.required && (*def.flops->eval(c.dims) > 20'000'000 || *def.bytes->eval(c.dims) > 1'000'000)) continue;
      for (std::uint64_t seed : {0u, 5u}) {
        auto data = make_case(def, c, seed);
        ASSERT_TRUE(data.ok()) << data.error().message;
        const auto raw = harness_draw(s, *s.find_case(c.name), seed);
        for (std::size_t i = 0; i < s.tensors.size(); ++i) {
          if (s.tensors[i].role == KFLEET_TENSOR_OUTPUT) continue;
          EXPECT_TRUE(raw[i] == data->inputs.at(s.tensors[i].name).bytes)
              << def.name << "/" << c.name << " seed " << seed << ": " << s.tensors[i].name;
          ++slots;
        }
      }
    }
  }
  EXPECT_GE(slots, 50);
}

// The measuring process's reference check on the host: the case rebuilt from the bytes the GPU
// drew is the CPU side's; a GPU reference that agrees passes, one off by more than the
// output's own check fails, naming the output.
TEST(ProblemSpec, TheReferenceCheckComparesWithTheCpuReferenceByEachOutputsCheck) {
  int checked = 0;
  for (const auto& def : library().problems) {
    if (def.abi != "generic") continue;
    const ProblemSpec s = read_back(def);
    const harness::SpecCase& c = harness::smallest_case(s);
    auto data = make_case(def, *def.find_case(c.name), 0);
    ASSERT_TRUE(data.ok());
    std::vector<std::vector<std::uint8_t>> raw;
    for (const auto& t : s.tensors)
      raw.push_back(t.role == KFLEET_TENSOR_OUTPUT ? std::vector<std::uint8_t>{} : data->inputs.at(t.name).bytes);
    std::vector<double> scalars;
    for (const auto& sc : def.scalars) scalars.push_back(data->scalars.at(sc.name));
    const CaseData from_gpu = harness::spec_case_data(s, c, raw, scalars);
    for (const auto& [name, t] : data->inputs) EXPECT_EQ(from_gpu.inputs.at(name).real, t.real) << def.name << "/" << name;
    const Tensors ref = find_reference(def.name)(*data);
    std::vector<std::vector<double>> gpu;
    for (const auto& o : s.outputs) {
      std::vector<double> v(ref.at(o.name).real.size());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(ref.at(o.name).real[i]);  // an fp32 reference
      gpu.push_back(v);
    }
    const auto agree = harness::check_gpu_reference(s, c, from_gpu, gpu);
    EXPECT_TRUE(agree.pass) << def.name << ": " << agree.reason;
    EXPECT_EQ(agree.outputs.size(), s.outputs.size());
    // Off: the first output's first element moved far (an index past the row for indices).
    gpu[0][0] = s.tensors[static_cast<std::size_t>(s.outputs[0].slot)].dtype == KFLEET_INT32 ? -5 : gpu[0][0] + 1e3;
    const auto off = harness::check_gpu_reference(s, c, from_gpu, gpu);
    EXPECT_FALSE(off.pass) << def.name;
    EXPECT_EQ(off.reason.rfind("output " + s.outputs[0].name + " (", 0), 0u) << off.reason;
    // A GPU reference that returned no outputs fails on the first, saying which side lacks it.
    const auto none = harness::check_gpu_reference(s, c, from_gpu, {});
    EXPECT_FALSE(none.pass) << def.name;
    EXPECT_EQ(none.reason, "output " + s.outputs[0].name + ": the GPU reference has no value of it");
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

// The case the reference check rebuilds from the GPU's bytes, for what no problem of the library
// has yet: an int64 input, two scalars, fp8 inputs scaled by a tensor in slot 0 and by scalar 0,
// an fp8 output, a buffer shorter than its shape and an input the GPU returned no bytes for. The
// last two read as zeros, so that the check against them fails loudly rather than read past the
// buffer.
TEST(ProblemSpec, SpecCaseDataDecodesEachDtypeAndEveryScalar) {
  ProblemSpec s;
  s.problem = "hand";
  s.dims = {"M", "N"};
  s.scalars = {{"alpha", "fp32"}, {"beta", "fp32"}};
  auto tensor = [](const char* name, kfleet_dtype dt, int role) {
    harness::SpecTensor t;
    t.name = name;
    t.dtype = dt;
    t.role = role;
    return t;
  };
  const int in = KFLEET_TENSOR_INPUT, out = KFLEET_TENSOR_OUTPUT;
  s.tensors = {tensor("s", KFLEET_FP32, in),       tensor("idx", KFLEET_INT64, in), tensor("x", KFLEET_FP32, in),
               tensor("q", KFLEET_FP8_E4M3, in),   tensor("p", KFLEET_FP8_E4M3, in), tensor("h", KFLEET_FP16, in),
               tensor("w", KFLEET_BF16, in),       tensor("y", KFLEET_FP32, out),   tensor("z", KFLEET_FP8_E4M3, out)};
  s.tensors[3].init.scale_tensor = 0;  // q: blocks of 2 elements, each scaled by one of s
  s.tensors[3].init.block = {2};
  s.tensors[4].init.scale_scalar = 0;  // p: scaled by alpha
  harness::SpecOutput y, z;
  y.name = "y";
  y.slot = 7;
  z.name = "z";
  z.slot = 8;
  s.outputs = {y, z};
  harness::SpecCase c;
  c.name = "one";
  c.dims = {3, 2};
  c.shapes = {{2}, {3}, {2}, {4}, {2}, {2}, {2}, {2}, {2}};
  auto bytes_of = [](const auto& values) {
    std::vector<std::uint8_t> b(sizeof(values[0]) * values.size());
    std::memcpy(b.data(), values.data(), b.size());
    return b;
  };
  const std::vector<std::int64_t> idx = {5, -7, std::int64_t{1} << 40};
  // fp8 e4m3 codes 0x38 and 0x40 are 1.0 and 2.0; fp16 0x3c00 is 1.0. h is a byte short.
  const std::vector<std::vector<std::uint8_t>> raw = {bytes_of(std::vector<float>{2.0f, 4.0f}), bytes_of(idx),
                                                      bytes_of(std::vector<float>{1.5f, -2.0f}),
                                                      {0x38, 0x40, 0x38, 0x40}, {0x38, 0x40}, {0x00, 0x3c, 0x00}};
  const CaseData d = harness::spec_case_data(s, c, raw, {0.5, 0.25});
  EXPECT_EQ(d.dims, (std::map<std::string, std::int64_t>{{"M", 3}, {"N", 2}}));
  EXPECT_EQ(d.scalars, (std::map<std::string, double>{{"alpha", 0.5}, {"beta", 0.25}}));
  EXPECT_EQ(d.inputs.at("idx").real, (std::vector<double>{5, -7, 1099511627776.0}));
  EXPECT_EQ(d.inputs.at("idx").dtype, "int64");
  EXPECT_EQ(d.inputs.at("x").real, (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(d.inputs.at("q").real, (std::vector<double>{2, 4, 4, 8})) << "codes 1, 2, 1, 2 times s[k / 2]";
  EXPECT_EQ(d.inputs.at("p").real, (std::vector<double>{0.5, 1.0})) << "codes 1, 2 times alpha";
  EXPECT_EQ(d.inputs.at("h").real, (std::vector<double>{0, 0})) << "3 bytes of a 4-byte fp16 tensor";
  EXPECT_EQ(d.inputs.at("w").real, (std::vector<double>{0, 0})) << "no bytes returned";
  EXPECT_TRUE(d.inputs.at("w").bytes.empty());
  EXPECT_EQ(d.inputs.size(), 7u) << "outputs are not inputs, fp8 or not";
  EXPECT_EQ(d.outputs.at("y").real, (std::vector<double>{0, 0}));
  EXPECT_EQ(d.outputs.at("y").bytes.size(), 8u);
  EXPECT_EQ(d.outputs.at("z").bytes.size(), 2u);
  EXPECT_EQ(d.outputs.at("z").dtype, "fp8_e4m3");
}

// The reference check's case is the smallest by bytes, then by flops; of equals, the first.
TEST(ProblemSpec, SmallestCaseIsFewestBytesThenFewestFlopsThenFirst) {
  ProblemSpec s;
  auto add = [&s](const char* name, double bytes, double flops) {
    harness::SpecCase c;
    c.name = name;
    c.bytes = bytes;
    c.flops = flops;
    s.cases.push_back(c);
  };
  add("big", 10, 5);
  add("small_slow", 4, 9);
  add("small_fast", 4, 3);
  add("small_fast_too", 4, 3);
  add("bigger", 12, 1);
  EXPECT_EQ(harness::smallest_case(s).name, "small_fast");
}

// The harness builds the struct from the spec; the library's args_spec from the parsed
// definition: the same bytes, or a recording made by one would be refused by the other.
TEST(ProblemSpec, ArgsFromTheSpecAreTheLibrarysBytes) {
  for (const auto& def : library().problems) {
    if (def.abi != "generic") continue;
    const ProblemSpec s = read_back(def);
    const ProblemCase& c = def.cases.front();
    auto data = make_case(def, c, 3);
    ASSERT_TRUE(data.ok()) << def.name;
    std::vector<std::uint64_t> addr;
    for (std::size_t i = 0; i < s.tensors.size(); ++i) addr.push_back(0x600000000000ull + (i << 21));
    auto lib_spec = args_spec(*data, addr, 0x600000100000ull, 1 << 20);
    ASSERT_TRUE(lib_spec.ok());
    std::vector<double> scalars;
    for (const auto& sc : def.scalars) scalars.push_back(data->scalars.at(sc.name));
    const auto ours = harness::spec_args(s, *s.find_case(c.name), addr, scalars, 0x600000100000ull, 1 << 20);
    kfleet_problem_args a{}, b{};
    ASSERT_EQ(build_problem_args(*lib_spec, &a), "");
    ASSERT_EQ(build_problem_args(ours, &b), "");
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << def.name;
  }
}

// A Triton or torch job of any problem of the library (PYTHON.md): the Python recorder's plan
// gets every case's args as named fields, each tensor with its dtype, shape and role, every dim
// and scalar, none refused for its dtype or a name two fields share.
TEST(ProblemSpec, EveryCaseOfEveryGenericProblemHasItsPythonFields) {
  int checked = 0;
  for (const auto& def : library().problems) {
    if (def.abi != "generic") continue;
    const ProblemSpec s = read_back(def);
    for (const auto& c : def.cases) {
      const harness::SpecCase* sc = s.find_case(c.name);
      ASSERT_NE(sc, nullptr) << def.name << " " << c.name;
      std::vector<std::uint64_t> addr;
      for (std::size_t i = 0; i < s.tensors.size(); ++i) addr.push_back(0x600000000000ull + (i << 30));
      kfleet_problem_args a{};
      ASSERT_EQ(build_problem_args(harness::spec_args(s, *sc, addr, sc->scalars, 0x7f0000000000ull, 1 << 20), &a), "")
          << def.name << " " << c.name;
      std::vector<std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(&a),
                                      reinterpret_cast<const std::uint8_t*>(&a) + sizeof a);
      std::string err;
      const std::string j = harness::problem_fields_json(s, *sc, bytes, &err);
      ASSERT_EQ(err, "") << def.name << " " << c.name;
      for (std::size_t i = 0; i < s.tensors.size(); ++i) {
        const std::string role = s.tensors[i].role == KFLEET_TENSOR_OUTPUT  ? "output"
                                 : s.tensors[i].role == KFLEET_TENSOR_INOUT ? "inout" : "input";
        std::string shape;
        for (const auto d : sc->shapes[i]) shape += (shape.empty() ? "" : ",") + std::to_string(d);
        EXPECT_NE(j.find("{\"name\":\"" + s.tensors[i].name + "\",\"va\":" + std::to_string(addr[i])),
                  std::string::npos) << def.name << " " << c.name << ": " << j;
        EXPECT_NE(j.find("\"shape\":[" + shape + "],\"role\":\"" + role + "\"}"), std::string::npos)
            << def.name << " " << c.name << " " << s.tensors[i].name << ": " << j;
      }
      for (const auto& d : s.dims) EXPECT_NE(j.find("\"" + d + "\":"), std::string::npos) << def.name << " " << d;
      for (const auto& x : s.scalars) EXPECT_NE(j.find("\"" + x.name + "\":"), std::string::npos) << def.name << " " << x.name;
      EXPECT_NE(j.find("\"problem\":\"" + def.name + "\""), std::string::npos) << j;
      ++checked;
    }
  }
  EXPECT_GE(checked, 6 * 3);  // six generic problems, three or more cases each
}

const std::string kGood =
    "kfleet-problem-spec 2\n"
    "problem demo 2\n"
    "dims T H\n"
    "scalar eps fp32\n"
    "tensor x input bf16\n"
    "tensor y output bf16\n"
    "init x normal mean=0 std=2\n"
    "output y y\n"
    "check y tolerance atol=0.01 rtol=0.01\n"
    "lazy y zeros\n"
    "lazy y copy x\n"
    "case small\n"
    "case_dims small 4 256\n"
    "case_scalars small 1e-06\n"
    "case_shape small x 4 256\n"
    "case_shape small y 4 256\n"
    "case_cost small 4096 4096 0\n"
    "end\n";

std::string refusal(std::string text) {
  ProblemSpec s;
  return harness::parse_problem_spec(text, &s);
}

std::string replaced(const std::string& from, const std::string& to) {
  std::string t = kGood;
  const auto at = t.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return t.replace(at, from.size(), to);
}

TEST(ProblemSpecReader, TheGoodSpecReads) {
  ProblemSpec s;
  ASSERT_EQ(harness::parse_problem_spec(kGood, &s), "");
  EXPECT_EQ(s.problem, "demo");
  EXPECT_EQ(s.version, 2u);
  ASSERT_EQ(s.cases.size(), 1u);
  EXPECT_EQ(s.cases[0].elements(0), 1024u);
  EXPECT_EQ(s.outputs[0].check.atol, 0.01);
  ASSERT_EQ(s.outputs[0].lazy.size(), 2u);
  EXPECT_EQ(s.outputs[0].lazy[1].input, 0);
}

TEST(ProblemSpecReader, MalformedLinesAreRefusedByLine) {
  struct Bad {
    std::string text, want;
  };
  const std::vector<Bad> bad = {
      {replaced("kfleet-problem-spec 2", "kfleet-problem-spec 1"), "problem spec line 1: the first line must be"},
      {replaced("problem demo 2", "problem demo two"), "line 2: expected 'problem NAME VERSION'"},
      {replaced("tensor x input bf16", "tensor x input bf17"), "line 5: unknown dtype 'bf17'"},
      {replaced("tensor y output", "tensor y sideways"), "line 6: unknown role 'sideways'"},
      {replaced("std=2", "std=2 skew=1"), "line 7: unknown field 'skew'"},
      {replaced("std=2", "std=nan"), "line 7: std=nan is not a finite number"},
      {replaced("init x normal", "init z normal"), "line 7: no tensor 'z'"},
      {replaced("output y y", "output y x"), "line 8: output 'y' in input slot 'x'"},
      {replaced("check y tolerance atol=0.01 rtol=0.01", "check y fuzzy"), "line 9: unknown check 'fuzzy'"},
      {replaced("lazy y zeros", "lazy y nothing"), "line 10: unknown lazy output 'nothing'"},
      {replaced("case_dims small 4 256", "case_dims small 4"), "line 13: 1 dims for 2"},
      {replaced("case_dims small 4 256", "case_dims small 4 0"), "line 13: dim H = '0' is not a positive integer"},
      {replaced("case_shape small x 4 256", "case_shape big x 4 256"), "line 15: no case 'big'"},
      {replaced("case_cost small 4096 4096 0", "case_cost small 4096"), "line 17: expected 'case_cost"},
      {replaced("end\n", ""), "line 0: no 'end' line"},
      {kGood + "extra\n", "line 19: text after 'end'"},
      {replaced("case_shape small y 4 256\n", ""), "case 'small' has no shape for 'y'"},
      {replaced("lazy y zeros\nlazy y copy x\n", ""), "output 'y' has no lazy output"},
      {replaced("init x normal mean=0 std=2\n", ""), "input 'x' has no init"},
      {replaced("problem demo 2", "problem demo 2\r"), "line 2: a tab or carriage return"},
      {"", "line 0: empty text"},
  };
  for (const auto& b : bad) {
    const std::string why = refusal(b.text);
    EXPECT_NE(why.find(b.want), std::string::npos) << "want '" << b.want << "', got '" << why << "'";
  }
}

// The buffers a problem's kernel may touch, as the harness maps them in replay mode (slot order
// then the workspace, at fixed addresses), on a recorded launch: a kernel given the struct by
// value passes the recorder's address scan, and one that also holds an address outside the
// problem's buffers, or writes past an output, is refused, as for the families.
TEST(ProblemSpecBuffers, RecordedLaunchOfAProblemIsCheckedAgainstItsBuffers) {
  const ProblemDef* def = library().find("topk");
  ASSERT_NE(def, nullptr);
  const ProblemSpec s = read_back(*def);
  const harness::SpecCase& c = *s.find_case("small");
  const auto bufs = harness::spec_buffers(s, c, 1 << 20);
  ASSERT_EQ(bufs.size(), 4u);
  EXPECT_EQ(bufs[0].name, "input x");
  EXPECT_TRUE(bufs[0].read_only);
  EXPECT_EQ(bufs[1].name, "output values");
  EXPECT_EQ(bufs[2].name, "output indices");
  EXPECT_EQ(bufs[2].bytes, 4u * 4 * 8);
  EXPECT_EQ(bufs[3].name, "workspace");
  constexpr std::uint64_t lo = 0x600000000000ull, hi = lo + (1ull << 40);
  harness::LaunchList l;
  l.what = "correctness seed 0";
  std::vector<std::uint64_t> addr;
  std::uint64_t next = lo;
  for (const auto& b : bufs) {
    l.buffers.push_back({b.name, next, b.bytes});
    addr.push_back(next);
    next += (b.bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  }
  const auto spec = harness::spec_args(s, c, addr, {}, addr[3], bufs[3].bytes);
  kfleet_problem_args args{};
  ASSERT_EQ(build_problem_args(spec, &args), "");
  const auto* p = reinterpret_cast<const std::uint8_t*>(&args);
  l.args.assign(p, p + sizeof args);
  harness::LaunchNode k;
  k.kind = harness::LaunchNode::Kind::kernel;
  k.kernel.function = "_ZN12_GLOBAL__N_19topk_rowsE18kfleet_problem_args";
  k.kernel.slots = {{0, static_cast<std::uint32_t>(sizeof args)}};
  k.kernel.params = l.args;
  l.nodes = {k};
  EXPECT_EQ(harness::check_addresses(l, lo, hi, nullptr), "");
  // Through the text form and back, unchanged.
  std::vector<harness::LaunchList> back;
  ASSERT_EQ(harness::parse_launch_lists(harness::serialize({l}), &back), "");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].args, l.args);
  EXPECT_EQ(harness::launch_list_difference(back[0], l), "");
  // The values slot pointed past every buffer (an address the kernel made up).
  kfleet_problem_args wrong = args;
  wrong.tensors[1].data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(next + (4u << 20)));
  harness::LaunchList bad = l;
  const auto* wp = reinterpret_cast<const std::uint8_t*>(&wrong);
  bad.nodes[0].kernel.params.assign(wp, wp + sizeof wrong);
  EXPECT_NE(harness::check_addresses(bad, lo, hi, nullptr).find("reserved range but outside its buffers"),
            std::string::npos);
  // Device memory of its own (the reference, a cache) in the struct's reserved words.
  wrong = args;
  wrong.reserved[0] = 0x7f1234000000ull;
  bad.nodes[0].kernel.params.assign(wp, wp + sizeof wrong);
  EXPECT_NE(harness::check_addresses(bad, lo, hi, [](std::uint64_t v) { return v == 0x7f1234000000ull; })
                .find("device memory the harness did not give the launch"),
            std::string::npos);
  // A memset of the indices output that runs past its end.
  harness::LaunchNode m;
  m.kind = harness::LaunchNode::Kind::memset;
  m.memset = {addr[2], 0, bufs[2].bytes / 4 + 1024 * 1024, 1, 0, 4};
  bad = l;
  bad.nodes = {m};
  EXPECT_NE(harness::check_addresses(bad, lo, hi, nullptr).find("memset (operation 0)"), std::string::npos);
  // Within the output: fine.
  bad.nodes[0].memset.width = bufs[2].bytes / 4;
  EXPECT_EQ(harness::check_addresses(bad, lo, hi, nullptr), "");
}

}  // namespace
}  // namespace kfleet::problems


namespace kfleet::problems {
namespace {

// Every generic problem has a GPU reference the harness compiles in (kfleet-measure refuses a
// problem without one): named in problem.yaml for both languages, and included by its
// kernels/harness/src/problem_ref_<name>.cu.
TEST(ProblemSpec, EveryGenericProblemHasAGpuReferenceInTheHarness) {
  for (const auto& def : library().problems) {
    if (def.abi != "generic") continue;
    ASSERT_TRUE(def.reference.count("cuda")) << def.name;
    ASSERT_TRUE(def.reference.count("hip")) << def.name;
    EXPECT_EQ(def.reference.at("cuda").path, "reference.cu") << def.name;
    const auto stub = testing::source_dir() / "kernels/harness/src" / ("problem_ref_" + def.name + ".cu");
    std::ifstream in(stub);
    ASSERT_TRUE(in.good()) << stub;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("#include \"../../problems/" + def.name + "/reference.cu\""), std::string::npos) << stub;
  }
}

}  // namespace
}  // namespace kfleet::problems
