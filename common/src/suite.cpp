// The suite YAML parser and the request that carries a suite (and its jobs) to kfleetd.
#include "kfleet/common/suite.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kfleet/common/bundle.hpp"

namespace kfleet {

namespace {

struct Reader {
  std::string file;
  std::vector<SpecIssue> issues;
  void add(const YAML::Node& n, const std::string& field, const std::string& msg) {
    const auto m = n.Mark();
    issues.push_back({file, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0, field,
                      msg});
  }
  std::optional<std::string> str(const YAML::Node& n, const std::string& field) {
    if (!n.IsScalar()) {
      add(n, field, "must be a string");
      return std::nullopt;
    }
    return n.as<std::string>();
  }
  // A string or a list of strings; "any" (alone) means empty.
  std::vector<std::string> list(const YAML::Node& n, const std::string& field, bool any_ok) {
    std::vector<std::string> out;
    if (n.IsScalar()) {
      const auto v = n.as<std::string>();
      if (any_ok && v == "any") return out;
      out.push_back(v);
    } else if (n.IsSequence()) {
      for (std::size_t i = 0; i < n.size(); ++i)
        if (auto s = str(n[i], field + "[" + std::to_string(i) + "]")) out.push_back(*s);
    } else {
      add(n, field, any_ok ? "must be a list of names or 'any'" : "must be a list of names");
    }
    return out;
  }
};

bool valid_cron_shape(const std::string& s) {
  std::istringstream in(s);
  int fields = 0;
  for (std::string f; in >> f;) ++fields;
  return fields == 5;
}

}  // namespace

std::string SuiteParse::error_text() const {
  std::string out;
  for (const auto& i : issues) out += i.to_string() + "\n";
  return out;
}

SuiteParse parse_suite(const std::string& yaml_text, const std::string& file) {
  SuiteParse out;
  Reader r{file, {}};
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    out.issues.push_back({file, e.mark.line + 1, e.mark.column + 1, "", "YAML syntax: " + e.msg});
    return out;
  }
  if (!root.IsMap()) {
    out.issues.push_back({file, 1, 1, "", "a suite must be a YAML map with suite: and jobs:"});
    return out;
  }
  SuiteSpec s;
  static const std::set<std::string> known = {"suite", "jobs", "on", "compare_to", "schedule"};
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    if (!known.count(key))
      r.add(kv.first, key, "unknown key (allowed: suite, jobs, on, compare_to, schedule)");
  }
  if (!root["suite"]) r.add(root, "suite", "missing required field: the suite's name");
  else if (auto v = r.str(root["suite"], "suite")) s.name = *v;
  if (!root["jobs"]) r.add(root, "jobs", "missing required field: the job files to run");
  else s.jobs = r.list(root["jobs"], "jobs", false);
  if (root["jobs"] && s.jobs.empty() && r.issues.empty())
    r.add(root["jobs"], "jobs", "names no job file");
  if (auto on = root["on"]) {
    if (!on.IsMap()) {
      r.add(on, "on", "must be a map {gpus: [...], regions: any|[...]}");
    } else {
      for (const auto& kv : on) {
        const auto key = kv.first.as<std::string>();
        if (key != "gpus" && key != "regions")
          r.add(kv.first, "on." + key, "unknown key (allowed: gpus, regions)");
      }
      if (on["gpus"]) s.gpus = r.list(on["gpus"], "on.gpus", true);
      if (on["regions"]) s.regions = r.list(on["regions"], "on.regions", true);
    }
  }
  if (auto c = root["compare_to"]) {
    if (auto v = r.str(c, "compare_to")) {
      if (*v != "baseline") r.add(c, "compare_to", "must be 'baseline' (the stored baseline per kernel, case and GPU class)");
      s.compare_to = *v;
    }
  }
  if (auto c = root["schedule"]) {
    if (auto v = r.str(c, "schedule")) {
      if (!valid_cron_shape(*v))
        r.add(c, "schedule", "must be a 5-field cron expression (minute hour day month weekday), e.g. \"0 3 * * *\"");
      s.schedule = *v;
    }
  }
  out.issues = std::move(r.issues);
  if (out.issues.empty()) out.suite = std::move(s);
  return out;
}

nlohmann::json to_json(const SuiteSpec& s) {
  return {{"suite", s.name},       {"jobs", s.jobs},         {"gpus", s.gpus},
          {"regions", s.regions}, {"compare_to", s.compare_to}, {"schedule", s.schedule}};
}

SuiteSpec suite_from_json(const nlohmann::json& j) {
  SuiteSpec s;
  s.name = j.value("suite", std::string());
  s.jobs = j.value("jobs", std::vector<std::string>{});
  s.gpus = j.value("gpus", std::vector<std::string>{});
  s.regions = j.value("regions", std::vector<std::string>{});
  s.compare_to = j.value("compare_to", std::string("baseline"));
  s.schedule = j.value("schedule", std::string());
  return s;
}

Result<nlohmann::json> load_suite_request(const std::string& suite_path) {
  auto read = [](const std::string& p) -> std::optional<std::string> {
    std::ifstream f(p, std::ios::binary);
    if (!f) return std::nullopt;
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  auto text = read(suite_path);
  if (!text) return make_error(Errc::invalid_argument, "cannot read " + suite_path + ": check the path");
  auto parsed = parse_suite(*text, suite_path);
  if (!parsed.ok()) return make_error(Errc::invalid_argument, parsed.error_text());
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(suite_path).parent_path();
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& rel : parsed.suite->jobs) {
    const fs::path p = dir / rel;
    auto yaml = read(p.string());
    if (!yaml)
      return make_error(Errc::invalid_argument,
                        suite_path + ": jobs names '" + rel + "', but " + p.string() + " cannot be read");
    auto spec = parse_job_spec(*yaml, p.string());
    if (!spec.ok()) return make_error(Errc::invalid_argument, spec.error_text());
    const fs::path jdir = p.parent_path();
    auto bundle = pack_job_bundle(jdir.empty() ? "." : jdir.string(), spec.spec->kernel.sources);
    if (!bundle)
      return make_error(Errc::invalid_argument, p.string() + ": kernel.sources: " + bundle.error().message);
    jobs.push_back({{"source_name", p.filename().string()}, {"spec_yaml", *yaml},
                    {"bundle", bundle_to_json(*bundle)}});
  }
  return nlohmann::json{{"suite_yaml", *text},
                        {"source_name", fs::path(suite_path).filename().string()},
                        {"jobs", jobs}};
}

}  // namespace kfleet
