// The simulated GPU: no compiler, no device, numbers from the job's `simulate:` section. It
// exists for tests and the no-GPU demo; everything it reports is marked simulated.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <map>
#include <thread>

#include "common/harness_protocol.hpp"
#include "common/rounds.hpp"
#include "common/torch_reference.hpp"
#include "kfleet/agent/backend.hpp"
#include "kfleet/common/sha256.hpp"
#include "kfleet/common/stats.hpp"
#include "kfleet/common/versus.hpp"

namespace kfleet::agent {

namespace {

// Waits ms, waking early when the run must stop; false when stopped.
bool wait_ms(const StopFlag& stop, std::int64_t ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (stop.requested()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(5), until - std::chrono::steady_clock::now()));
  }
  return !stop.requested();
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

StageResult stopped() {
  StageResult r;
  r.reason = "stopped";
  return r;
}

StageResult infra(std::string reason) {
  StageResult r;
  r.infra_error = true;
  r.reason = std::move(reason);
  return r;
}

class SimulatedBackend final : public Backend {
 public:
  explicit SimulatedBackend(SimulatedGpuOptions o) : o_(std::move(o)) {}

  std::string name() const override { return "simulated"; }
  bool simulated() const override { return true; }

  Result<std::vector<GpuInfo>> discover() override {
    std::vector<GpuInfo> out;
    const std::size_t host_hash = std::hash<std::string>()(o_.host_id);
    for (unsigned i = 0; i < std::max(o_.gpus, 1u); ++i) {
      GpuInfo g;
      g.gpu_class = o_.gpu_class;
      g.arch = o_.arch;
      g.name = "Simulated " + o_.gpu_class;
      g.vendor = "simulated";
      g.memory_bytes = std::int64_t{24} << 30;
      g.l2_bytes = std::int64_t{48} << 20;
      g.driver = "simulated";
      g.simulated = true;
      // Identities shaped like NVML's, marked SIM so no one takes them for a real board.
      char uuid[64], pci[32];
      std::snprintf(uuid, sizeof uuid, "GPU-SIM-%08zx-%04x", host_hash & 0xffffffffu, i);
      std::snprintf(pci, sizeof pci, "00000000:%02X:00.0", 0x10 + i);
      g.extra["index"] = i;
      g.extra["uuid"] = uuid;
      g.extra["pci_bus_id"] = pci;
      out.push_back(std::move(g));
    }
    return out;
  }

  StageResult build(StageContext& c) override {
    auto s = sim(c);
    if (!wait_ms(c.stop, s.stage_ms)) return stopped();
    StageResult r;
    std::string src = c.spec.kernel.sources.empty() ? "kernel.cu" : c.spec.kernel.sources[0];
    if (s.fail_stage == "build") {
      r.reason = s.fail_reason.empty()
                     ? src + ":42:7: error: identifier \"undefined_tile\" is undefined"
                     : s.fail_reason;
      c.sink.log("build", r.reason);
      r.data["log"] = r.reason;
      return r;
    }
    c.sink.log("build", "simulated compile of " + src + " for " + o_.arch + ": ok");
    r.ok = true;
    if (is_generic_problem(c.spec.kernel)) {
      // Nothing is read from the library here: a simulated run of a problem's job says which
      // problem and entry a real agent would build, and is marked simulated like the rest.
      r.data["problem"] = problem_ref(c.spec.kernel);
      r.data["entry"] = c.spec.kernel.entry.empty() ? "kfleet_problem_launch" : c.spec.kernel.entry;
    }
    return r;
  }

