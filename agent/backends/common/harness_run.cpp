// Correctness and benchmark stages: the harness runs as a child per stage (timeout, crash
// isolation), its JSON lines become events, and a benchmark is compared with the lease's
// baseline using kfleet::stats. The profile stage is in harness_profile.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "common/exclusive.hpp"
#include "common/harness_backend.hpp"
#include "common/harness_problem.hpp"
#include "common/harness_protocol.hpp"
#include "common/sandbox.hpp"
#include "kfleet/common/event.hpp"
#include "kfleet/common/stats.hpp"
#include "kfleet/common/versus.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;
using agent::StageContext;
using agent::StageResult;

namespace {

std::vector<double> doubles(const nlohmann::json& j) {
  std::vector<double> out;
  if (j.is_array()) {
    for (const auto& v : j) {
      if (v.is_number()) out.push_back(v.get<double>());
    }
  }
  return out;
}

bool lower_is_better(const std::string& metric) {
  auto ends = [&](const std::string& s) {
    return metric.size() >= s.size() && metric.compare(metric.size() - s.size(), s.size(), s) == 0;
  };
  return ends("_ms") || ends("_us") || ends("time");
}

}  // namespace

std::vector<nlohmann::json> parse_metric_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (!j.contains("metric") || !j["metric"].is_string()) continue;
    if (!j.contains("value") || !j["value"].is_number()) continue;
    if (!std::isfinite(j["value"].get<double>())) continue;
    out.push_back(std::move(j));
  }
  return out;
}

void add_comparison(const agent::Comparison& cmp, const std::vector<double>& samples_us,
                    double threshold_pct, nlohmann::json& data) {
  if (samples_us.empty()) return;
  stats::PerfComparison pc;
  if (!cmp.samples_us.empty()) {
    pc = stats::compare_samples(samples_us, cmp.samples_us, threshold_pct);
  } else if (cmp.median_us > 0) {
    pc = stats::compare_to_value(samples_us, cmp.median_us, threshold_pct);
  } else {
    return;
  }
  data["perf"] = pc.verdict;
  data["delta_pct"] = pc.delta_pct;
  data["ci_low_pct"] = pc.ci_low_pct;
  data["ci_high_pct"] = pc.ci_high_pct;
  data["baseline_us"] = cmp.samples_us.empty() ? cmp.median_us
                                               : stats::summarize(cmp.samples_us).median;
  data["baseline_label"] = cmp.label;
  data["baseline_kind"] = cmp.kind;
  data["threshold_pct"] = threshold_pct;
}

void HarnessBackend::pin_children(const std::vector<GpuInfo>& gpus, const char* env_name,
                                  bool by_uuid) {
  if (cfg_.device >= gpus.size()) return;
  const auto& extra = gpus[cfg_.device].extra;
  const bool amd = name() == "hip";
  slot_minor_ = amd ? extra.value("render_minor", 128u + cfg_.device) : extra.value("minor", cfg_.device);
  slot_known_ = true;
  std::string value = std::to_string(cfg_.device);
  if (by_uuid) {
    if (!extra.contains("uuid") || !extra["uuid"].is_string()) return;  // cannot pin by name
    value = extra["uuid"].get<std::string>();
  }
  pin_env_ = {{env_name, value}};
}

bool HarnessBackend::sandboxed() const { return cfg_.sandbox && cfg_.sandbox->isolated(); }

SubprocessSpec HarnessBackend::sandboxed_process(std::vector<std::string> writable,
                                         std::vector<std::string> readable, bool gpu) const {
  SubprocessSpec sp;
  sp.sandbox_policy = cfg_.sandbox;
  sp.sandbox.writable = std::move(writable);
  readable.push_back(cfg_.harness_dir);
  sp.sandbox.readable = std::move(readable);
  if (gpu) {
    const bool amd = name() == "hip";
    const unsigned minor = slot_known_ ? slot_minor_ : (amd ? 128u + cfg_.device : cfg_.device);
    sp.sandbox.devices = gpu_slot_devices(amd ? "amd" : "nvidia", minor);
    sp.env = pin_env_;
  }
  return sp;
}

