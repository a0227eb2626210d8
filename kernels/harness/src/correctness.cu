// The correctness stage (PROTOCOL.md): fresh seeded inputs per case and seed, poisoned outputs,
// whole-device sync, metrics against the GPU fp32 reference, inputs re-hashed afterwards.
#include <chrono>
#include <cmath>

#include "harness.hpp"

namespace kfleet::harness {

CheckedLaunch checked_launch(const Options& o, std::uint64_t seed, const std::function<int()>& launch) {
  CheckedLaunch r;
  r.read_only = inputs_read_only(true);  // a write to an input faults at once
  const auto start = std::chrono::steady_clock::now();
  set_phase("kernel");
  r.status = launch();
  KFLEET_GPU_CHECK(gpuGetLastError());
  // The whole device, side streams too, and bounded: work that never ends fails the case.
  device_sync_bounded(o.idle_timeout_s, [&] {
    JsonLine("correctness").str("case", o.case_name).integer("seed", static_cast<long long>(seed))
        .boolean("pass", false)
        .str("reason", "the device did not go idle within " + JsonLine::number(o.idle_timeout_s) +
                           " s after the launch returned: a persistent kernel or work left running")
        .print();
  });
  set_phase("setup");
  inputs_read_only(false);
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

namespace {

// Small cases also check the GPU fp32 reference against the CPU fp64 one: a wrong reference
// would pass wrong kernels, and this costs milliseconds.
constexpr double kCpuCrossCheckMaxFlops = 5e8;
constexpr double kReferenceAgreement = 1e-4;  // rel_l2 of fp32 vs fp64 on these shapes

std::string tolerance_json(const Tolerance& t) {
  JsonLine j("tolerance");
  std::string s;
  auto add = [&](const char* k, double v) {
    if (v >= 0) s += (s.empty() ? "" : ",") + JsonLine::quote(k) + ":" + JsonLine::number(v);
  };
  add("atol", t.atol);
  add("rtol", t.atol >= 0 ? t.rtol : -1);
  add("dot_rtol", t.atol >= 0 ? t.dot_rtol : -1);
  add("max_abs", t.max_abs);
  add("max_rel", t.max_rel);
  add("rel_l2", t.rel_l2);
  return "{" + s + "}";
}

}  // namespace

int run_correctness(const Options& o) {
  if (!o.problem_spec.empty() && o.reference_check) return run_reference_check(o);
  if (!o.problem_spec.empty()) return run_generic_correctness(o);  // one check per output
  bool all_pass = true;
  for (const std::uint64_t seed : o.seeds) {
    auto problem = make_problem(o, seed);
    if (!o.replay_path.empty()) attach_replay(o, *problem, recording_name(o.stage, seed));
    const std::size_t n = problem->out_elements();
    // The reference goes to the host and is zeroed on the device before the kernel runs: a
    // kernel that searched device memory for it would find nothing to copy.
    problem->compute_reference(false);
    const auto reference = problem->reference_host();
    problem->scrub_reference();
    if (problem->flops <= kCpuCrossCheckMaxFlops) {
      const auto check_start = std::chrono::steady_clock::now();
      const auto cpu = problem->cpu_reference();
      std::vector<float> gpu(reference.begin(), reference.end());
      const Metrics agree = compute_metrics(gpu.data(), cpu.data(), n);
      const bool agrees = agree.rel_l2 <= kReferenceAgreement && !agree.nan_count && !agree.inf_count;
      // The same record as a problem's (run_reference_check), for the verdict's
      // metrics.reference_check: which case and seed, against what, by how much.
      const std::string reason =
          agrees ? "" : "rel_l2 " + JsonLine::number(agree.rel_l2) + " above " + JsonLine::number(kReferenceAgreement);
      const double check_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - check_start).count();
      JsonLine("reference_check").str("problem", o.shape.count("M") ? "scaled_mm" : "attention")
          .str("case", o.case_name).integer("seed", static_cast<long long>(seed)).boolean("pass", agrees)
          .str("reason", reason).str("against", "fp64 CPU reference")
          .raw("outputs", "{\"out\":" + JsonLine("o").str("check", "rel_l2").boolean("pass", agrees)
                                           .str("reason", reason).num("max_abs", agree.max_abs)
                                           .num("rel_l2", agree.rel_l2).text() + "}")
          .num("time_ms", check_ms).print();
      if (!agrees)
        fail_setup("the harness's GPU reference disagrees with its CPU reference (rel_l2 " +
                   std::to_string(agree.rel_l2) + "): a harness or device fault, not the kernel's");
    }
    // dot_rtol: each output's sum of |terms|, in fp64 on the host from the inputs as generated
    // (a sum of products' own magnitude: cases small enough for the CPU alone).
    std::vector<double> terms;
    if (o.tolerance.dot_rtol >= 0) {
      if (problem->flops > kCpuCrossCheckMaxFlops)
        fail_usage("--dot-rtol needs each output's sum of |terms| from the CPU, which this case is "
                   "too large for (" + std::to_string(static_cast<long long>(problem->flops)) +
                   " flops; at most " + std::to_string(static_cast<long long>(kCpuCrossCheckMaxFlops)) + ")");
      terms = problem->cpu_reference_terms();
      if (terms.size() != n) fail_usage("--dot-rtol: this problem gives no sums of |terms|");
    }
    // Gate strength: if an output that does no work passes this tolerance, no verdict the gate
    // gives can be trusted; the case is refused before the kernel runs (PROTOCOL.md).
    std::vector<std::pair<std::string, Metrics>> scores;
    const std::string weak = gate_strength_failure(reference, problem->do_nothing_outputs(),
                                                   o.tolerance, &scores, terms.empty() ? nullptr : &terms);
    std::string strength = "{";
    for (const auto& [name, m] : scores)
      strength += (strength.size() > 1 ? "," : "") + JsonLine::quote(name) + ":{\"max_abs\":" +
                  JsonLine::number(m.max_abs) + ",\"max_rel\":" + JsonLine::number(m.max_rel) +
                  ",\"rel_l2\":" + JsonLine::number(m.rel_l2) + "}";
    strength += "}";
    if (!weak.empty()) {
      JsonLine("correctness").str("case", o.case_name).integer("seed", static_cast<long long>(seed))
          .boolean("pass", false).str("reason", weak).boolean("refused", true)
          .raw("tolerance", tolerance_json(o.tolerance)).raw("do_nothing", strength).print();
      all_pass = false;
      continue;
    }
    KFLEET_GPU_CHECK(gpuMemset(problem->output().get(), 0xFF, problem->output().bytes()));
    KFLEET_GPU_CHECK(gpuDeviceSynchronize());
    const auto [status, ms, read_only] = checked_launch(o, seed, [&] { return problem->launch(nullptr); });

    JsonLine line("correctness");
    line.str("case", o.case_name).integer("seed", static_cast<long long>(seed));
    std::string reason;
    if (status == KFLEET_UNSUPPORTED) {
      reason = "kernel returned KFLEET_UNSUPPORTED for this case";
    } else if (status != KFLEET_OK) {
      reason = "kernel launch returned status " + std::to_string(status);
    }
    std::size_t unwritten = 0;
    const auto out = problem->output_host(&unwritten);
    const Metrics m = compute_metrics(out.data(), reference.data(), n);
    const std::size_t violations =
        o.tolerance.atol >= 0 ? allclose_violations(out.data(), reference.data(), n,
                                                    o.tolerance.atol, o.tolerance.rtol,
                                                    terms.empty() ? nullptr : terms.data(),
                                                    o.tolerance.dot_rtol)
                              : 0;
    const std::string changed = problem->inputs_changed();
    if (reason.empty() && unwritten)
      reason = std::to_string(unwritten) + " of " + std::to_string(n) +
               " output elements were never written";
    if (reason.empty() && !changed.empty()) reason = changed;
    if (reason.empty()) reason = check_tolerance(m, violations, o.tolerance);
    const bool pass = reason.empty();
    all_pass = all_pass && pass;
    line.boolean("pass", pass)
        .str("reason", reason)
        .num("max_abs", m.max_abs)
        .num("max_rel", m.max_rel)
        .num("rel_l2", m.rel_l2)
        .integer("nan_count", static_cast<long long>(m.nan_count - std::min(m.nan_count, unwritten)))
        .integer("inf_count", static_cast<long long>(m.inf_count))
        .integer("unwritten", static_cast<long long>(unwritten))
        .boolean("inputs_intact", changed.empty())
        .boolean("inputs_read_only", read_only)
        .integer("elements", static_cast<long long>(n))
        .raw("tolerance", tolerance_json(o.tolerance))
        .integer("allclose_violations", static_cast<long long>(violations))
        .num("time_ms", ms)
        .raw("do_nothing", strength)
        .print();
  }
  return all_pass ? 0 : 1;
}

}  // namespace kfleet::harness
