// Keeps docs/job-schema.json true to the parser: the examples pass both, known-bad documents
// fail both, and each object level of the schema allows exactly the parser's keys.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "../src/spec_keys.hpp"
#include "../src/spec_yaml.hpp"
#include "kfleet/common/jobspec.hpp"
#include "schema_subset.hpp"
#include "test_paths.hpp"
#include "kfleet/testing/files.hpp"

namespace kfleet {
namespace {
namespace fs = std::filesystem;

testing::SchemaSubset load_schema() {
  const auto path = testing::source_dir() / "docs/job-schema.json";
  const auto text = kfleet::testing::read_file(path);
  EXPECT_FALSE(text.empty()) << "cannot read " << path;
  return testing::SchemaSubset(nlohmann::json::parse(text));
}

nlohmann::json yaml_as_json(const std::string& text) {
  return spec::to_json_value(YAML::Load(text));
}

TEST(JobSchema, EveryExamplePassesParserAndSchema) {
  const auto schema = load_schema();
  const auto refused = testing::refused_exploits();
  ASSERT_GE(refused.size(), 3u);
  int n = 0, refused_seen = 0;
  for (const auto& e : fs::recursive_directory_iterator(testing::source_dir() / "jobs")) {
    // jobs/bad holds invalid jobs; jobs/suites holds suites (suite_gtest.cpp checks them).
    if (e.path().extension() != ".yaml" || e.path().parent_path().filename() == "bad" ||
        e.path().parent_path().filename() == "suites")
      continue;
    const auto text = kfleet::testing::read_file(e.path());
    if (testing::is_refused_exploit(e.path())) {
      // Refused at submit is what they show: the parser and the schema both refuse them.
      ++refused_seen;
      EXPECT_FALSE(parse_job_spec(text, e.path().string()).ok()) << e.path();
      std::vector<std::string> errors;
      EXPECT_FALSE(schema.validate(yaml_as_json(text), errors)) << e.path();
      continue;
    }
    ++n;
    auto p = parse_job_spec(text, e.path().string());
    EXPECT_TRUE(p.ok()) << p.error_text();
    std::vector<std::string> errors;
    EXPECT_TRUE(schema.validate(yaml_as_json(text), errors))
        << e.path() << "\n" << ::testing::PrintToString(errors);
    // The JSON wire form is also a valid job document.
    if (p.ok()) {
      errors.clear();
      EXPECT_TRUE(schema.validate(to_json(*p.spec), errors))
          << e.path() << " (to_json)\n" << ::testing::PrintToString(errors);
    }
  }
  EXPECT_GE(n, 6);
  EXPECT_EQ(refused_seen, static_cast<int>(refused.size()));
}

TEST(JobSchema, BadDocumentsFailParserAndSchema) {
  const std::string ok = "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n";
  const std::string cases_ok = "gates: {correctness: {cases: [{name: a, shape: {B: 1}}]}, performance: {case: a, ";
  std::vector<std::string> bad = {
      ok + "colour: blue\n",
      ok + "gates: {resources: {max_register: 1}}\n",
      ok + "benchmark: {min_samples: ten}\n",
      ok + "benchmark: {min_samples: 0}\n",
      ok + "priority: 5000\n",
      ok + "max_attempts: 21\n",
      ok + "timeout_s: 0\n",
      ok + "profile: {tool: perf}\n",
      ok + "simulate: {fail_stage: compile}\n",
      ok + "simulate: {time_us: -1}\n",
      ok + "gates: {correctness: {cases: [{name: a, shape: {B: 1}, seeds: [-1]}]}}\n",
      ok + "gates: {correctness: {cases: []}}\n",
      ok + "gates: {correctness: {cases: [{name: a, shape: {B: 1}}], tolerance: {atol: 0}}}\n",
      ok + cases_ok + "threshold_pct: 0}}\n",
      ok + cases_ok + "metric: seconds}}\n",
      ok + cases_ok + "compare_to: yesterday}}\n",
      ok + cases_ok + "compare_to: {job: 1, value_us: 3}}}\n",
      ok + cases_ok + "compare_to: {job: 0}}}\n",
      ok + cases_ok + "compare_to: {reference: torch, label: x}}}\n",
      "name: t\ntarget: {regions: [a]}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: atention, language: cuda, sources: [k.cu]}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu], defines: {A: [1]}}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: custom, language: hip, steps: {build: make}}\n",
      "name: t\ntarget: [L4]\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n",
      "target: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n",
      // Sources stay inside the job's folder or the kernel library.
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [../k.cu]}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [/k.cu]}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: ['lib:../harness/src/x.cu']}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: ['lib:suite/../../x.cu']}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: ['lib:/etc/passwd']}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: ['lib:']}\n",
      // Nothing that a shell reads between double quotes or not (compile_flags.hpp).
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu], defines: {X: \"$(id)\"}}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu], defines: {\"X;Y\": 1}}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu], entry: \"k`id`\"}\n",
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu], flags: [\"-DX=a b\"]}\n",
  };
  for (const char* f : {"wrong-type.yaml", "unknown-key.yaml", "missing-field.yaml", "bad-enum-range.yaml",
                        "shell-syntax.yaml"}) {
    bad.push_back(kfleet::testing::read_file(testing::source_dir() / "jobs/bad" / f));
  }
  const auto schema = load_schema();
  ASSERT_TRUE(parse_job_spec(ok, "ok.yaml").ok());
  const std::string lib_ok =
      "name: t\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: ['lib:suite/fa_s512.cu', k.cu]}\n";
  ASSERT_TRUE(parse_job_spec(lib_ok, "ok.yaml").ok());
  std::vector<std::string> lib_errors;
  EXPECT_TRUE(schema.validate(yaml_as_json(lib_ok), lib_errors)) << ::testing::PrintToString(lib_errors);
  std::vector<std::string> none;
  ASSERT_TRUE(schema.validate(yaml_as_json(ok), none)) << ::testing::PrintToString(none);
  for (const auto& doc : bad) {
    EXPECT_FALSE(parse_job_spec(doc, "bad.yaml").ok()) << doc;
    std::vector<std::string> errors;
    EXPECT_FALSE(schema.validate(yaml_as_json(doc), errors)) << "schema accepted:\n" << doc;
  }
}