SubprocessSpec HarnessBackend::job_process(StageContext& c, std::vector<std::string> readable,
                                           bool gpu) const {
  readable.push_back(c.bundle_dir);
  if (!c.baseline_bundle_dir.empty()) readable.push_back(c.baseline_bundle_dir);
  SubprocessSpec sp = sandboxed_process({c.run_dir.empty() ? c.work_dir : c.run_dir}, std::move(readable), gpu);
  sp.cwd = c.work_dir;
  sp.timeout_s = c.spec.timeout_s;
  sp.should_stop = [&c] { return c.stop.requested(); };
  // A call the syscall filter denied is named in the job's log, whatever the caller does with
  // the process's output; the pipeline files it under the stage that is running.
  sp.on_denial = [&c](const std::string& line) {
    c.sink.emit(event_type::log_line, {{"stream", "sandbox"}, {"text", line}});
  };
  return sp;
}

StageResult HarnessBackend::run_custom_step(StageContext& c, const std::string& stage,
                                            const std::string& command, bool parse_metrics) {
  SubprocessSpec sp = job_process(c, {}, true);
  sp.argv = {"/bin/sh", "-c", command};
  sp.cwd = c.bundle_dir;
  sp.env.insert(sp.env.end(), {{"KFLEET_GPU_ARCH", cfg_.arch},
                               {"KFLEET_DEVICE", std::to_string(child_device())}});
  sp.on_line = [&](OutputStream s, const std::string& line) {
    c.sink.emit(event_type::log_line,
                {{"stage", stage}, {"stream", s == OutputStream::out ? "stdout" : "stderr"},
                 {"text", line}});
  };
  auto res = run_subprocess(sp);
  if (!res.ok()) return infra(res.error().message);
  StageResult r;
  r.ok = res->ok();
  r.data = {{"command", command}, {"duration_s", res->duration_s}};
  if (!r.ok) {
    r.reason = "'" + command + "' " + res->describe();
    if (auto t = res->signal != 0 ? crash_line(res->err) : tail_lines(res->err, 1); !t.empty())
      r.reason += ": " + t;
    return r;
  }
  if (parse_metrics) {
    auto metrics = parse_metric_lines(res->out);
    r.data["metrics"] = metrics;
    // The headline: the performance gate's case if named, else the first metric; times are
    // compared directly, rates through their inverse so "regressed" still means worse.
    const nlohmann::json* head = nullptr;
    for (const auto& m : metrics) {
      bool case_ok = !c.spec.gates.performance ||
                     string_at(m, "case", "") == c.spec.gates.performance->case_name;
      if (case_ok && !head) head = &m;
    }
    if (!head && !metrics.empty()) head = &metrics.front();
    if (head) {
      std::string metric = (*head)["metric"];
      double scale = metric.size() > 3 && metric.ends_with("_ms") ? 1000.0 : 1.0;
      bool lower = lower_is_better(metric);
      auto to_cost = [&](double v) { return lower ? v * scale : 1.0 / v; };
      std::vector<double> samples;
      for (double v : doubles(array_at(*head, "samples")))
        samples.push_back(to_cost(v));
      if (samples.empty()) samples.push_back(to_cost((*head)["value"].get<double>()));
      r.data["metric"] = metric;
      r.data["value"] = (*head)["value"];
      if (lower) {
        auto s = stats::summarize(samples);
        r.data.update({{"median_us", s.median}, {"mean_us", s.mean}, {"stdev_us", s.stdev},
                       {"min_us", s.min}, {"p10_us", s.p10}, {"p90_us", s.p90},
                       {"samples_us", samples}});
        double thr = c.spec.gates.performance ? c.spec.gates.performance->threshold_pct : 1.0;
        add_comparison(c.compare, samples, thr, r.data);
      }
    }
  }
  return r;
}

