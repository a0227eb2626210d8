// Keeps docs/problem-schema.json true to the problem parser: the library's definitions pass
// both, known-bad documents fail both, each object level of the schema allows exactly the
// parser's keys, and the enums are the parser's vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "../src/spec_yaml.hpp"
#include "kfleet/common/problem.hpp"
#include "schema_subset.hpp"
#include "test_paths.hpp"
#include "kfleet/testing/files.hpp"

namespace kfleet {
namespace {
namespace fs = std::filesystem;

nlohmann::json schema_json() {
  return nlohmann::json::parse(kfleet::testing::read_file(testing::source_dir() / "docs/problem-schema.json"));
}

nlohmann::json yaml_as_json(const std::string& text) { return spec::to_json_value(YAML::Load(text)); }

TEST(ProblemSchema, EveryLibraryProblemPassesParserAndSchema) {
  const testing::SchemaSubset schema(schema_json());
  int n = 0;
  for (const auto& e : fs::directory_iterator(testing::source_dir() / "kernels/problems")) {
    const fs::path file = e.path() / "problem.yaml";
    if (!fs::exists(file)) continue;
    ++n;
    const std::string text = kfleet::testing::read_file(file);
    auto p = parse_problem(text, file.string());
    EXPECT_TRUE(p.ok()) << p.error_text();
    std::vector<std::string> errors;
    EXPECT_TRUE(schema.validate(yaml_as_json(text), errors)) << file << "\n" << ::testing::PrintToString(errors);
  }
  EXPECT_GE(n, 8);
}

TEST(ProblemSchema, BadDocumentsFailParserAndSchema) {
  const std::string ok = R"(problem: p
version: 1
dims: [T]
inputs: [{name: x, dtype: bf16, shape: [T], init: {dist: normal}}]
outputs: [{name: y, dtype: bf16, shape: [T], check: {kind: exact}, lazy: [zeros]}]
flops: T
bytes: 4*T
cases: [{name: a, dims: {T: 2}}]
reference: {cpu: r.cpp}
)";
  const testing::SchemaSubset schema(schema_json());
  ASSERT_TRUE(parse_problem(ok, "ok.yaml").ok()) << parse_problem(ok, "ok.yaml").error_text();
  std::vector<std::string> none;
  ASSERT_TRUE(schema.validate(yaml_as_json(ok), none)) << ::testing::PrintToString(none);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = ok;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<std::string> bad = {
      ok + "colour: blue\n",
      with("problem: p", "problem: Bad-Name"),
      with("version: 1", "version: 0"),
      with("dtype: bf16, shape: [T], init", "dtype: bfloat16, shape: [T], init"),
      with("{dist: normal}", "{dist: gaussian}"),
      with("{dist: normal}", "{dist: normal, sigma: 1}"),
      with("{kind: exact}", "{kind: close}"),
      with("{kind: exact}", "{kind: exact, atoll: 1}"),
      with("lazy: [zeros]", "lazy: [nothing]"),
      with("lazy: [zeros]", "lazy: []"),
      with("lazy: [zeros]", "lazy: [{copy: x, twice: true}]"),
      with("{T: 2}", "{T: 0}"),
      with("cases: [{name: a, dims: {T: 2}}]", "cases: []"),
      with("{cpu: r.cpp}", "{cpu: ../r.cpp}"),
      with("{cpu: r.cpp}", "{cpu: /r.cpp}"),
      with("{cpu: r.cpp}", "{gpu: r.cu}"),
      with("{cpu: r.cpp}", "{cpu: 'lib:../x.cpp'}"),
      with("init: {dist: normal}}", "init: {dist: normal}, scaled_by: {block: [1]}}"),
      with("reference: {cpu: r.cpp}\n", ""),
  };
  for (const auto& doc : bad) {
    EXPECT_FALSE(parse_problem(doc, "bad.yaml").ok()) << doc;
    std::vector<std::string> errors;
    EXPECT_FALSE(schema.validate(yaml_as_json(doc), errors)) << "schema accepted:\n" << doc;
  }
}

TEST(ProblemSchema, PropertyNamesEqualParserKeyTables) {
  const auto root = schema_json();
  const testing::SchemaSubset schema(root);
  testing::expect_schema_keys_are_the_parsers(schema, problem_vocab::key_tables());
}

TEST(ProblemSchema, EnumsEqualParserVocabulary) {
  const auto root = schema_json();
  const auto& d = root["$defs"];
  auto as_vec = [](const nlohmann::json& e) { return e.get<std::vector<std::string>>(); };
  EXPECT_EQ(as_vec(d["dtype"]["enum"]), problem_vocab::dtypes());
  EXPECT_EQ(as_vec(root["properties"]["scalars"]["items"]["properties"]["dtype"]["enum"]), problem_vocab::scalar_dtypes());
  EXPECT_EQ(as_vec(d["init"]["properties"]["dist"]["enum"]), problem_vocab::dists());
  EXPECT_EQ(as_vec(d["output"]["properties"]["check"]["properties"]["kind"]["enum"]), problem_vocab::check_kinds());
  EXPECT_EQ(as_vec(root["properties"]["abi"]["enum"]), problem_vocab::abis());
  EXPECT_EQ(as_vec(root["properties"]["kernels"]["items"]["properties"]["languages"]["items"]["enum"]), problem_vocab::languages());
  EXPECT_EQ(as_vec(d["input"]["properties"]["layout"]["enum"]), problem_vocab::layouts());
  // lazy words + copy
  auto words = as_vec(d["output"]["properties"]["lazy"]["items"]["anyOf"][0]["enum"]);
  words.push_back("copy");
  std::set<std::string> want(problem_vocab::lazy_kinds().begin(), problem_vocab::lazy_kinds().end());
  EXPECT_EQ(std::set<std::string>(words.begin(), words.end()), want);
}

}  // namespace
}  // namespace kfleet