TEST(JobSchema, PropertyNamesEqualParserKeyTables) {
  const auto text = kfleet::testing::read_file(testing::source_dir() / "docs/job-schema.json");
  const auto root = nlohmann::json::parse(text);
  const testing::SchemaSubset schema(root);
  testing::expect_schema_keys_are_the_parsers(schema, spec::key_tables());
}

TEST(JobSchema, EnumsEqualParserVocabulary) {
  const auto root = nlohmann::json::parse(kfleet::testing::read_file(testing::source_dir() / "docs/job-schema.json"));
  const auto& p = root["properties"];
  auto as_vec = [](const nlohmann::json& e) { return e.get<std::vector<std::string>>(); };
  EXPECT_EQ(as_vec(p["kernel"]["properties"]["family"]["enum"]), spec::families());
  EXPECT_EQ(as_vec(p["kernel"]["properties"]["language"]["enum"]), spec::languages());
  EXPECT_EQ(as_vec(p["gates"]["properties"]["performance"]["properties"]["metric"]["enum"]), spec::metrics());
  EXPECT_EQ(as_vec(p["profile"]["properties"]["tool"]["enum"]), spec::profile_tools());
  EXPECT_EQ(as_vec(p["profile"]["properties"]["when"]["enum"]), spec::profile_whens());
  EXPECT_EQ(as_vec(p["simulate"]["properties"]["fail_stage"]["enum"]), spec::fail_stages());
}

}  // namespace
}  // namespace kfleet