StageResult HarnessBackend::correctness(StageContext& c) {
  const auto& k = c.spec.kernel;
  if (k.family == "custom") {
    if (!k.steps || k.steps->test.empty()) return StageResult{true, "", false, {{"skipped", true}}};
    return run_custom_step(c, stage::correctness, k.steps->test, false);
  }
  if (harness_binary_.empty()) return infra("no runnable harness on this host (see the build log)");
  StageResult r;
  if (const std::string no = in_process_refusal(c.spec); !no.empty()) {
    r.reason = no;
    return r;
  }
  if (!c.spec.gates.correctness) {
    r.ok = true;
    r.data["skipped"] = "no correctness gate";
    return r;
  }
  // A problem's required cases and the case its reference is checked on, from this agent's
  // own library (problem_run_plan).
  auto plan = problem_run_plan(cfg_.problems_dir, c.spec);
  if (!plan.ok()) return fleet(plan.error().message);
  if (!plan->missing_required.empty()) {
    r.reason = plan->missing_required;
    return r;
  }
  nlohmann::json rows = nlohmann::json::array();
  // The verdict lists the cases it ran (data.cases) and the reference check (data.reference_check).
  r.data["cases"] = nlohmann::json::array();
  if (!plan->reference_case.empty()) {
    // kfleet's GPU reference against its fp64 CPU reference, once per run, on the smallest of
    // the job's cases, by kfleet's own measuring process (no job code, no kernel): before any
    // case, so that every verdict carries it, whatever the job's kernel does.
    std::vector<nlohmann::json> msgs;
    std::uint64_t seed = 0;
    for (const auto& cs : c.spec.gates.correctness->cases)
      if (cs.name == plan->reference_case && !cs.seeds.empty()) seed = cs.seeds.front();
    auto res = run_reference_check(c, plan->reference_case, seed, msgs);
    if (!res.ok()) return infra(res.error().message);
    HarnessReport rep;
    for (const auto& m : msgs) rep.add(m);
    if (rep.reference_check) r.data["reference_check"] = *rep.reference_check;
    bool infra_err = false;
    const std::string why = harness_failure(res->exit_code, res->signal, res->timed_out, c.spec.timeout_s, rep,
                                            res->err, infra_err);
    if (res->stopped) return infra("stopped");
    if (!why.empty()) {
      StageResult f = infra(why);
      f.data = r.data;
      if (rep.error && string_at(*rep.error, "phase", "") == "reference") f.data["reference_fault"] = true;
      return f;
    }
  }
  for (const auto& cs : c.spec.gates.correctness->cases) {
    std::vector<nlohmann::json> msgs;
    auto args = harness_correctness_args(c.spec, cs, problem_spec_file_, family_case_args_);
    const auto started = std::chrono::steady_clock::now();
    auto res = run_stage(c, stage::correctness, args, msgs);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!res.ok()) return infra(res.error().message);
    HarnessReport rep;
    for (const auto& m : msgs) rep.add(m);
    if (rep.device) r.data["device"] = *rep.device;
    // A family's harness checks its GPU reference against its fp64 CPU reference in the case's
    // own run (small cases); the first such record is the verdict's, named by the job's problem.
    if (rep.reference_check && !r.data.contains("reference_check")) {
      r.data["reference_check"] = *rep.reference_check;
      if (!c.spec.kernel.problem.empty()) r.data["reference_check"]["problem"] = problem_ref(c.spec.kernel);
    }
    // A Python kernel's kernels and their origins, as its recorder reported them (once).
    if (recorded_kernels_ && !r.data.contains("kernels")) {
      r.data["kernels"] = *recorded_kernels_;
      r.data["kernels"].erase("type");
    }
    // The pipeline publishes data.rows as correctness events.
    for (auto row : rep.correctness) {
      row["ok"] = bool_at(row, "pass", false);
      rows.push_back(row);
    }
    bool infra_err = false;
    std::string why = harness_failure(res->exit_code, res->signal, res->timed_out,
                                      c.spec.timeout_s, rep, res->err, infra_err);
    if (res->stopped) return infra("stopped");
    // What the case cost: its harness processes (recording and replay), wall time.
    r.data["cases"].push_back({{"name", cs.name}, {"seeds", cs.seeds}, {"pass", why.empty()},
                               {"seconds", std::round(seconds * 1000) / 1000}});
    if (!why.empty()) {
      r.reason = why;
      r.infra_error = infra_err;
      r.data["rows"] = rows;
      return r;
    }
  }
  r.ok = true;
  r.data["rows"] = rows;
  return r;
}

