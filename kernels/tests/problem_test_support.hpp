// What the problem-library tests share: the library as it stands in the source tree, a
// problem's spec read back as the harness reads it, and an input element as the device reads it
// (decoded from the bytes the harness uploads).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "../../common/tests/test_paths.hpp"
#include "case_spec.hpp"
#include "numeric.hpp"
#include "problem_cpu.hpp"
#include "problem_spec.hpp"

namespace kfleet::problems::test_support {

inline const ProblemLibrary& library() {
  static const ProblemLibrary lib =
      load_problem_library((testing::source_dir() / "kernels/problems").string());
  return lib;
}

// Cases small enough for an fp64 reference in a unit test (and for CI: docs/problems.md).
inline bool small(const ProblemDef& def, const ProblemCase& c) {
  auto f = def.flops->eval(c.dims);
  auto b = def.bytes->eval(c.dims);
  return f && b && *f <= 20'000'000 && *b <= 1'000'000;
}

// The spec kfleet writes for a problem (case_spec.hpp), as the harness reads it back.
inline harness::ProblemSpec read_back(const ProblemDef& def) {
  auto text = problem_spec_text(def);
  EXPECT_TRUE(text.ok()) << def.name;
  harness::ProblemSpec s;
  if (!text) return s;
  const std::string err = harness::parse_problem_spec(*text, &s);
  EXPECT_EQ(err, "") << def.name << "\n" << *text;
  return s;
}

// Element i of an input as the device reads it (from its bytes).
inline float dev(const Tensor& t, std::size_t i) {
  if (t.dtype == "bf16" || t.dtype == "fp16") {
    std::uint16_t h;
    std::memcpy(&h, &t.bytes[2 * i], 2);
    return t.dtype == "bf16" ? harness::bf16_decode(h) : harness::fp16_decode(h);
  }
  if (t.dtype == "fp8_e4m3") return static_cast<float>(harness::fp8_e4m3_decode(t.bytes[i]));
  if (t.dtype == "int32") {
    std::int32_t v;
    std::memcpy(&v, &t.bytes[4 * i], 4);
    return static_cast<float>(v);
  }
  float f;
  std::memcpy(&f, &t.bytes[4 * i], 4);
  return f;
}

}  // namespace kfleet::problems::test_support
