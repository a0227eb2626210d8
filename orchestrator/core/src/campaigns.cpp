// Campaigns (seeds 001, 002): the jobs of one campaign form a lineage. A child that passes
// every gate and improves on what it is compared with is a kept win (the newest one is the
// current best); any other finished child is a rejection, with the verdict's reason.
#include <algorithm>

#include "kfleet/common/versus.hpp"
#include "kfleet/core/fleet.hpp"

namespace kfleet::core {

namespace {

// A change without its file diffs: what a list of tries needs to say what each one was.
nlohmann::json change_brief(const nlohmann::json& change) {
  if (!change.is_object()) return nullptr;
  nlohmann::json brief = change;
  if (brief.contains("files") && brief["files"].is_array())
    for (auto& f : brief["files"]) f.erase("diff");
  return brief;
}

nlohmann::json entry(const store::JobRecord& j) {
  nlohmann::json e = {{"job_id", j.id},          {"name", j.name},
                      {"parent", j.parent},       {"state", to_string(j.state)},
                      {"simulated", j.simulated}, {"created", format_iso8601(j.created_ms)}};
  if (j.verdict) {
    const auto& v = *j.verdict;
    e["gate"] = v.gate;
    e["perf"] = v.perf;
    e["reason"] = v.reason;
    if (v.median_us) e["median_us"] = *v.median_us;
    if (v.baseline_us) e["baseline_us"] = *v.baseline_us;
    if (v.delta_pct) e["delta_pct"] = *v.delta_pct;
    if (v.ci_low_pct) e["ci_low_pct"] = *v.ci_low_pct;
    if (v.ci_high_pct) e["ci_high_pct"] = *v.ci_high_pct;
    e["simulated"] = j.simulated || v.simulated;
    if (!v.versus.empty()) {
      e["versus"] = nlohmann::json::array();
      for (const auto& c : v.versus) e["versus"].push_back(to_json(c));
    }
  } else {
    e["reason"] = j.state_reason;
  }
  return e;
}

}  // namespace

Result<nlohmann::json> campaign_view(store::Store& st, const std::string& name) {
  store::JobFilter f;
  f.campaign = name;
  f.limit = 10000;
  auto jobs = st.list_jobs(f);
  if (jobs.empty())
    return make_error(Errc::not_found, "no campaign '" + name + "': no job names it with campaign:");
  std::reverse(jobs.begin(), jobs.end());  // oldest first: the log reads in the order it happened
  // fast_p over the campaign's finished kernels on a problem, whatever became of them.
  std::vector<VersusKernel> judged;
  for (const auto& j : jobs) {
    if (!is_problem_kernel(j.spec) || !is_terminal(j.state) || j.state == JobState::cancelled) continue;
    VersusKernel k;
    k.correct = j.verdict && j.state != JobState::error && verdict_correct(*j.verdict);
    k.simulated = j.simulated || (j.verdict && j.verdict->simulated);
    if (j.verdict) k.versus = j.verdict->versus;
    judged.push_back(std::move(k));
  }
  nlohmann::json kept = nlohmann::json::array(), rejected = nlohmann::json::array(),
                 pending = nlohmann::json::array(), roots = nlohmann::json::array();
  nlohmann::json best = nullptr;
  for (const auto& j : jobs) {
    auto e = entry(j);
    if (auto o = st.job_origin(j.id); o && o->parent_job_id) {
      e["parent_job_id"] = o->parent_job_id;
      e["change"] = (o->change.is_object() ? o->change.value("summary", std::string()) : std::string());
    }
    if (!is_terminal(j.state)) {
      pending.push_back(e);
      continue;
    }
    const bool passed = j.state == JobState::passed;
    if (j.parent.empty()) {
      // A root is where the lineage starts; it is the best until a child beats it.
      roots.push_back(e);
      if (passed && best.is_null()) best = e;
      continue;
    }
    if (passed && j.verdict && j.verdict->perf == "improved") {
      kept.push_back(e);
      best = e;
      continue;
    }
    if (passed) {
      const std::string perf = j.verdict ? j.verdict->perf : "";
      e["reason"] = (perf.empty() ? std::string("no comparison") : perf) + ", not an improvement: " +
                    e.value("reason", std::string());
    } else if (j.state == JobState::rejected && j.verdict && !j.verdict->gate.empty()) {
      e["reason"] = "rejected at " + j.verdict->gate + ": " + e.value("reason", std::string());
    }
    rejected.push_back(e);
  }
  // The no-repeat map (seed 002): every change already tried from the current best, with what
  // became of it, so the next try is a different one.
  nlohmann::json no_repeat = nlohmann::json::array();
  if (best.is_object()) {
    for (const auto& o : st.children_of(best.value("job_id", std::int64_t{0}))) {
      auto child = st.get_job(o.job_id);
      if (!child) continue;
      auto e = entry(*child);
      e["change"] = change_brief(o.change);
      e["change_summary"] = (o.change.is_object() ? o.change.value("summary", std::string()) : std::string());
      no_repeat.push_back(e);
    }
  }
  return nlohmann::json{{"name", name},          {"jobs", jobs.size()},
                        {"current_best", best},  {"roots", roots},
                        {"kept_wins", kept},     {"rejections", rejected},
                        {"pending", pending},    {"no_repeat", no_repeat},
                        {"fast_p", fast_p_json(judged, "finished jobs of the campaign on a problem's kernel "
                                                       "(passed, rejected or error; not cancelled)")}};
}

}  // namespace kfleet::core
