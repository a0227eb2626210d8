// JobSpec <-> JSON (the wire and store form) and the content hash used by the no-repeat map.
#include "kfleet/common/jobspec.hpp"

#include <cctype>
#include "kfleet/common/sha256.hpp"

namespace kfleet {

std::string SpecIssue::to_string() const {
  std::string s = file.empty() ? "<job>" : file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
  s += ": ";
  if (!field.empty()) s += field + ": ";
  return s + message;
}

std::string SpecParse::error_text() const {
  std::string s;
  for (const auto& i : issues) s += i.to_string() + "\n";
  return s;
}

bool ResourceBudget::empty() const {
  return !max_registers && !max_shared_bytes && !max_spill_bytes && !max_stack_bytes &&
         !max_vgprs && !max_sgprs && !max_lds_bytes && !max_scratch_bytes;
}

std::optional<std::int64_t> Shape::get(const std::string& k) const {
  for (const auto& [name, v] : dims) {
    if (name == k) return v;
  }
  return std::nullopt;
}

namespace {

nlohmann::json kernel_json(const KernelSpec& k) {
  nlohmann::json j = {{"language", k.language}, {"sources", k.sources}};
  if (!k.problem.empty()) j["problem"] = problem_ref(k);
  if (!k.family.empty() || k.problem.empty()) j["family"] = k.family;
  if (!k.entry.empty()) j["entry"] = k.entry;
  if (!k.defines.empty()) {
    nlohmann::json d = nlohmann::json::object();
    for (const auto& [name, v] : k.defines) d[name] = v;
    j["defines"] = d;
  }
  if (!k.flags.empty()) j["flags"] = k.flags;
  if (!k.params.empty()) j["params"] = k.params;
  if (k.steps) {
    nlohmann::json s = {{"test", k.steps->test}, {"bench", k.steps->bench}};
    if (!k.steps->build.empty()) s["build"] = k.steps->build;
    if (!k.steps->profile.empty()) s["profile"] = k.steps->profile;
    j["steps"] = s;
  }
  return j;
}

nlohmann::json compare_json(const CompareTo& c) {
  switch (c.kind) {
    case CompareTo::Kind::parent: return "parent";
    case CompareTo::Kind::baseline: return "baseline";
    case CompareTo::Kind::job: return {{"job", c.job_id}};
    case CompareTo::Kind::value: {
      nlohmann::json j = {{"value_us", c.value_us}};
      if (!c.label.empty()) j["label"] = c.label;
      return j;
    }
    case CompareTo::Kind::reference: return {{"reference", c.label}};
    case CompareTo::Kind::none: break;
  }
  return nullptr;
}

nlohmann::json gates_json(const GatesSpec& g) {
  nlohmann::json j = nlohmann::json::object();
  if (g.resources) {
    nlohmann::json r = nlohmann::json::object();
    const std::pair<const char*, const std::optional<std::int64_t>*> fields[] = {
        {"max_registers", &g.resources->max_registers},
        {"max_shared_bytes", &g.resources->max_shared_bytes},
        {"max_spill_bytes", &g.resources->max_spill_bytes},
        {"max_stack_bytes", &g.resources->max_stack_bytes},
        {"max_vgprs", &g.resources->max_vgprs},
        {"max_sgprs", &g.resources->max_sgprs},
        {"max_lds_bytes", &g.resources->max_lds_bytes},
        {"max_scratch_bytes", &g.resources->max_scratch_bytes}};
    for (const auto& [k, v] : fields) {
      if (*v) r[k] = **v;
    }
    j["resources"] = r;
  }
  if (g.correctness) {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& c : g.correctness->cases) {
      nlohmann::json shape = nlohmann::json::object();
      for (const auto& [k, v] : c.shape.dims) shape[k] = v;
      nlohmann::json cj = {{"name", c.name}, {"seeds", c.seeds}};
      if (!c.shape.dims.empty()) cj["shape"] = shape;  // a generic problem's case has none
      if (c.causal) cj["causal"] = true;
      cases.push_back(cj);
    }
    nlohmann::json cj = {{"cases", cases}};
    if (!g.correctness->dtype.is_null()) cj["dtype"] = g.correctness->dtype;
    const auto& t = g.correctness->tolerance;
    if (!t.empty()) {
      nlohmann::json tj = nlohmann::json::object();
      if (t.atol) tj["atol"] = *t.atol;
      if (t.rtol) tj["rtol"] = *t.rtol;
      if (t.max_abs) tj["max_abs"] = *t.max_abs;
      if (t.rel_l2) tj["rel_l2"] = *t.rel_l2;
      cj["tolerance"] = tj;
    }
    j["correctness"] = cj;
  }
  if (g.performance) {
    nlohmann::json p = {{"case", g.performance->case_name},
                        {"metric", g.performance->metric},
                        {"threshold_pct", g.performance->threshold_pct}};
    if (g.performance->compare_to.kind != CompareTo::Kind::none) {
      p["compare_to"] = compare_json(g.performance->compare_to);
    }
    j["performance"] = p;
  }
  return j;
}

nlohmann::json benchmark_json(const BenchmarkSpec& b) {
  nlohmann::json j = {{"min_samples", b.min_samples}, {"max_noise_pct", b.max_noise_pct},
                      {"max_time_s", b.max_time_s},   {"l2_flush", b.l2_flush},
                      {"warmup_max_s", b.warmup_max_s}, {"max_rounds", b.max_rounds}};
  // Written only when set, so jobs that do not use them keep their content hashes.
  if (b.interleave) j["interleave"] = true;
  if (b.min_rounds) j["min_rounds"] = b.min_rounds;
  if (b.processes != 1) j["processes"] = b.processes;
  if (b.host_exclusive) j["host_exclusive"] = *b.host_exclusive;
  return j;
}

nlohmann::json simulate_json(const SimulationSpec& s) {
  nlohmann::json j = {{"time_us", s.time_us}, {"noise_pct", s.noise_pct}, {"stage_ms", s.stage_ms}};
  if (!s.slower_pct.empty()) j["slower_pct"] = s.slower_pct;
  if (!s.fail_stage.empty()) j["fail_stage"] = s.fail_stage;
  if (!s.fail_reason.empty()) j["fail_reason"] = s.fail_reason;
  if (s.eager_us) j["eager_us"] = *s.eager_us;
  if (s.compile_us) j["compile_us"] = *s.compile_us;
  return j;
}

}  // namespace

