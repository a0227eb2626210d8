#pragma once
// The job spec: a job YAML parsed into typed structs (schema: docs/job-schema.json, draft:
// jobs/*.yaml). Parsing is strict: unknown keys, wrong types and out-of-range values are
// errors that name the file, line, column and the field's path.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/result.hpp"

namespace kfleet {

struct SpecIssue {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown (e.g. the error is about the whole document)
  int column = 0;  // 1-based
  std::string field;  // dotted path: "gates.correctness.cases[1].seeds"
  std::string message;
  std::string to_string() const;  // "job.yaml:12:5: gates.resources.max_registers: must be ..."
};

struct TargetSpec {
  std::string gpu;                   // a GPU class ("L4", "H100") or arch ("sm_89", "gfx1151")
  std::vector<std::string> regions;  // in order of preference; empty = any region
};

struct CustomSteps {  // family: custom
  std::string build, test, bench, profile;
};

struct KernelSpec {
  // A problem of the library (kernels/problems, docs/problems.md): `problem: rmsnorm@2`. The
  // library's attention and scaled_mm problems are the families of the same name (family is set
  // from them); any other problem is a generic one: family stays "" and the kernel implements
  // kfleet_problem_launch (kernels/harness/PROBLEM-ABI.md).
  std::string problem;      // "" when the job names a family only
  int problem_version = 0;  // the @VERSION of `problem`
  std::string family;    // attention | scaled_mm | custom; "" for a generic problem
  std::string language;  // cuda | hip | triton | torch (Python: PYTHON.md)
  std::vector<std::string> sources;  // relative to the YAML's folder
  std::string entry;
  std::vector<std::pair<std::string, std::string>> defines;  // in file order
  std::vector<std::string> flags;
  nlohmann::json params = nlohmann::json::object();
  std::optional<CustomSteps> steps;
};

struct ResourceBudget {  // absent = unchecked
  std::optional<std::int64_t> max_registers, max_shared_bytes, max_spill_bytes, max_stack_bytes;
  std::optional<std::int64_t> max_vgprs, max_sgprs, max_lds_bytes, max_scratch_bytes;
  bool empty() const;
};

struct Shape {
  std::vector<std::pair<std::string, std::int64_t>> dims;  // in file order: B, H, S, D
  std::optional<std::int64_t> get(const std::string& k) const;
};

struct CorrectnessCase {
  std::string name;  // for a generic problem: one of the problem's cases, which gives its shape
  Shape shape;       // empty for a generic problem
  std::vector<std::uint64_t> seeds;
  bool causal = false;
};

struct Tolerance {
  std::optional<double> atol, rtol, max_abs, rel_l2;
  bool empty() const { return !atol && !rtol && !max_abs && !rel_l2; }
};

struct CorrectnessGate {
  nlohmann::json dtype;  // "fp16" or {q: fp16, kv: fp8_e4m3, out: fp16}
  std::vector<CorrectnessCase> cases;
  Tolerance tolerance;
};

struct CompareTo {
  enum class Kind { none, parent, baseline, job, value, reference };
  Kind kind = Kind::none;
  std::int64_t job_id = 0;          // kind == job
  double value_us = 0;              // kind == value (value_ms is converted)
  std::string label;                // kind == value / reference
};

struct PerformanceGate {
  std::string case_name;            // one of correctness.cases[].name
  std::string metric = "time";      // time | gflops | tflops | gbps
  CompareTo compare_to;
  double threshold_pct = 1.0;       // δ: improved / regressed / same
};

struct GatesSpec {
  std::optional<ResourceBudget> resources;
  std::optional<CorrectnessGate> correctness;
  std::optional<PerformanceGate> performance;
};

struct BenchmarkSpec {
  int min_samples = 10;
  double max_noise_pct = 0.5;
  double max_time_s = 15;
  bool l2_flush = true;
  double warmup_max_s = 2;
  int max_rounds = 30;              // interleaved A/B rounds cap for verdicts
  // Rounds before the first decision (0: the agent's 5, or max_rounds when fewer). The
  // bootstrap CI of the median of 3 to 5 round ratios is their range; by 6 or 7 one outlying
  // round no longer decides: a job may decide after 3 and go on to 7 only when 3 did not.
  int min_rounds = 0;
  bool interleave = false;          // verdicts from A/B rounds against the reference's own build
  int processes = 1;                // harness processes whose samples are pooled (per-process
                                    // offsets average out instead of deciding the median)
  // Every other GPU slot of the host stays idle while this job runs. Unset: the target's
  // default (true for APUs, whose GPU shares the host's memory and power).
  std::optional<bool> host_exclusive;
};

struct ProfileSpec {
  std::string tool;                 // ncu | rocprofv3
  std::vector<std::string> metrics;
  std::string when = "always";      // always | rejected | never
};

// Honoured only by the simulated GPU backend (tests and the no-GPU demo); results it makes are
// marked simulated everywhere.
struct SimulationSpec {
  double time_us = 100;             // median kernel time on the reference class
  double noise_pct = 0.2;
  std::map<std::string, double> slower_pct;  // per GPU class: "L4" -> 5.0
  // A problem's kernel: the median of kfleet's PyTorch references on the reference class
  // (eager, torch.compile), slowed like the kernel on other classes. Unset: 1.3 and 1.05 times
  // time_us.
  std::optional<double> eager_us, compile_us;
  std::string fail_stage;           // "" | build | resources | correctness | performance | crash | hang
  std::string fail_reason;
  int stage_ms = 20;                // simulated wall time of each stage
};

struct JobSpec {
  std::string name;
  std::string campaign;
  std::string parent;               // a job name in the same campaign
  int priority = 0;                 // higher runs first; ties are FIFO
  TargetSpec target;
  KernelSpec kernel;
  GatesSpec gates;
  BenchmarkSpec benchmark;
  std::optional<ProfileSpec> profile;
  std::optional<SimulationSpec> simulate;
  int max_attempts = 3;             // lost-agent requeues before `error: agent lost`
  int timeout_s = 600;              // per stage
};

// Parses YAML text. `file` is the name shown in errors. On failure returns every issue found
// (not just the first), each naming file:line:column and the field.
struct SpecParse {
  std::optional<JobSpec> spec;
  std::vector<SpecIssue> issues;
  bool ok() const { return spec.has_value() && issues.empty(); }
  std::string error_text() const;  // one issue per line
};
SpecParse parse_job_spec(const std::string& yaml_text, const std::string& file);
SpecParse parse_job_spec_file(const std::string& path);
// The same, and a job naming a problem is checked against `library` too: the problem and its
// version exist, each correctness case is one of the problem's cases (problem.hpp). Without a
// library (nullptr) only what needs none is checked.
struct ProblemLibrary;
SpecParse parse_job_spec(const std::string& yaml_text, const std::string& file,
                         const ProblemLibrary* library);
SpecParse parse_job_spec_file(const std::string& path, const ProblemLibrary* library);

// A job on a generic problem of the library: kernel.problem is set and names no family.
bool is_generic_problem(const KernelSpec& k);
// "rmsnorm@2", or "" when the job names no problem.
std::string problem_ref(const KernelSpec& k);

// JSON form used on the wire and in the store (lossless round trip with the structs).
nlohmann::json to_json(const JobSpec& s);
Result<JobSpec> job_spec_from_json(const nlohmann::json& j);

// Does the job need its host to itself? benchmark.host_exclusive when set, else true for
// targets that are APUs (gfx1151: the GPU shares the host's memory and power).
bool target_is_apu(const std::string& gpu);
bool host_exclusive(const JobSpec& s);

// A content hash of what determines a result: sources (by bundle hash), defines, flags, params,
// target, gates, benchmark. Same inputs -> same hash (the campaign no-repeat map uses it).
std::string job_content_hash(const JobSpec& s, const std::string& bundle_hash);

}  // namespace kfleet
