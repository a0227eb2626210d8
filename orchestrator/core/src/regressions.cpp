// Fleet regression runs: one job per (suite job, GPU class), forced past the no-repeat map,
// each compared with its baseline; the matrix is recomputed from the jobs' verdicts, with
// change-point detection over the kernel's earlier regression results on that class.
#include <yaml-cpp/yaml.h>

#include <set>

#include "kfleet/common/changepoint.hpp"
#include "kfleet/common/suite.hpp"
#include "kfleet/common/versus.hpp"
#include "kfleet/core/fleet.hpp"

namespace kfleet::core {

namespace {

// The job YAML with its target rewritten to one class (and the suite's regions) and its
// performance gate pointed at the stored baseline.
Result<std::string> retarget(const std::string& yaml, const SuiteSpec& s, const std::string& cls,
                             const std::string& file) {
  try {
    YAML::Node root = YAML::Load(yaml);
    if (!root.IsMap()) return make_error(Errc::invalid_argument, file + ": not a job (a YAML map)");
    if (!root["target"] || !root["target"].IsMap()) root["target"] = YAML::Node(YAML::NodeType::Map);
    root["target"]["gpu"] = cls;
    if (!s.regions.empty()) root["target"]["regions"] = s.regions;
    // A suite job compares with its kernel's baseline, not with a campaign parent.
    if (root["parent"]) root.remove("parent");
    if (root["gates"] && root["gates"]["performance"] && root["gates"]["performance"].IsMap())
      root["gates"]["performance"]["compare_to"] = s.compare_to;
    YAML::Emitter out;
    out << root;
    return std::string(out.c_str());
  } catch (const YAML::Exception& e) {
    return make_error(Errc::invalid_argument, file + ": " + e.what());
  }
}

std::vector<std::string> fleet_classes(ControlPlane& cp) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  auto add = [&](const std::string& c) {
    if (!c.empty() && seen.insert(c).second) out.push_back(c);
  };
  for (const auto& a : cp.store().list_agents())
    if (a.state != store::AgentState::retired)
      for (const auto& g : a.gpus) add(g.gpu_class);
  if (cp.provisioner().can_grow())
    for (const auto& c : cp.provisioner().gpu_classes()) add(c);
  return out;
}

bool cell_done(const std::string& verdict) { return verdict != "pending"; }

// One matrix cell from the job's current state and verdict.
nlohmann::json cell_for(ControlPlane& cp, const store::RegressionJob& rj,
                        const std::vector<store::RegressionRecord>& earlier) {
  nlohmann::json c = {{"kernel", rj.kernel},     {"gpu_class", rj.gpu_class},
                      {"job_id", rj.job_id},      {"delta_pct", nullptr},
                      {"ci_low_pct", nullptr},    {"ci_high_pct", nullptr},
                      {"median_us", nullptr},     {"baseline_us", nullptr},
                      {"verdict", "pending"},     {"reason", ""},
                      {"simulated", false},       {"change_point", nullptr}};
  auto job = cp.store().get_job(rj.job_id);
  if (!job) {
    c["verdict"] = "error";
    c["reason"] = "job " + std::to_string(rj.job_id) + " is gone";
    return c;
  }
  c["simulated"] = job->simulated;
  // A problem's kernel is counted by fast_p, with its comparisons with kfleet's PyTorch
  // references (regression_view).
  c["problem_kernel"] = is_problem_kernel(job->spec);
  if (!is_terminal(job->state)) {
    c["reason"] = job->state_reason.empty() ? to_string(job->state) : job->state_reason;
    return c;
  }
  const auto& v = job->verdict;
  if (!v || job->state == JobState::error || job->state == JobState::cancelled) {
    c["verdict"] = "error";
    c["reason"] = v ? v->reason : job->state_reason;
    return c;
  }
  c["reason"] = v->reason;
  c["simulated"] = job->simulated || v->simulated;
  c["correct"] = job->state != JobState::error && verdict_correct(*v);
  if (!v->versus.empty()) {
    c["versus"] = nlohmann::json::array();
    for (const auto& x : v->versus) c["versus"].push_back(to_json(x));
  }
  if (v->median_us) c["median_us"] = *v->median_us;
  if (v->baseline_us) c["baseline_us"] = *v->baseline_us;
  if (v->delta_pct) c["delta_pct"] = *v->delta_pct;
  if (v->ci_low_pct) c["ci_low_pct"] = *v->ci_low_pct;
  if (v->ci_high_pct) c["ci_high_pct"] = *v->ci_high_pct;
  if (job->state == JobState::rejected && v->gate != "performance") c["verdict"] = "error";
  else if (v->perf.empty()) c["verdict"] = "missing baseline";
  else c["verdict"] = v->perf;
  // History: this kernel's medians on this class in earlier regression runs, then this one.
  if (v->median_us) {
    std::vector<double> series;
    for (auto it = earlier.rbegin(); it != earlier.rend(); ++it)
      for (const auto& e : it->cells)
        if (e.value("kernel", "") == rj.kernel && e.value("gpu_class", "") == rj.gpu_class &&
            e.contains("median_us") && e["median_us"].is_number())
          series.push_back(e["median_us"].get<double>());
    series.push_back(*v->median_us);
    auto cps = stats::detect_change_points(series);
    c["history"] = series.size();
    if (!cps.empty()) {
      const auto& last = cps.back();
      c["change_point"] = {{"runs_ago", series.size() - last.index - 1},
                           {"shift_pct", last.shift_pct},
                           {"p_value", last.p_value}};
    }
  }
  return c;
}

}  // namespace