nlohmann::json to_json(const JobSpec& s) {
  nlohmann::json j = {{"name", s.name},
                      {"priority", s.priority},
                      {"kernel", kernel_json(s.kernel)},
                      {"benchmark", benchmark_json(s.benchmark)},
                      {"max_attempts", s.max_attempts},
                      {"timeout_s", s.timeout_s}};
  if (!s.campaign.empty()) j["campaign"] = s.campaign;
  if (!s.parent.empty()) j["parent"] = s.parent;
  nlohmann::json target = {{"gpu", s.target.gpu}};
  if (!s.target.regions.empty()) target["regions"] = s.target.regions;
  j["target"] = target;
  const auto gates = gates_json(s.gates);
  if (!gates.empty()) j["gates"] = gates;
  if (s.profile) {
    j["profile"] = {{"tool", s.profile->tool}, {"metrics", s.profile->metrics}, {"when", s.profile->when}};
  }
  if (s.simulate) j["simulate"] = simulate_json(*s.simulate);
  return j;
}

Result<JobSpec> job_spec_from_json(const nlohmann::json& j) {
  // JSON is YAML, so the wire form goes through the same strict parser as job files: one set of
  // rules, and a hand-edited JSON job gets the same messages.
  if (!j.is_object()) return make_error(Errc::invalid_argument, "a job spec must be a JSON object");
  auto parsed = parse_job_spec(j.dump(), "<json>");
  if (!parsed.ok()) return make_error(Errc::invalid_argument, parsed.error_text());
  return std::move(*parsed.spec);
}

std::string job_content_hash(const JobSpec& s, const std::string& bundle_hash) {
  // nlohmann::json objects keep keys sorted, so dump() is canonical for equal specs.
  nlohmann::json canon = {{"kernel", kernel_json(s.kernel)},
                          {"gpu", s.target.gpu},
                          {"gates", gates_json(s.gates)},
                          {"benchmark", benchmark_json(s.benchmark)},
                          {"simulate", s.simulate ? simulate_json(*s.simulate) : nlohmann::json()},
                          {"bundle", bundle_hash}};
  return "sha256:" + sha256_hex(canon.dump());
}

}  // namespace kfleet

namespace kfleet {

bool target_is_apu(const std::string& gpu) {
  std::string g;
  for (char c : gpu) g += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return g == "gfx1151";
}

bool host_exclusive(const JobSpec& s) {
  return s.benchmark.host_exclusive.value_or(target_is_apu(s.target.gpu));
}

}  // namespace kfleet
