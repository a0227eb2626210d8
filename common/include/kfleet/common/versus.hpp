#pragma once
// A problem's kernel against kfleet's own PyTorch references of that problem (eager and
// torch.compile), timed on the same agent by the same replay (docs/measurement.md, "Against
// PyTorch"): which jobs get the comparison, how it reads wherever it is shown (the verdict's
// reason, the CLI, MCP), and fast_p over a set of kernels (a regression run, a campaign).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/model.hpp"

namespace kfleet {

// BaselineComparison::baseline
inline constexpr const char* kBaselineEager = "eager";
inline constexpr const char* kBaselineCompile = "compile";
// The torch.compile mode of the compile reference.
inline constexpr const char* kTorchCompileMode = "max-autotune-no-cudagraphs";
// The p of fast_p that regression runs and campaigns report.
inline constexpr double kFastPs[] = {1.0, 1.5};

// A job whose kernel is a problem's (a problem of the library, or the attention or scaled_mm
// family): its verdicts compare it with the problem's PyTorch references. The JSON form reads
// a stored spec (to_json(JobSpec)).
bool is_problem_kernel(const KernelSpec& k);
bool is_problem_kernel(const nlohmann::json& spec);

// "eager", "torch.compile"; any other name as it is.
std::string baseline_label(const std::string& baseline);

// "0.93x eager [0.92, 0.94]", "1.41x torch.compile" (no interval), or
// "torch.compile not timed (<note>)".
std::string format_comparison(const BaselineComparison& c);

// The line a verdict's reason ends with: "0.93x eager [0.92, 0.94], 1.41x torch.compile
// [1.39, 1.43] (llama3_8b)", with ", simulated" inside the parentheses when any comparison is;
// "" for none.
std::string versus_line(const std::vector<BaselineComparison>& versus);
std::string versus_line(const nlohmann::json& versus);  // a verdict's "versus" array

// What a reference's timing is keyed by, as one line: "rmsnorm@1 case llama3_8b on H200,
// torch 2.11.0+cu130, driver 580.95.05, measurer 1a2b3c4d5e6f7a8b"; what is absent is left out.
std::string versus_key_text(const nlohmann::json& key);

// A kernel's verdict passed correctness: it passed, or was rejected at the performance gate.
bool verdict_correct(const Verdict& v);

// One kernel of a set for fast_p.
struct VersusKernel {
  bool correct = false;
  std::vector<BaselineComparison> versus;
  bool simulated = false;
};

// fast_p at kFastPs against each baseline, over `kernels` (the denominator, whatever became of
// them; `of` says what they are):
//   {"kernels": N, "of": "...", "simulated": bool,
//    "baselines": [{"baseline": "eager", "label": "eager", "timed": T,
//                   "p": [{"p": 1, "fast": F, "share": F/N}, {"p": 1.5, ...}]}, {... compile}]}
nlohmann::json fast_p_json(const std::vector<VersusKernel>& kernels, const std::string& of);

// The same as lines of text: "fast_1   eager 3/5 (60%)  torch.compile 1/5 (20%)", ...,
// then what the denominator is. "" when there is no kernel.
std::string fast_p_text(const nlohmann::json& fast_p);

}  // namespace kfleet