StageResult HarnessBackend::benchmark(StageContext& c) {
  const auto& k = c.spec.kernel;
  if (k.family == "custom") {
    if (!k.steps || k.steps->bench.empty()) return StageResult{true, "", false, {{"skipped", true}}};
    return run_custom_step(c, stage::benchmark, k.steps->bench, true);
  }
  if (harness_binary_.empty()) return infra("no runnable harness on this host (see the build log)");
  auto cs = benchmark_case(c.spec);
  if (!cs) return StageResult{true, "", false, {{"skipped", "no case to benchmark"}}};
  if (const std::string no = in_process_refusal(c.spec); !no.empty()) return StageResult{false, no, false, {}};
  if (c.compare.interleave && c.compare.spec && in_process_timing(*c.compare.spec) &&
      !in_process_timing(c.spec))
    return StageResult{false,
                       "the baseline " + c.compare.label + " was timed in-process (its host code "
                       "ran in the measuring process): it cannot be the baseline of a replayed "
                       "job; time it replayed first",
                       false, {}};
  std::function<Result<std::vector<unsigned>>()> others = [this] { return other_processes(); };
  if (cfg_.require_exclusive) {
    auto w = wait_for_exclusive_gpu(others, cfg_.device, {cfg_.busy_wait_s, 1.0},
                                    [&] { return c.stop.requested(); },
                                    [&](const std::string& m) { c.sink.log(stage::benchmark, m); });
    if (!w.ok) return infra(w.reason);
  }
  const double thr = c.spec.gates.performance ? c.spec.gates.performance->threshold_pct : 1.0;
  // The job's bench options as its pooled processes get them (the time budget and the samples
  // split between them): the kernel's command line, and kfleet's PyTorch references'.
  const int procs = std::max(1, c.spec.benchmark.processes);
  JobSpec proc_spec = c.spec;
  proc_spec.benchmark.max_time_s = c.spec.benchmark.max_time_s / procs;
  proc_spec.benchmark.min_samples = std::max(1, (c.spec.benchmark.min_samples + procs - 1) / procs);
  const auto pooled_args = harness_benchmark_args(proc_spec, *cs, problem_spec_file_, family_case_args_);
  auto snap = snapshot();
  const nlohmann::json before = snap.ok() ? snap->to_json() : nlohmann::json();
  StageResult r;
  if (c.compare.interleave) {
    if (baseline_binary_.empty()) return infra("interleaved comparison: no reference harness was built");
    // Each round is one short process per side with a fixed sample budget, so both sides get
    // the same treatment; warm-up is bounded because every round pays it.
    JobSpec round_spec = c.spec;
    auto& b = round_spec.benchmark;
    b.min_samples = std::max(10, c.spec.benchmark.min_samples);
    b.max_time_s = std::max(1.0, c.spec.benchmark.max_time_s / 2);
    b.warmup_max_s = std::min(1.0, c.spec.benchmark.warmup_max_s);
    auto args = harness_benchmark_args(round_spec, *cs, problem_spec_file_, family_case_args_);
    args.insert(args.end(), {"--max-samples", std::to_string(b.min_samples), "--warmup-min-s",
                             std::to_string(std::min(0.5, b.warmup_max_s))});
    RoundPlan plan;
    plan.max_rounds = c.spec.benchmark.max_rounds;
    if (c.spec.benchmark.min_rounds > 0) plan.min_rounds = c.spec.benchmark.min_rounds;
    plan.threshold_pct = thr;
    r = run_rounds(plan, [&](bool baseline, int) {
      return time_once(c, baseline ? baseline_binary_ : harness_binary_, args);
    }, c.compare, c.stop, c.sink);
  } else {
    // Pooled processes split the job's time budget and samples; warm-up is paid by each.
    r = run_pooled(procs, [&](bool, int) { return time_once(c, harness_binary_, pooled_args); },
                   c.stop, &c.sink);
    if (r.ok) add_comparison(c.compare, doubles(r.data["samples_us"]), thr, r.data);
  }
  if (c.stop.requested()) return infra("stopped");
  if (cfg_.require_exclusive) {
    // A process that came and went between samples is not seen; one still there is.
    auto after = others();
    if (after.ok() && !after->empty()) {
      return infra("another compute process (" + describe_pids(*after) + ") started on GPU " +
                   std::to_string(cfg_.device) + " during the benchmark; its samples are discarded");
    }
  }
  if (!r.ok) return r;
  if (!before.is_null()) r.data["gpu_before"] = before;
  // Wherever the verdict is shown, it says how it was timed.
  r.data["timing_mode"] = in_process_timing(c.spec) ? "in_process" : "replay";
  if (in_process_timing(c.spec)) r.data["timing_mode_note"] = kInProcessNote;
  // Which measuring process timed it: kfleet's, by content (the same for every job of this
  // agent's compiler, arch and harness).
  if (!in_process_timing(c.spec) && measurer_) r.data["measurer_sha256"] = measurer_->sha256;
  if (auto s = snapshot(); s.ok()) r.data["gpu_after"] = s->to_json();
  r.data["case"] = cs->name;
  // Then a problem's kernel against kfleet's PyTorch references, on the same GPU, once the
  // kernel's own samples are known good: whatever becomes of them is a note, never the job's
  // failure.
  if (is_problem_kernel(c.spec.kernel)) {
    r.data["versus"] = versus_pytorch(c, *cs, doubles(r.data["samples_us"]), pooled_args);
    if (c.stop.requested()) return infra("stopped");
  }
  return r;
}