  StageResult resources(StageContext& c) override {
    auto s = sim(c);
    if (!wait_ms(c.stop, s.stage_ms)) return stopped();
    const ResourceBudget budget = c.spec.gates.resources.value_or(ResourceBudget{});
    std::int64_t regs = 96, smem = 37990, spill = 0;
    if (s.fail_stage == "resources") regs = budget.max_registers.value_or(128) + 40;
    nlohmann::json kernel = {{"name", c.spec.kernel.entry.empty() ? "kernel" : c.spec.kernel.entry},
                             {"registers", regs},
                             {"shared_bytes", smem},
                             {"spill_bytes", spill}};
    nlohmann::json violations = nlohmann::json::array();
    auto check = [&](const char* what, std::int64_t used, std::optional<std::int64_t> max) {
      if (max && used > *max)
        violations.push_back(std::string(what) + " " + std::to_string(used) + " > budget " +
                             std::to_string(*max));
    };
    auto max_regs = budget.max_registers;
    if (s.fail_stage == "resources" && !max_regs) max_regs = 128;  // over budget even unbudgeted
    check("register count", regs, max_regs);
    check("shared memory bytes", smem, budget.max_shared_bytes);
    check("spill bytes", spill, budget.max_spill_bytes);
    StageResult r;
    r.ok = violations.empty();
    if (!r.ok) r.reason = s.fail_reason.empty() ? violations[0].get<std::string>() : s.fail_reason;
    r.data = {{"kernels", nlohmann::json::array({kernel})}, {"ok", r.ok}, {"violations", violations}};
    return r;
  }

  StageResult correctness(StageContext& c) override {
    auto s = sim(c);
    if (s.fail_stage == "crash") {
      if (!wait_ms(c.stop, s.stage_ms)) return stopped();
      c.sink.log("correctness", "harness exited on signal 11 (SIGSEGV)");
      return infra("harness crashed (signal 11)");
    }
    if (s.fail_stage == "hang") {
      if (!wait_ms(c.stop, std::int64_t{c.spec.timeout_s} * 1000)) return stopped();
      return infra("timed out after " + std::to_string(c.spec.timeout_s) + "s");
    }
    if (!wait_ms(c.stop, s.stage_ms)) return stopped();
    std::vector<CorrectnessCase> cases;
    Tolerance tol;
    if (c.spec.gates.correctness) {
      cases = c.spec.gates.correctness->cases;
      tol = c.spec.gates.correctness->tolerance;
    }
    if (cases.empty()) cases.push_back(CorrectnessCase{"default", {}, {0}, false});
    double limit = tol.max_abs ? *tol.max_abs : tol.atol ? *tol.atol : 1e-3;
    auto rng = rng_for(c, 0xC0FFEE);
    std::uniform_real_distribution<double> frac(0.05, 0.8);
    StageResult r;
    r.ok = true;
    nlohmann::json rows = nlohmann::json::array();
    r.data["cases"] = nlohmann::json::array();
    if (!c.spec.kernel.problem.empty()) {
      // What a GPU agent's measuring process reports (its GPU reference against the fp64 CPU
      // reference); nothing is computed here, and the line says so.
      r.data["reference_check"] = {{"problem", c.spec.kernel.problem}, {"case", cases.front().name},
                                   {"seed", cases.front().seeds.empty() ? 0 : cases.front().seeds.front()},
                                   {"pass", true}, {"simulated", true},
                                   {"against", "fp64 CPU reference (simulated: nothing was computed)"}};
    }
    if (c.spec.kernel.language == "triton" || c.spec.kernel.language == "torch") {
      // A GPU agent's Python recorder reports each kernel the launch ran and its origin; nothing
      // was recorded here, and the report says so.
      r.data["kernels"] = {{"type", "kernels"}, {"reported_by", "simulated"}, {"simulated", true},
                           {"kernels", nlohmann::json::array({{{"function", c.spec.kernel.entry.empty()
                                                                                ? std::string("kernel")
                                                                                : c.spec.kernel.entry},
                                                               {"origin", "job"},
                                                               {"how", "simulated: nothing was recorded"}}})}};
    }
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const auto& cs = cases[ci];
      auto seeds = cs.seeds.empty() ? std::vector<std::uint64_t>{0} : cs.seeds;
      const bool ok_before = r.ok;
      for (std::size_t si = 0; si < seeds.size(); ++si) {
        double max_abs = limit * frac(rng);
        bool fail_here = s.fail_stage == "correctness" && ci + 1 == cases.size() && si == 0;
        if (fail_here) max_abs = limit * 4;
        bool ok = max_abs <= limit;
        rows.push_back({{"case", cs.name}, {"seed", seeds[si]}, {"max_abs", max_abs},
                        {"max_rel", max_abs * 2}, {"rel_l2", max_abs / 10}, {"ok", ok}});
        if (!c.spec.kernel.problem.empty()) rows.back()["problem"] = problem_ref(c.spec.kernel);
        if (!ok && r.ok) {
          r.ok = false;
          r.reason = s.fail_reason.empty()
                         ? "case " + cs.name + " seed " + std::to_string(seeds[si]) + ": max_abs " +
                               fmt("%.4g", max_abs) + " > tolerance " + fmt("%.4g", limit)
                         : s.fail_reason;
        }
      }
      if (ok_before) r.data["cases"].push_back({{"name", cs.name}, {"seeds", seeds}, {"pass", r.ok}});
    }
    r.data["rows"] = rows;
    return r;
  }

