#pragma once
// The resolved text form of a problem of the library (PROBLEM-ABI.md, "The problem spec"), as
// the harness reads it: `--problem-spec FILE`. kfleet's own processes write it from the
// library (kernels/problems/cpu/case_spec.hpp, problem_spec_text); the harness cannot link the
// YAML parser (kfleet::common), so everything it needs is resolved there (every case's dims,
// scalars, shapes, group totals, flops, bytes, workspace) and this reader only splits lines.
// Plain C++17, no dependency beyond the ABI headers, so CI tests it without a GPU.
#include <cstdint>
#include <string>
#include <vector>

#include "kfleet_harness/problem_abi.h"
#include "problem_args.hpp"
#include "problem_inputs.hpp"

namespace kfleet::harness {

struct SpecInit {
  std::string dist;                   // normal | uniform | int | group_ends | scale
  double mean = 0, std = 1;           // normal
  double min = -1, max = 1;           // uniform; int (inclusive)
  bool sorted = false, unique = false;  // int, per row (last dimension)
  // fp8 only: a scale tensor (slot index) with blocks of `block` elements per dimension, or a
  // per-tensor scale scalar (scalar index); -1 when absent.
  int scale_tensor = -1, scale_scalar = -1;
  std::vector<std::int64_t> block;
  double amp_lo = 0, amp_hi = 0;      // block_amplitude; 0 0 when absent
  // normal and uniform: the shapes of real data at its edge (problem_inputs.hpp, RealDraw)
  double row_scale_lo = 0, row_scale_hi = 0;    // 0 0 when absent
  double row_offset_lo = 0, row_offset_hi = 0;
  double neg_inf_lo = 0, neg_inf_hi = 0;
  int outliers = 0;
  std::vector<std::int64_t> outlier_at;  // the outlier columns when given (at=); else drawn
  double outlier_lo = 0, outlier_hi = 0;
  double step = 0;
};

struct SpecTensor {  // one slot of kfleet_problem_args.tensors, in slot order
  std::string name;
  int role = KFLEET_TENSOR_INPUT;  // KFLEET_TENSOR_INPUT / _OUTPUT / _INOUT
  kfleet_dtype dtype = KFLEET_FP32;
  SpecInit init;                   // inputs and inouts
};

struct SpecCheck {
  std::string kind;  // tolerance | exact | topk
  double atol = -1, rtol = -1, max_abs = -1, rel_l2 = -1;  // negative: not checked
  int of = -1;       // topk: the slot searched
  bool largest = true;
};

struct SpecLazy {
  std::string kind;  // zeros | mean | copy | iota
  int input = -1;    // copy: the slot copied
};

struct SpecOutput {
  std::string name;
  int slot = -1;     // its own slot (role output) or the input's (role inout)
  SpecCheck check;
  std::vector<SpecLazy> lazy;
};

struct SpecCase {
  std::string name;
  std::vector<std::int64_t> dims;                  // in the spec's dims order
  std::vector<double> scalars;                     // NaN: the quantiser's (a per-tensor fp8 scale)
  std::vector<std::vector<std::int64_t>> shapes;   // per slot
  std::vector<std::int64_t> totals;                // per slot: group_ends total, else -1
  double flops = 0, bytes = 0;
  std::uint64_t workspace = 0;
  // Per slot, how the case draws it: the tensor's init, or the case's own (case_init).
  std::vector<SpecInit> inits;
  std::size_t elements(std::size_t slot) const;
};

struct ProblemSpec {
  std::string problem;
  std::uint32_t version = 0;
  std::vector<std::string> dims;
  struct Scalar {
    std::string name, dtype;
  };
  std::vector<Scalar> scalars;
  std::vector<SpecTensor> tensors;
  std::vector<SpecOutput> outputs;
  std::vector<SpecCase> cases;
  const SpecCase* find_case(const std::string& name) const;
  int slot(const std::string& name) const;  // -1 when absent
  std::string case_names() const;           // "small, ragged, ..."
};

// The draw of a normal or uniform init (problem_inputs.hpp) for a tensor whose rows (its last
// dimension) are `cols` long; the outlier columns are chosen for `stream` (the tensor's).
RealDraw spec_real_draw(const SpecInit& i, long long cols, std::uint64_t stream);

constexpr const char* kProblemSpecMagic = "kfleet-problem-spec 2";

// "" on success, else "problem spec line N: <what is wrong>" (line 0: the text as a whole).
std::string parse_problem_spec(const std::string& text, ProblemSpec* out);

// The buffers a kernel of the problem may touch, in the order the harness maps them (slot
// order, then the workspace when it has bytes): the recorder and the measuring process map
// them at the same fixed addresses in this order. Names as the launch list records them.
struct SpecBuffer {
  std::string name;       // "input x", "inout q", "output y", "workspace"
  std::uint64_t bytes = 0;
  bool read_only = false; // an input: mapped read-only around each launch where possible
};
std::vector<SpecBuffer> spec_buffers(const ProblemSpec& spec, const SpecCase& c,
                                     std::uint64_t workspace_bytes);

// The args description of a case (build_problem_args fills the struct from it): slot i at
// addresses[i], `scalars` the case's values with the quantiser's filled in.
problems::ArgsSpec spec_args(const ProblemSpec& spec, const SpecCase& c,
                             const std::vector<std::uint64_t>& addresses,
                             const std::vector<double>& scalars, std::uint64_t workspace,
                             std::uint64_t workspace_bytes);

}  // namespace kfleet::harness
