#pragma once
// A fleet regression suite (JOBS.md): a named list of job files run on every GPU class the
// fleet has (or the classes it names), each result compared with its stored baseline.
//
//   suite: nightly
//   jobs: [fa-s512.yaml, fp8-sdpa.yaml]      # relative to the suite file
//   on: {gpus: [L4, H100], regions: any}     # gpus absent = every class the fleet has
//   compare_to: baseline
//   schedule: "0 3 * * *"                    # optional: kfleetd --suite runs it (UTC cron)
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet {

struct SuiteSpec {
  std::string name;
  std::vector<std::string> jobs;     // job YAML paths, relative to the suite file's folder
  std::vector<std::string> gpus;     // empty = every GPU class the fleet has
  std::vector<std::string> regions;  // empty = any
  std::string compare_to = "baseline";
  std::string schedule;              // 5-field cron expression, "" = run on demand only
};

struct SuiteParse {
  std::optional<SuiteSpec> suite;
  std::vector<SpecIssue> issues;
  bool ok() const { return suite.has_value() && issues.empty(); }
  std::string error_text() const;
};
// Strict like the job parser: unknown keys and wrong types are issues naming file:line:column.
SuiteParse parse_suite(const std::string& yaml_text, const std::string& file);

nlohmann::json to_json(const SuiteSpec& s);
SuiteSpec suite_from_json(const nlohmann::json& j);

// Reads a suite file and every job it names, packing each job's sources: the body of
// POST /api/v1/regressions {suite_yaml, source_name, jobs: [{source_name, spec_yaml, bundle}]}.
// Shared by `kfleet regress` and kfleetd's scheduled suites.
Result<nlohmann::json> load_suite_request(const std::string& suite_path);

}  // namespace kfleet