  StageResult benchmark(StageContext& c) override {
    auto s = sim(c);
    if (!wait_ms(c.stop, s.stage_ms)) return stopped();
    auto rng = rng_for(c, 0xBE4C);
    const double threshold =
        c.spec.gates.performance ? c.spec.gates.performance->threshold_pct : 1.0;
    const int n = std::max(10, c.spec.benchmark.min_samples);
    StageResult r;
    if (c.compare.interleave) {
      if (!c.compare.interleave_error.empty())
        return infra("interleaved comparison: " + c.compare.interleave_error);
      if (!c.compare.spec) return infra("interleaved comparison: the lease carries no reference spec");
      // A drifting GPU (a random walk per process) plus each process's own offset: the
      // baseline on both sides of every candidate cancels the drift, the rounds average out
      // the offsets.
      const double base_center = center_us(c.compare.spec->simulate.value_or(SimulationSpec{}));
      const double cand_center = center_us(s);
      std::normal_distribution<double> step(0.0, s.noise_pct / 100);
      std::normal_distribution<double> offset(0.0, s.noise_pct / 200);
      double drift = 0;
      backends::RoundPlan plan;
      plan.max_rounds = c.spec.benchmark.max_rounds;
      if (c.spec.benchmark.min_rounds > 0) plan.min_rounds = c.spec.benchmark.min_rounds;
      plan.threshold_pct = threshold;
      r = backends::run_rounds(plan, [&](bool baseline, int) {
        backends::TimedRun t;
        drift += step(rng);
        t.samples_us = draw(rng, (baseline ? base_center : cand_center) * (1 + drift + offset(rng)),
                            s.noise_pct, n);
        t.ok = true;
        return t;
      }, c.compare, c.stop, c.sink);
    } else {
      // Each simulated process settles into its own offset, as real harness processes do.
      const int procs = std::max(1, c.spec.benchmark.processes);
      std::normal_distribution<double> offset(0.0, s.noise_pct / 100);
      r = backends::run_pooled(procs, [&](bool, int) {
        backends::TimedRun t;
        const double off = procs > 1 ? offset(rng) : 0.0;  // one process: the old numbers
        t.samples_us = draw(rng, center_us(s) * (1 + off), s.noise_pct, (n + procs - 1) / procs);
        t.ok = true;
        return t;
      }, c.stop);
      if (r.ok) backends::add_comparison(c.compare, r.data["samples_us"].get<std::vector<double>>(),
                                         threshold, r.data);
    }
    if (!r.ok) return r;
    r.data["case"] = c.spec.gates.performance ? c.spec.gates.performance->case_name : "";
    r.data["noise_pct"] = r.data.value("rel_stdev_pct", 0.0);
    if (is_problem_kernel(c.spec.kernel))
      r.data["versus"] = versus(c, s, r.data["samples_us"].get<std::vector<double>>());
    return r;
  }

  StageResult profile(StageContext& c) override {
    auto s = sim(c);
    if (!wait_ms(c.stop, s.stage_ms)) return stopped();
    StageResult r;
    r.ok = true;
    nlohmann::json metrics = nlohmann::json::object();
    auto rng = rng_for(c, 0x9F0F);
    std::uniform_int_distribution<int> v(0, 100000);
    if (c.spec.profile)
      for (const auto& m : c.spec.profile->metrics) metrics[m] = v(rng);
    r.data = {{"tool", c.spec.profile ? c.spec.profile->tool : "none"}, {"metrics", metrics}};
    return r;
  }