TimedRun HarnessBackend::time_once(StageContext& c, const std::string& binary,
                                   const std::vector<std::string>& args) {
  TimedRun t;
  std::vector<nlohmann::json> msgs;
  auto res = run_stage(c, stage::benchmark, args, msgs, binary);
  if (!res.ok()) {
    t.infra_error = true;
    t.reason = res.error().message;
    return t;
  }
  HarnessReport rep;
  for (const auto& m : msgs) rep.add(m);
  if (res->stopped) {
    t.infra_error = true;
    t.reason = "stopped";
    return t;
  }
  t.reason = harness_failure(res->exit_code, res->signal, res->timed_out, c.spec.timeout_s, rep,
                             res->err, t.infra_error);
  if (const std::string why = bench_no_result_cause(rep); why == kGpuThrottled) t.cause = why;
  if (!t.reason.empty()) return t;
  if (!rep.bench) {
    t.infra_error = true;
    t.reason = "the harness printed no bench result";
    return t;
  }
  const auto& b = *rep.bench;
  if (bool_at(b, "suspect", false)) {
    t.reason = "result is faster than the hardware allows (" +
               string_at(b, "suspect_reason", "below the roofline floor") +
               "): the kernel skips work or fools the timer";
    return t;
  }
  for (const char* f : {"stop_reason", "tflops", "gbs", "roofline_floor_us", "suspect",
                        "sm_clock_mhz", "recheck", "l2_flush_bytes", "throttled_discarded",
                        "timing", "timing_note", "event_median_us", "activity_records",
                        "max_streams", "timing_disagreements", "inputs", "overhead_s",
                        "refresh_s", "recheck_s", "sampling_s", "peak_tflops",
                        "peak_tflops_basis", "peak_gbs", "tflops_frac", "gbs_frac", "gpu_timer_ppm",
                        "timer_scale", "timer_note"}) {
    if (b.contains(f)) t.fields[f] = b[f];
  }
  if (rep.device) t.fields["device"] = *rep.device;
  if (rep.warmup) t.fields["warmup"] = *rep.warmup;
  t.samples_us = doubles(array_at(b, "samples_us"));
  t.ok = true;
  return t;
}

}  // namespace kfleet::backends
