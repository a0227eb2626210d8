#include "options.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "inputs.hpp"

namespace kfleet::harness {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep))
    if (!part.empty()) out.push_back(part);
  return out;
}

bool to_double(const std::string& s, double* v) {
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return !s.empty() && end && *end == '\0';
}

bool to_int(const std::string& s, long long* v) {
  char* end = nullptr;
  *v = std::strtoll(s.c_str(), &end, 10);
  return !s.empty() && end && *end == '\0';
}

std::string parse_dtypes(const std::string& text, Options* o) {
  kfleet_dtype t;
  if (text.find('=') == std::string::npos) {  // "--dtype fp16": every tensor
    if (!parse_dtype(text, &t)) return "unknown dtype '" + text + "' (fp16, bf16, fp8_e4m3)";
    for (const char* k : {"q", "kv", "out"}) o->dtype[k] = t;
    return "";
  }
  for (const auto& kv : split(text, ',')) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || !parse_dtype(kv.substr(eq + 1), &t))
      return "--dtype wants key=type pairs like q=fp16,kv=fp8_e4m3,out=fp16, got '" + kv + "'";
    o->dtype[kv.substr(0, eq)] = t;
  }
  return "";
}

}  // namespace

std::string parse_options(int argc, const char* const* argv, Options* o) {
  if (argc < 2) return "usage: kfleet-harness probe|correctness|benchmark [options]";
  o->stage = argv[1];
  if (o->stage != "probe" && o->stage != "correctness" && o->stage != "benchmark")
    return "unknown stage '" + o->stage + "' (probe, correctness, benchmark)";
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    auto number = [&](double* d) {
      std::string v;
      return value(&v) && to_double(v, d);
    };
    auto integer = [&](long long* n) {
      std::string v;
      return value(&v) && to_int(v, n);
    };
    std::string v;
    long long n = 0;
    double d = 0;
    bool good = true;
    for (const char* f : {"--shape", "--dtype", "--causal", "--bias", "--softmax-scale", "--b-layout",
                          "--init", "--atol", "--rtol", "--dot-rtol", "--max-abs", "--max-rel", "--rel-l2"})
      if (flag == f && o->family_option.empty()) o->family_option = flag;
    if (flag == "--case") good = value(&o->case_name);
    else if (flag == "--shape") {
      good = value(&v);
      for (const auto& kv : split(v, ',')) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || !to_int(kv.substr(eq + 1), &n) || n <= 0)
          return "--shape wants positive KEY=N pairs like B=2,H=8,S=512,D=64, got '" + kv + "'";
        o->shape[kv.substr(0, eq)] = n;
      }
    } else if (flag == "--seeds" || flag == "--seed") {
      good = value(&v);
      o->seeds.clear();
      for (const auto& s : split(v, ',')) {
        if (!to_int(s, &n) || n < 0) return flag + " wants non-negative integers, got '" + s + "'";
        o->seeds.push_back(static_cast<std::uint64_t>(n));
      }
      if (o->seeds.empty()) return flag + " needs at least one seed";
    } else if (flag == "--dtype") {
      if (!(good = value(&v))) break;
      const std::string err = parse_dtypes(v, o);
      if (!err.empty()) return err;
    } else if (flag == "--init") {
      if (!(good = value(&v))) break;
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        return "--init wants TENSOR=DIST/key=value/..., got '" + v + "'";
      if (o->init.count(v.substr(0, eq))) return "--init of '" + v.substr(0, eq) + "' given twice";
      o->init[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (flag == "--causal") o->causal = true;
    else if (flag == "--bias") o->bias = true;
    else if (flag == "--no-l2-flush") o->l2_flush = false;
    else if (flag == "--inputs-writable") o->inputs_writable = true;
    else if (flag == "--same-inputs") good = value(&o->same_inputs);
    else if (flag == "--kernel-configs") o->kernel_configs = true;
    else if (flag == "--softmax-scale") good = number(&o->softmax_scale);
    else if (flag == "--b-layout") {
      good = value(&v) && (v == "nk" || v == "kn");
      o->b_layout = v == "kn" ? KFLEET_B_KN : KFLEET_B_NK;
    } else if (flag == "--atol") good = number(&o->tolerance.atol);
    else if (flag == "--rtol") good = number(&o->tolerance.rtol);
    else if (flag == "--max-abs") good = number(&o->tolerance.max_abs);
    else if (flag == "--max-rel") good = number(&o->tolerance.max_rel);
    else if (flag == "--rel-l2") good = number(&o->tolerance.rel_l2);
    else if (flag == "--dot-rtol") good = number(&o->tolerance.dot_rtol);
    else if (flag == "--workspace-mib") { good = integer(&n) && n >= 0; o->workspace_mib = (int)n; }
    else if (flag == "--python-scratch-mib") {
      good = integer(&n) && n >= 0 && n <= (1 << 20);
      o->python_scratch_mib = (int)n;
    }
    else if (flag == "--device") { good = integer(&n) && n >= 0; o->device = (int)n; }
    else if (flag == "--min-samples") { good = integer(&n) && n >= 1; o->stop.min_samples = n; }
    else if (flag == "--max-samples") { good = integer(&n) && n >= 1; o->stop.max_samples = n; }
    else if (flag == "--max-noise-pct") good = number(&o->stop.max_noise_pct);
    else if (flag == "--max-time-s") good = number(&o->stop.max_time_s);
    else if (flag == "--warmup-max-s") good = number(&o->warmup_max_s);
    else if (flag == "--warmup-min-s") good = number(&o->warmup_min_s) && o->warmup_min_s >= 0;
    else if (flag == "--idle-timeout-s") good = number(&o->idle_timeout_s) && o->idle_timeout_s > 0;
    else if (flag == "--throttle-pct") good = number(&o->throttle_pct) && o->throttle_pct >= 0;
    else if (flag == "--record") good = value(&o->record_path) && !o->record_path.empty();
    else if (flag == "--replay") good = value(&o->replay_path) && !o->replay_path.empty();
    else if (flag == "--replay-issue")
      good = value(&o->replay_issue) && (o->replay_issue == "graph" || o->replay_issue == "stream");
    else if (flag == "--replay-kernels") {
      good = value(&v) && (v == "job" || v == "builtin" || v == "builtin-unloaded");
      o->replay_builtin_kernels = v == "builtin" || v == "builtin-unloaded";
      o->replay_builtin_unloaded = v == "builtin-unloaded";
    } else if (flag == "--replay-graph-before-tracer") o->replay_graph_before_tracer = true;
    else if (flag == "--replay-bare-trigger") {
      good = value(&v) && std::find(kReplayBareTriggers.begin(), kReplayBareTriggers.end(), v) !=
                              kReplayBareTriggers.end();
      o->replay_bare_trigger = v;
    }
    else if (flag == "--replay-bare") { good = integer(&n) && n >= 1 && n <= 100000; o->replay_bare = (int)n; }
    else if (flag == "--replay-dot") good = value(&o->replay_dot) && !o->replay_dot.empty();
    else if (flag == "--cupti-hw-trace") o->cupti_hw_trace = true;
    else if (flag == "--device-code") good = value(&o->device_code) && !o->device_code.empty();
    else if (flag == "--plan") good = value(&o->plan_path) && !o->plan_path.empty();
    else if (flag == "--plan-inputs") good = value(&o->plan_inputs) && !o->plan_inputs.empty();
    else if (flag == "--problem-spec") good = value(&o->problem_spec) && !o->problem_spec.empty();
    else if (flag == "--reference-check") o->reference_check = true;
    else if (flag == "--va-base") {
      std::string v;
      char* end = nullptr;
      good = value(&v) && (o->va_base = std::strtoull(v.c_str(), &end, 0)) != 0 && end && !*end &&
             o->va_base % (2u << 20) == 0;
    } else if (flag == "--result-fd") { good = integer(&n) && n > 2; o->result_fd = (int)n; }
    else return "unknown option '" + flag + "'";
    (void)d;
    if (!good) return "option " + flag + " needs a valid value";
  }
  Tolerance& t = o->tolerance;
  if (t.atol >= 0 && t.rtol < 0) t.rtol = 0;
  if (t.rtol >= 0 && t.atol < 0) t.atol = 0;
  if (t.dot_rtol >= 0 && t.atol < 0)
    return "--dot-rtol widens allclose (|x - r| <= atol + rtol * |r| + dot_rtol * sum |terms|): "
           "give --atol and --rtol with it";
  if (!t.any()) t.atol = t.rtol = 1e-2;
  if (o->stop.max_samples < o->stop.min_samples) o->stop.max_samples = o->stop.min_samples;
  if (!o->record_path.empty() && !o->replay_path.empty())
    return "--record and --replay exclude each other: one process records, another replays";
  if (!o->plan_path.empty() && (!o->record_path.empty() || !o->replay_path.empty()))
    return "--plan excludes --record and --replay: it only writes the plan a Python recorder "
           "records on (PYTHON.md)";
  if (!o->problem_spec.empty() && t.dot_rtol >= 0)
    return "--dot-rtol is a check of the scaled_mm family (its outputs' sums of |terms|); a "
           "problem's spec checks each output as the spec says";
  if (!o->problem_spec.empty() && !o->family_option.empty())
    return o->family_option + " does not apply with --problem-spec: the problem's spec gives its "
           "shapes, dtypes and checks";
  if (!o->plan_inputs.empty() && o->plan_path.empty())
    return "--plan-inputs goes with --plan";
  if (o->python_scratch_mib > 0 && o->plan_path.empty() && o->replay_path.empty())
    return "--python-scratch-mib is for replaying a Python kernel (with --plan or --replay)";
  if (o->inputs_writable && (o->replay_path.empty() || o->stage != "benchmark"))
    return "--inputs-writable is a diagnostic of a replayed benchmark (with --replay): it times the "
           "launch without making its inputs read-only";
  if (!o->same_inputs.empty() && o->same_inputs != "draw" && o->same_inputs != "copy" &&
      o->same_inputs != "kept")
    return "--same-inputs wants draw, copy or kept (how the plan's draw is there before each "
           "sample), got '" + o->same_inputs + "'";
  if (!o->same_inputs.empty() && (o->replay_path.empty() || o->stage != "benchmark"))
    return "--same-inputs is a diagnostic of a replayed benchmark (with --replay): its samples "
           "rewrite one draw of the inputs, the plan's, instead of drawing new ones";
  if (o->kernel_configs && o->stage != "benchmark")
    return "--kernel-configs is a diagnostic of the benchmark stage: it reports the timed kernels' "
           "executed configs";
  if (o->reference_check && (o->problem_spec.empty() || o->stage != "correctness"))
    return "--reference-check is a correctness stage of a problem (--problem-spec): the families check "
           "their references in their own way";
  if (o->reference_check && (!o->record_path.empty() || !o->replay_path.empty()))
    return "--reference-check runs no kernel: it takes neither --record nor --replay";
  if ((!o->replay_issue.empty() || !o->replay_dot.empty() || o->replay_builtin_kernels ||
       o->replay_graph_before_tracer || o->replay_bare) && o->replay_path.empty())
    return "--replay-issue, --replay-kernels, --replay-graph-before-tracer, --replay-bare and "
           "--replay-dot go with --replay";
  if (!o->replay_bare_trigger.empty() && !o->replay_bare)
    return "--replay-bare-trigger goes with --replay-bare N: it times the replay before and after the launches";
  if (o->replay_bare && o->stage != "benchmark")
    return "--replay-bare is a diagnostic of the benchmark stage: it times more launches of the replay";
  if (o->replay_builtin_kernels && (o->replay_issue == "stream" || o->stage != "benchmark"))
    return "--replay-kernels builtin is a diagnostic of the benchmark stage's graph: not with "
           "--replay-issue stream, nor in another stage (nothing it runs computes an output)";
  if (o->cupti_hw_trace && o->stage != "benchmark")
    return "--cupti-hw-trace is for the benchmark stage: only it traces kernels with CUPTI";
  if (!o->replay_path.empty() && o->device_code.empty())
    return "--replay needs --device-code: the job's objects, whose device code the list names";
  return "";
}

std::string require_dims(const Options& o, const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (!o.shape.count(k)) return "--shape is missing " + k;
  return "";
}

}  // namespace kfleet::harness
