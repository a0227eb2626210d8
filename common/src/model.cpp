#include "kfleet/common/model.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace kfleet {
namespace {

struct StateName { JobState s; const char* n; };
constexpr StateName kStates[] = {
    {JobState::queued, "queued"},       {JobState::waiting_capacity, "waiting_capacity"},
    {JobState::leased, "leased"},       {JobState::building, "building"},
    {JobState::gating, "gating"},       {JobState::benchmarking, "benchmarking"},
    {JobState::passed, "passed"},       {JobState::rejected, "rejected"},
    {JobState::error, "error"},         {JobState::cancelled, "cancelled"},
};
struct OutcomeName { RunOutcome o; const char* n; };
constexpr OutcomeName kOutcomes[] = {
    {RunOutcome::running, "running"}, {RunOutcome::passed, "passed"},
    {RunOutcome::rejected, "rejected"}, {RunOutcome::error, "error"},
    {RunOutcome::lost, "lost"},         {RunOutcome::cancelled, "cancelled"},
};

template <class T>
void opt_to(nlohmann::json& j, const char* k, const std::optional<T>& v) {
  if (v) j[k] = *v;
}
template <class T>
void opt_from(const nlohmann::json& j, const char* k, std::optional<T>& v) {
  if (j.contains(k) && !j[k].is_null()) v = j[k].get<T>();
}

}  // namespace

const char* to_string(JobState s) {
  for (auto& e : kStates) if (e.s == s) return e.n;
  return "error";
}
std::optional<JobState> job_state_from_string(const std::string& s) {
  for (auto& e : kStates) if (s == e.n) return e.s;
  return std::nullopt;
}
bool is_terminal(JobState s) {
  return s == JobState::passed || s == JobState::rejected || s == JobState::error ||
         s == JobState::cancelled;
}
bool is_active(JobState s) {
  return s == JobState::leased || s == JobState::building || s == JobState::gating ||
         s == JobState::benchmarking;
}

const char* to_string(RunOutcome o) {
  for (auto& e : kOutcomes) if (e.o == o) return e.n;
  return "error";
}
std::optional<RunOutcome> run_outcome_from_string(const std::string& s) {
  for (auto& e : kOutcomes) if (s == e.n) return e.o;
  return std::nullopt;
}

nlohmann::json to_json(const BaselineComparison& c) {
  nlohmann::json j = {{"baseline", c.baseline}, {"case", c.case_name}, {"key", c.key},
                      {"cached", c.cached}};
  opt_to(j, "speedup", c.speedup);
  opt_to(j, "ci_low", c.ci_low);
  opt_to(j, "ci_high", c.ci_high);
  opt_to(j, "reference_us", c.reference_us);
  if (!c.note.empty()) j["note"] = c.note;
  if (c.simulated) j["simulated"] = true;
  return j;
}

