#pragma once
// The harness child's command line and its JSON-lines output (kernels/harness/PROTOCOL.md),
// as pure functions so that the mapping from a job spec is tested without a GPU.
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/jobspec.hpp"

namespace kfleet::backends {

// "--shape B=2,H=8,S=512,D=64 --dtype q=fp16,kv=fp8_e4m3,out=fp16 [--causal] ..." for one case,
// with the family's params (b_layout, bias, softmax_scale) and the job's tolerance.
// A job on a generic problem of the library (is_generic_problem): "--case NAME --problem-spec
// FILE" instead, FILE being the resolved problem (problem_spec_file): the problem gives the
// case's shape, dtypes and checks, so no family flag is passed.
// A job naming a family's problem (attention@2, scaled_mm@4): a case without a shape is the
// problem's, and `problem_cases` holds its flags by name (family_problem_case_args: its shape,
// scalars, check and --init draws), which replace the job's dtype, tolerance and family params.
using ProblemCaseArgs = std::map<std::string, std::vector<std::string>>;
std::vector<std::string> harness_case_args(const JobSpec& spec, const CorrectnessCase& c,
                                           const std::string& problem_spec = "",
                                           const ProblemCaseArgs& problem_cases = {});

// `correctness --case NAME ... --seeds 0,1,2`.
std::vector<std::string> harness_correctness_args(const JobSpec& spec, const CorrectnessCase& c,
                                                  const std::string& problem_spec = "",
                                                  const ProblemCaseArgs& problem_cases = {});

// `benchmark --case NAME ... --seed S` with the job's benchmark section.
std::vector<std::string> harness_benchmark_args(const JobSpec& spec, const CorrectnessCase& c,
                                                const std::string& problem_spec = "",
                                                const ProblemCaseArgs& problem_cases = {});

// The case the performance gate names, else the last correctness case (the mission shape);
// nullopt when the job has no cases.
std::optional<CorrectnessCase> benchmark_case(const JobSpec& spec);

// One stdout line as a harness message; nullopt for lines that are not JSON objects with a type.
std::optional<nlohmann::json> parse_harness_line(const std::string& line);

// A job's process prints the harness's lines (its kernel runs there), so any member can have any
// type: nlohmann's value() would throw on a mismatch and take the agent down. These read a
// member of the expected type, else the fallback (an empty array for array_at).
std::string string_at(const nlohmann::json& j, const char* key, const std::string& fallback);
bool bool_at(const nlohmann::json& j, const char* key, bool fallback);
long long int_at(const nlohmann::json& j, const char* key, long long fallback);
nlohmann::json array_at(const nlohmann::json& j, const char* key);

// What the harness said over one run, gathered from its lines.
struct HarnessReport {
  // reference_check: the measuring process's GPU reference against the fp64 CPU reference
  // (a problem of the library; PROBLEM-ABI.md, "The GPU reference, checked").
  std::optional<nlohmann::json> device, warmup, bench, error, reference_check;
  std::vector<nlohmann::json> correctness;
  void add(const nlohmann::json& msg);
};

// The kernels a Python recorder's "recorded" line names, each with its origin (the job's code, or
// a library with its file and package), as a {"type":"kernels","reported_by":"recorder",
// "kernels":[...]} line; null when it named none. The recorder is the job's process, so this is
// its report, shown as such and never judged on: only the fields the recorder defines are kept,
// as strings of at most 256 bytes, "origin" is "job" or "library", and at most 256 kernels
// ("more": how many were left out). The agent keeps it apart from the harness's lines, which
// a job's process may write (in-process timing): no harness line can add to it.
nlohmann::json recorded_kernels(const std::vector<nlohmann::json>& said);

// Why a benchmark ended without a result when the cause is named (`"no_result"` on an
// unsupported bench line): kGpuThrottled when every sample was discarded by the throttle filter
// (the fleet's cause: the process is timed again), "recheck_failed" or "declined" (the
// kernel's); "" when the line has no result-less cause.
inline constexpr const char* kGpuThrottled = "gpu_throttled";
std::string bench_no_result_cause(const HarnessReport& rep);

// One line about how a harness run ended, per the protocol's exit statuses; "" when it passed.
// `infra` is set when the failure is the host's (setup error, usage), not the kernel's.
std::string harness_failure(int exit_code, int signal, bool timed_out, double timeout_s,
                            const HarnessReport& rep, const std::string& stderr_tail,
                            bool& infra);

}  // namespace kfleet::backends