nlohmann::json regression_fast_p(const nlohmann::json& cells) {
  std::vector<VersusKernel> kernels;
  if (cells.is_array())
    for (const auto& c : cells) {
      if (!c.is_object() || !c.value("problem_kernel", false) || c.value("verdict", "") == "pending")
        continue;
      VersusKernel k;
      k.correct = c.value("correct", false);
      k.simulated = c.value("simulated", false);
      if (c.contains("versus") && c["versus"].is_array())
        for (const auto& x : c["versus"]) k.versus.push_back(baseline_comparison_from_json(x));
      kernels.push_back(std::move(k));
    }
  return fast_p_json(kernels, "finished cells (kernel x GPU class) on a problem's kernel");
}

Result<store::RegressionRecord> start_regression(ControlPlane& cp, const nlohmann::json& req,
                                                 const std::string& submitted_by) {
  if (!req.is_object() || !req.contains("suite_yaml") || !req["suite_yaml"].is_string() ||
      !req.contains("jobs") || !req["jobs"].is_array())
    return make_error(Errc::invalid_argument,
                      "a regression run needs {suite_yaml, jobs: [{source_name, spec_yaml, bundle}]} "
                      "(kfleet regress SUITE.yaml builds it)");
  const std::string source = req.value("source_name", std::string("suite.yaml"));
  auto parsed = parse_suite(req["suite_yaml"].get<std::string>(), source);
  if (!parsed.ok()) return make_error(Errc::invalid_argument, parsed.error_text());
  const SuiteSpec& suite = *parsed.suite;
  if (req["jobs"].size() != suite.jobs.size())
    return make_error(Errc::invalid_argument,
                      source + " names " + std::to_string(suite.jobs.size()) + " jobs but the request carries " +
                          std::to_string(req["jobs"].size()));
  std::vector<std::string> classes = suite.gpus.empty() ? fleet_classes(cp) : suite.gpus;
  if (classes.empty())
    return make_error(Errc::invalid_argument,
                      "the fleet has no GPU class yet (no agent enrolled, no provisioner class); "
                      "name them in the suite: on: {gpus: [L4, H100]}");
  // Validate every job for every class before creating anything: all or nothing.
  struct Planned { SubmitRequest req; std::string cls; };
  std::vector<Planned> planned;
  for (const auto& j : req["jobs"]) {
    const std::string name = j.value("source_name", std::string("job.yaml"));
    if (!j.contains("spec_yaml") || !j["spec_yaml"].is_string() || !j.contains("bundle"))
      return make_error(Errc::invalid_argument, name + ": spec_yaml and bundle are required");
    for (const auto& cls : classes) {
      auto y = retarget(j["spec_yaml"].get<std::string>(), suite, cls, name);
      if (!y) return y.error();
      // Checked as a submission is (against kfleetd's problem library): all or nothing.
      auto check = parse_job_spec(*y, name, cp.config().problems.get());
      if (!check.ok()) return make_error(Errc::invalid_argument, check.error_text());
      if (!check.spec->kernel.problem.empty() && !cp.config().problems)
        return make_error(Errc::invalid_argument,
                          name + ": kernel.problem: this kfleetd has no problem library "
                                 "(kfleetd --problems-dir): it cannot run a job on problem " +
                              problem_ref(check.spec->kernel));
      SubmitRequest sr;
      sr.spec_yaml = *y;
      sr.source_name = name;
      sr.bundle = j["bundle"];
      sr.force = true;  // a regression run measures again: the no-repeat map must not answer
      sr.submitted_by = submitted_by;
      planned.push_back({std::move(sr), cls});
    }
  }
  auto reg = cp.store().create_regression(suite.name, to_json(suite), cp.clock().now_ms());
  if (!reg) return reg;
  for (auto& p : planned) {
    auto out = cp.submit(p.req);
    if (auto* err = std::get_if<SubmitError>(&out)) return err->error;
    const auto& job = std::get<SubmitResult>(out).job;
    auto link = cp.store().add_regression_job({reg->id, job.id, kernel_key(job), p.cls});
    if (!link) return link.error();
  }
  auto view = regression_view(cp, reg->id);
  if (!view) return view.error();
  return *cp.store().get_regression(reg->id);
}