BaselineComparison baseline_comparison_from_json(const nlohmann::json& j) {
  // Read member by member, each of its expected type: a field of another type is left unset
  // rather than failing the whole verdict it arrived with.
  BaselineComparison c;
  if (!j.is_object()) return c;
  auto str = [&](const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  auto num = [&](const char* k, std::optional<double>& v) {
    if (j.contains(k) && j[k].is_number()) v = j[k].get<double>();
  };
  auto flag = [&](const char* k) { return j.contains(k) && j[k].is_boolean() && j[k].get<bool>(); };
  c.baseline = str("baseline");
  c.case_name = str("case");
  if (j.contains("key") && j["key"].is_object()) c.key = j["key"];
  c.cached = flag("cached");
  c.note = str("note");
  c.simulated = flag("simulated");
  num("speedup", c.speedup);
  num("ci_low", c.ci_low);
  num("ci_high", c.ci_high);
  num("reference_us", c.reference_us);
  return c;
}

nlohmann::json to_json(const Verdict& v) {
  nlohmann::json j = {{"outcome", to_string(v.outcome)}, {"gate", v.gate},
                      {"reason", v.reason},              {"perf", v.perf},
                      {"simulated", v.simulated},        {"metrics", v.metrics}};
  if (v.unsandboxed) j["unsandboxed"] = true;
  if (v.self_reported) j["self_reported"] = true;
  opt_to(j, "delta_pct", v.delta_pct);
  opt_to(j, "ci_low_pct", v.ci_low_pct);
  opt_to(j, "ci_high_pct", v.ci_high_pct);
  opt_to(j, "median_us", v.median_us);
  opt_to(j, "baseline_us", v.baseline_us);
  if (!v.versus.empty()) {
    j["versus"] = nlohmann::json::array();
    for (const auto& c : v.versus) j["versus"].push_back(to_json(c));
  }
  return j;
}

Verdict verdict_from_json(const nlohmann::json& j) {
  Verdict v;
  if (!j.is_object()) return v;
  v.outcome = run_outcome_from_string(j.value("outcome", "error")).value_or(RunOutcome::error);
  v.gate = j.value("gate", "");
  v.reason = j.value("reason", "");
  v.perf = j.value("perf", "");
  v.simulated = j.value("simulated", false);
  v.unsandboxed = j.value("unsandboxed", false);
  v.self_reported = j.value("self_reported", false);
  if (j.contains("metrics") && j["metrics"].is_object()) v.metrics = j["metrics"];
  opt_from(j, "delta_pct", v.delta_pct);
  opt_from(j, "ci_low_pct", v.ci_low_pct);
  opt_from(j, "ci_high_pct", v.ci_high_pct);
  opt_from(j, "median_us", v.median_us);
  opt_from(j, "baseline_us", v.baseline_us);
  if (j.contains("versus") && j["versus"].is_array())
    for (const auto& c : j["versus"]) v.versus.push_back(baseline_comparison_from_json(c));
  return v;
}

nlohmann::json to_json(const GpuInfo& g) {
  return {{"gpu_class", g.gpu_class}, {"arch", g.arch},           {"name", g.name},
          {"vendor", g.vendor},       {"memory_bytes", g.memory_bytes},
          {"l2_bytes", g.l2_bytes},   {"driver", g.driver},       {"simulated", g.simulated},
          {"extra", g.extra}};
}

GpuInfo gpu_info_from_json(const nlohmann::json& j) {
  GpuInfo g;
  if (!j.is_object()) return g;
  g.gpu_class = j.value("gpu_class", "");
  g.arch = j.value("arch", "");
  g.name = j.value("name", "");
  g.vendor = j.value("vendor", "");
  g.memory_bytes = j.value("memory_bytes", std::int64_t{0});
  g.l2_bytes = j.value("l2_bytes", std::int64_t{0});
  g.driver = j.value("driver", "");
  g.simulated = j.value("simulated", false);
  if (j.contains("extra") && j["extra"].is_object()) g.extra = j["extra"];
  return g;
}

namespace {
// a == b ignoring ASCII case, without copying either (a scheduling pass asks this of every
// agent for each kind of queued job).
// ASCII case folding, inline: GPU classes and archs are ASCII names, and the scheduler compares
// them for every agent of the fleet in each pass (std::tolower is a call into the locale).
constexpr char fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && fold(a[i]) != fold(b[i])) return false;
  return true;
}
}  // namespace

bool gpu_matches(const std::string& wanted, const GpuInfo& gpu) {
  if (wanted.empty()) return false;
  if (iequal(wanted, gpu.gpu_class) || iequal(wanted, gpu.arch)) return true;
  // "sm_90" is served by an "sm_90a" agent (the arch-specific variant is a superset).
  const std::string& a = gpu.arch;
  return a.size() == wanted.size() + 1 && (a.back() == 'a' || a.back() == 'A') &&
         iequal(std::string_view(a).substr(0, wanted.size()), wanted);
}

}  // namespace kfleet
