#pragma once
// kfleet's PyTorch references of a problem (eager, and torch.compile in mode
// max-autotune-no-cudagraphs), which a problem's kernel is compared with in its verdict
// (docs/measurement.md, "Against PyTorch"). The agent records each with the same recorder as a
// `language: torch` job and times it with the same measuring process, on the job's timed case
// with the job's bench options; harness_versus.cpp runs that. Here: the pure parts (which file,
// which entry, the cache key), the agent's cache of the timings, and the comparison itself.
// None of it touches a GPU: CI tests it as it is.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/model.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::backends {

// The problem a job's kernel is compared on: kernel.problem, else its family (attention,
// scaled_mm); "" for a job that is not a problem's kernel.
std::string reference_problem(const KernelSpec& k);

// kfleet's reference of that problem in the agent's library: <library>/<problem>/reference_torch.py,
// a regular file; not_found naming the file when the library has none.
Result<std::string> torch_reference_source(const std::string& library_dir, const KernelSpec& k);

// The launch function the reference defines: kfleet_problem_launch for a problem of the
// library, kfleet_attention_launch or kfleet_scaled_mm_launch for the families.
std::string torch_reference_entry(const KernelSpec& k);

// What a reference's timing depends on, and is cached by.
struct ReferenceKeyParts {
  std::string problem;          // reference_problem()
  int version = 0;              // kernel.problem_version (0 for a family named without one)
  std::string case_name;        // the job's timed case
  std::string gpu_class;
  std::string torch, triton;    // the agent's Python's versions
  std::string driver;           // the GPU driver's version
  std::string measurer;         // the measuring process's sha256 (the harness it was built from)
  std::string reference;        // the sha256 of reference_torch.py
  // The benchmark's command line (case flags, the job's bench options), with --problem-spec's
  // path reduced to its file name (which carries the resolved problem's hash): a family's shape
  // and dtypes, a job's sample count or L2 flush, all change the timing.
  std::vector<std::string> args;
};
nlohmann::json torch_reference_key(const ReferenceKeyParts& p);

// One reference's timing, as the cache holds it: the samples, or why there are none.
struct ReferenceTiming {
  std::string baseline;              // eager | compile
  nlohmann::json key;
  std::vector<double> samples_us;    // empty: not timed
  std::string note;                  // why not (or what to know)
};

// The agent's cache of reference timings: one file per (key, baseline) under `dir`, written by
// the agent alone. A file is believed only as the agent's own regular file, not writable by
// others, holding the very key asked for; anything else is a miss (and is replaced).
class ReferenceCache {
 public:
  explicit ReferenceCache(std::string dir) : dir_(std::move(dir)) {}
  std::optional<ReferenceTiming> get(const nlohmann::json& key, const std::string& baseline) const;
  Result<void> put(const ReferenceTiming& t) const;
  std::string path_for(const nlohmann::json& key, const std::string& baseline) const;

 private:
  std::string dir_;
};

// The kernel against one reference: speedup = median(reference) / median(kernel) with the
// bootstrap interval from both sample sets (kfleet::stats::speedup), or, without samples on
// either side, no speedup and the note.
BaselineComparison compare_with_reference(const std::vector<double>& kernel_us,
                                          const ReferenceTiming& ref, const std::string& case_name,
                                          bool cached);

}  // namespace kfleet::backends