 private:
  static SimulationSpec sim(const StageContext& c) { return c.spec.simulate.value_or(SimulationSpec{}); }

  // A problem's kernel against simulated PyTorch references, cached by their key as a real
  // agent's are (the problem, its case and shape, the bench options, the class): the first job of a key on this agent "times" them (their medians from its
  // simulate section, eager_us and compile_us, else 1.3 and 1.05 times its time_us, on this
  // class), and every later job of the key gets the same samples, "cached". Marked simulated.
  nlohmann::json versus(const StageContext& c, const SimulationSpec& s, const std::vector<double>& kernel_us) {
    const auto cs = backends::benchmark_case(c.spec);
    const std::string case_name = cs ? cs->name : "";
    // As a real agent's key: the case's shape and the bench options are in it (a family's cases
    // of one name differ from job to job), by their command line's digest.
    std::string options;
    if (cs)
      for (const auto& a : backends::harness_benchmark_args(c.spec, *cs)) options += a + "\n";
    const nlohmann::json key = {{"problem", backends::reference_problem(c.spec.kernel)},
                                {"version", c.spec.kernel.problem_version},
                                {"case", case_name},
                                {"gpu_class", o_.gpu_class},
                                {"torch", "simulated"},
                                {"driver", "simulated"},
                                {"options", sha256_hex(options).substr(0, 16)}};
    double slower = 0;
    if (auto it = s.slower_pct.find(o_.gpu_class); it != s.slower_pct.end()) slower = it->second;
    nlohmann::json out = nlohmann::json::array();
    for (const char* b : {kBaselineEager, kBaselineCompile}) {
      const bool eager = std::string(b) == kBaselineEager;
      const double median = (eager ? s.eager_us.value_or(1.3 * s.time_us) : s.compile_us.value_or(1.05 * s.time_us)) *
                            (1 + slower / 100);
      const std::string id = key.dump() + b;
      const bool cached = timed_.count(id) > 0;
      if (!cached) {
        std::seed_seq seq{static_cast<std::uint64_t>(std::hash<std::string>{}(id))};
        std::mt19937_64 rng(seq);
        timed_[id] = draw(rng, median, s.noise_pct, std::max(10, c.spec.benchmark.min_samples));
      }
      backends::ReferenceTiming t;
      t.baseline = b;
      t.key = key;
      t.samples_us = timed_[id];
      t.note = "simulated: no reference was recorded or timed";
      BaselineComparison cmp = backends::compare_with_reference(kernel_us, t, case_name, cached);
      cmp.simulated = true;
      out.push_back(to_json(cmp));
    }
    return out;
  }

  // The simulated kernel's true median on this agent's GPU class.
  double center_us(const SimulationSpec& s) const {
    double slower = 0;
    if (auto it = s.slower_pct.find(o_.gpu_class); it != s.slower_pct.end()) slower = it->second;
    double center = s.time_us * (1 + slower / 100);
    if (s.fail_stage == "performance") center *= 1.10;
    return center;
  }

  static std::vector<double> draw(std::mt19937_64& rng, double center, double noise_pct, int n) {
    std::normal_distribution<double> noise(0.0, noise_pct / 100);
    std::vector<double> out;
    for (int i = 0; i < n; ++i) out.push_back(std::max(0.01, center * (1 + noise(rng))));
    return out;
  }

  // Same job content and attempt -> same numbers; a retry gets fresh noise.
  static std::mt19937_64 rng_for(const StageContext& c, std::uint64_t salt) {
    std::string key = job_content_hash(c.spec, c.bundle_hash) + "#" + std::to_string(c.attempt);
    std::seed_seq seq{static_cast<std::uint64_t>(std::hash<std::string>{}(key)), salt};
    return std::mt19937_64(seq);
  }

  SimulatedGpuOptions o_;
  // The references this simulated agent has "timed" (key and baseline -> samples): its cache.
  std::map<std::string, std::vector<double>> timed_;
};

}  // namespace

BackendPtr make_simulated_backend(const SimulatedGpuOptions& o) {
  return std::make_unique<SimulatedBackend>(o);
}

}  // namespace kfleet::agent
