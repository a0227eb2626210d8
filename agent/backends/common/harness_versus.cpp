// A problem's kernel against kfleet's own PyTorch references of its problem (eager, and
// torch.compile in max-autotune-no-cudagraphs), on the same agent, by the same replay, on the
// job's timed case with the job's bench options (docs/measurement.md, "Against PyTorch").
//
// A reference is kfleet's file (<library>/<problem>/reference_torch.py), recorded by the same
// recorder as a `language: torch` job (with --torch-compile for the compile reference) in the
// job's sandbox, but in a fresh folder of the agent's that holds nothing of the job's, and
// replayed by the same measuring process. Its timing is cached on the agent by what it depends
// on (torch_reference_key), so a campaign's hundredth iteration reads it instead of compiling
// again. Whatever becomes of a reference is never the job's: no speedup and a note.
#include <algorithm>

#include "common/exclusive.hpp"
#include "common/harness_backend.hpp"
#include "common/harness_protocol.hpp"
#include "kfleet/common/event.hpp"
#include "kfleet/common/sha256.hpp"
#include "kfleet/common/versus.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;
using agent::StageContext;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string missing_text(const PythonRuntime& py) {
  std::string why;
  for (const auto& m : py.missing) why += (why.empty() ? "" : "; ") + m;
  return why;
}

}  // namespace

ReferenceTiming HarnessBackend::time_reference(StageContext& c, const std::string& baseline,
                                               const std::string& source,
                                               const std::vector<std::string>& args,
                                               const nlohmann::json& key, bool& cacheable) {
  ReferenceTiming t;
  t.baseline = baseline;
  t.key = key;
  const std::string id = "kfleet-torch-reference:" + baseline;
  python_jobs_[id] = PythonJob{source, "torch", torch_reference_entry(c.spec.kernel),
                               baseline == kBaselineCompile ? kTorchCompileMode : "", true};
  const int n = std::max(1, c.spec.benchmark.processes);
  agent::StageResult r = run_pooled(n, [&](bool, int) { return time_once(c, id, args); }, c.stop, &c.sink);
  python_jobs_.erase(id);
  cacheable = !c.stop.requested() && (r.ok || !r.infra_error);
  if (r.ok && r.data.contains("samples_us") && r.data["samples_us"].is_array()) {
    for (const auto& v : r.data["samples_us"])
      if (v.is_number()) t.samples_us.push_back(v.get<double>());
    return t;
  }
  // What the recorder and the measuring process said, in the reference's words: it is kfleet's
  // program, not the job's.
  std::string why = replace_all(r.reason, "the job's launch function under capture",
                                "kfleet's reference under capture");
  if (why.rfind("harness timed out", 0) == 0)
    why = "its recording (at most " + std::to_string(cfg_.reference_timeout_s) +
          " s) or its replay (at most " + std::to_string(c.spec.timeout_s) + " s) ran out of time";
  t.note = "kfleet's PyTorch " + baseline_label(baseline) + " reference could not be timed: " +
           (why.empty() ? "no reason given" : why) +
           (cacheable ? "" : " (the fleet's failure: timed again by the next job)");
  return t;
}

nlohmann::json HarnessBackend::versus_pytorch(StageContext& c, const CorrectnessCase& cs,
                                              const std::vector<double>& kernel_us,
                                              const std::vector<std::string>& args) {
  const auto& k = c.spec.kernel;
  nlohmann::json out = nlohmann::json::array();
  const std::vector<std::string> baselines = {kBaselineEager, kBaselineCompile};
  auto none = [&](const std::string& why) {
    for (const auto& b : baselines) {
      BaselineComparison n;
      n.baseline = b;
      n.case_name = cs.name;
      n.note = why;
      out.push_back(to_json(n));
    }
    return out;
  };
  if (name() == "hip")
    return none("kfleet's PyTorch references are recorded on NVIDIA GPUs only so far (a ROCm "
                "torch's library kernels are not replayed yet: kernels/harness/PYTHON.md)");
  if (!measurer_) return none("no measuring process on this agent");
  auto source = torch_reference_source(cfg_.problems_dir, k);
  if (!source) return none(source.error().message);
  const auto& py = python_runtime();
  if (!py) return none("no Python on this agent to record kfleet's PyTorch references with: " +
                       py.error().message);
  if (!has(py->languages, "torch"))
    return none("this agent's Python (" + py->python + ") cannot record torch programs: " +
                missing_text(*py));

  ReferenceKeyParts parts;
  parts.problem = reference_problem(k);
  parts.version = k.problem_version;
  parts.case_name = cs.name;
  parts.gpu_class = c.gpu.gpu_class.empty() ? cfg_.gpu_class : c.gpu.gpu_class;
  parts.torch = py->torch_version;
  parts.triton = py->triton_version;
  parts.driver = c.gpu.driver.empty() ? "unknown" : c.gpu.driver;
  parts.measurer = measurer_->sha256;
  parts.reference = file_sha256(*source);
  parts.args = args;
  const nlohmann::json key = torch_reference_key(parts);
  const ReferenceCache cache((fs::path(build_cache_dir(cfg_.cache_dir, c.work_dir)) / "torch-references").string());

  for (const auto& b : baselines) {
    const std::string label = baseline_label(b);
    if (c.stop.requested()) break;
    if (auto hit = cache.get(key, b)) {
      c.sink.log(stage::benchmark, "kfleet's PyTorch " + label + " reference of " + versus_key_text(key) +
                                       ": from this agent's cache");
      out.push_back(to_json(compare_with_reference(kernel_us, *hit, cs.name, true)));
      continue;
    }
    if (b == kBaselineCompile && !has(py->languages, "triton")) {
      // torch.compile generates Triton kernels: without triton there is nothing to time. The
      // fleet's setup, fixed by installing it: not cached.
      BaselineComparison n;
      n.baseline = b;
      n.case_name = cs.name;
      n.key = key;
      n.note = "torch.compile needs triton, which this agent's Python lacks: " + missing_text(*py);
      out.push_back(to_json(n));
      continue;
    }
    c.sink.log(stage::benchmark, "timing kfleet's PyTorch " + label + " reference of " + versus_key_text(key) +
                                     (b == kBaselineCompile ? std::string(" (torch.compile, ") + kTorchCompileMode +
                                                                  ": its first recording compiles and tunes)"
                                                            : std::string()));
    bool cacheable = false;
    ReferenceTiming t = time_reference(c, b, *source, args, key, cacheable);
    if (c.stop.requested()) break;
    if (cfg_.require_exclusive && !t.samples_us.empty()) {
      // Another process on the GPU while the reference was timed: its samples are not kept (nor
      // cached), and the kernel's verdict, timed before, stands.
      if (auto others = other_processes(); others.ok() && !others->empty()) {
        t.samples_us.clear();
        t.note = "another compute process (" + describe_pids(*others) + ") was on the GPU while kfleet's PyTorch " +
                 label + " reference was timed: not compared (the next job times it again)";
        cacheable = false;
      }
    }
    if (cacheable) {
      if (auto put = cache.put(t); !put)
        c.sink.log(stage::benchmark, "the reference's timing was not cached: " + put.error().message);
    }
    const BaselineComparison cmp = compare_with_reference(kernel_us, t, cs.name, false);
    c.sink.log(stage::benchmark, "kfleet's PyTorch " + label + " reference: " +
                                     (t.samples_us.empty() ? t.note : format_comparison(cmp)));
    out.push_back(to_json(cmp));
  }
  return out;
}

}  // namespace kfleet::backends