void refresh_regression(ControlPlane& cp, std::int64_t id) { (void)regression_view(cp, id); }

nlohmann::json regression_summary(const store::RegressionRecord& r) {
  int regressed = 0;
  for (const auto& c : r.cells) regressed += c.value("verdict", "") == "regressed";
  return {{"id", r.id},
          {"suite", r.suite},
          {"created", format_iso8601(r.created_ms)},
          {"updated", format_iso8601(r.updated_ms)},
          {"state", r.state},
          {"regressed", regressed},
          {"cell_count", r.cells.size()}};
}

Result<nlohmann::json> regression_view(ControlPlane& cp, std::int64_t id) {
  auto& st = cp.store();
  auto reg = st.get_regression(id);
  if (!reg) return make_error(Errc::not_found, "no regression run " + std::to_string(id));
  std::vector<store::RegressionRecord> earlier;
  for (auto& r : st.list_regressions(50))
    if (r.id < id && r.suite == reg->suite) earlier.push_back(std::move(r));
  nlohmann::json cells = nlohmann::json::array();
  bool done = true;
  for (const auto& rj : st.regression_jobs(id)) {
    auto c = cell_for(cp, rj, earlier);
    done = done && cell_done(c["verdict"].get<std::string>());
    cells.push_back(std::move(c));
  }
  const std::string state = done ? "done" : "running";
  if (state != reg->state || cells != reg->cells) {
    if (cp.config().read_only) {
      // A standby shows what the leader will store on its next look, and writes nothing.
      reg->state = state;
      reg->cells = cells;
    } else if (auto up = st.update_regression(id, state, cells, cp.clock().now_ms())) {
      reg = *up;
    }
  }
  nlohmann::json out = regression_summary(*reg);
  out["cells"] = reg->cells;
  out["spec"] = reg->spec;
  out["fast_p"] = regression_fast_p(reg->cells);
  return out;
}

}  // namespace kfleet::core
