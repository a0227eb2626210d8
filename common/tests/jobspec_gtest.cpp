#include "kfleet/common/jobspec.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_paths.hpp"
#include "spec_issues.hpp"

namespace kfleet {
namespace {
namespace fs = std::filesystem;

using kfleet::testing::source_dir;

using kfleet::testing::find_issue;

constexpr const char* kMinimal = R"(name: t/min
target: {gpu: L4}
kernel: {family: attention, language: cuda, sources: [k.cu]}
)";

TEST(JobSpecParse, MinimalJobGetsDefaults) {
  auto p = parse_job_spec(kMinimal, "min.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  EXPECT_EQ(p.spec->name, "t/min");
  EXPECT_EQ(p.spec->target.gpu, "L4");
  EXPECT_EQ(p.spec->kernel.sources, std::vector<std::string>{"k.cu"});
  EXPECT_EQ(p.spec->max_attempts, 3);
  EXPECT_EQ(p.spec->benchmark.min_samples, 10);
  EXPECT_FALSE(p.spec->simulate.has_value());
}

// Found by the job_yaml fuzz target (tests/fuzz/corpus/job_yaml/regression-not-utf8-*.yaml): a
// job with bytes that are not UTF-8 in a string parsed, and then its JSON form threw.
TEST(JobSpecParse, TextThatIsNotUtf8IsRefusedWhereItIs) {
  const std::string bad = std::string(kMinimal) + "campaign: \"caf\xE9\"\n";
  auto p = parse_job_spec(bad, "latin1.yaml");
  ASSERT_FALSE(p.ok());
  const SpecIssue* i = find_issue(p, "(encoding)");
  ASSERT_NE(i, nullptr) << p.error_text();
  EXPECT_EQ(i->line, 4);
  EXPECT_EQ(i->column, 15);
  EXPECT_NE(i->message.find("0xE9"), std::string::npos) << i->message;
  // Well-formed UTF-8, multi-byte included, still parses; so does its JSON form.
  auto good = parse_job_spec(std::string(kMinimal) + "# caf\xC3\xA9 \xF0\x9D\x84\x9E\n",
                             "u.yaml");
  ASSERT_TRUE(good.ok()) << good.error_text();
  EXPECT_NO_THROW((void)to_json(*good.spec).dump());
  for (const char* s : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82"})
    EXPECT_FALSE(parse_job_spec(std::string(kMinimal) + "campaign: \"" + s + "\"\n", "b.yaml").ok()) << s;
}

// Found by the job_yaml fuzz target in the long run (tests/fuzz/corpus/job_yaml/
// regression-key-too-long-for-json.yaml): a define named with control characters parsed, but
// its JSON form (the wire and store form, read back by this parser) did not: escaped, the key
// passed the 1024 characters YAML allows a flow-map key.
TEST(JobSpecParse, KeysTheJsonFormCannotCarryAreRefused) {
  const std::string job = "name: t/min\ntarget: {gpu: L4}\n"
                          "kernel: {family: attention, language: cuda, sources: [k.cu], defines: ";
  // (A define's name is a C identifier now, refused before this check: a params key has none.)
  auto control = parse_job_spec(job + "{A: 1}, params: {\"A\\x1fB\": 1}}\n", "c.yaml");
  ASSERT_FALSE(control.ok());
  const SpecIssue* i = find_issue(control, "(key)");
  ASSERT_NE(i, nullptr) << control.error_text();
  EXPECT_NE(i->message.find("'A?B' under kernel.params is written with control characters"),
            std::string::npos) << i->message;
  auto long_key = parse_job_spec(job + "{" + std::string(257, 'X') + ": 1}}\n", "l.yaml");
  ASSERT_FALSE(long_key.ok());
  EXPECT_NE(long_key.error_text().find("257 bytes long"), std::string::npos) << long_key.error_text();
  auto nested = parse_job_spec(job + "{A: 1}, params: {outer: [{\"\\t\": 1}]}}\n", "n.yaml");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error_text().find("under kernel.params.outer[0]"), std::string::npos)
      << nested.error_text();
  // A key of the longest allowed length still round-trips through the JSON form.
  auto ok = parse_job_spec(job + "{" + std::string(256, 'X') + ": 1}}\n", "ok.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error_text();
  auto back = job_spec_from_json(to_json(*ok.spec));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->kernel.defines, ok.spec->kernel.defines);
}

// Six lines of aliases in params expanded to a million values (2 GB and 34 s under ASan):
// aliases are refused where they first appear (tests/fuzz/corpus/job_yaml/
// regression-alias-bomb-in-params.yaml).
TEST(JobSpecParse, AliasesAreRefusedWhereTheyAre) {
  const std::string job = std::string(kMinimal) +
                          "x0: &a [q, q]\n"
                          "campaign: *a\n";
  auto p = parse_job_spec(job, "a.yaml");
  ASSERT_FALSE(p.ok());
  const SpecIssue* i = find_issue(p, "(alias)");
  ASSERT_NE(i, nullptr) << p.error_text();
  EXPECT_EQ(i->line, 5);
  EXPECT_NE(i->message.find("write the value out"), std::string::npos);
  // A "*" or "&" inside a string is no alias.
  auto text = parse_job_spec("name: t/min\ntarget: {gpu: L4}\nkernel: {family: attention, "
                             "language: cuda, sources: [k.cu], params: {s: \"a*b &c\"}}\n", "s.yaml");
  EXPECT_TRUE(text.ok()) << text.error_text();
}

TEST(JobSpecParse, FullSeed001Example) {
  auto p = parse_job_spec_file((source_dir() / "jobs/fa-s512/iter1.yaml").string());
  ASSERT_TRUE(p.ok()) << p.error_text();
  const JobSpec& s = *p.spec;
  EXPECT_EQ(s.parent, "fa-s512-v3/baseline");
  EXPECT_EQ(s.target.regions.size(), 5u);
  ASSERT_EQ(s.kernel.defines.size(), 1u);
  EXPECT_EQ(s.kernel.defines[0], (std::pair<std::string, std::string>{"O_ACCUM_HALF", "1"}));
  ASSERT_TRUE(s.gates.resources && s.gates.correctness && s.gates.performance);
  EXPECT_EQ(*s.gates.resources->max_registers, 192);
  ASSERT_EQ(s.gates.correctness->cases.size(), 2u);
  const auto& mission = s.gates.correctness->cases[1];
  EXPECT_EQ(mission.name, "mission");
  EXPECT_EQ(mission.shape.get("S"), 512);
  EXPECT_EQ(mission.shape.dims[0].first, "B");  // file order is kept
  EXPECT_EQ(mission.seeds, (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(*s.gates.correctness->tolerance.atol, 1e-3);
  EXPECT_EQ(s.gates.performance->compare_to.kind, CompareTo::Kind::parent);
  EXPECT_EQ(s.gates.correctness->dtype, "fp16");
  ASSERT_TRUE(s.simulate.has_value());
  EXPECT_DOUBLE_EQ(s.simulate->slower_pct.at("T4"), 180.0);
}

TEST(JobSpecParse, Seed000ChildIsSixPercentSlowerThanParent) {
  auto child = parse_job_spec_file((source_dir() / "jobs/fp8-sdpa/stage3-step2-xor.yaml").string());
  auto parent = parse_job_spec_file((source_dir() / "jobs/fp8-sdpa/stage2.yaml").string());
  ASSERT_TRUE(child.ok()) << child.error_text();
  ASSERT_TRUE(parent.ok()) << parent.error_text();
  EXPECT_EQ(child.spec->parent, parent.spec->name);
  EXPECT_DOUBLE_EQ(child.spec->simulate->time_us, 696);
  EXPECT_DOUBLE_EQ(parent.spec->simulate->time_us, 656);
  EXPECT_EQ(child.spec->gates.correctness->dtype["kv"], "fp8_e4m3");
  ASSERT_TRUE(child.spec->profile.has_value());
  EXPECT_EQ(child.spec->profile->when, "rejected");
}

TEST(JobSpecParse, ValueMsIsConvertedToMicroseconds) {
  auto p = parse_job_spec_file((source_dir() / "jobs/scaled-mm-hip/stepC09.yaml").string());
  ASSERT_TRUE(p.ok()) << p.error_text();
  const auto& c = p.spec->gates.performance->compare_to;
  EXPECT_EQ(c.kind, CompareTo::Kind::value);
  EXPECT_NEAR(c.value_us, 42176.0, 1e-6);
  EXPECT_EQ(c.label, "torch.compile");
  EXPECT_EQ(p.spec->gates.performance->metric, "gflops");
  EXPECT_EQ(p.spec->kernel.sources, std::vector<std::string>{"lib:suite/scaled_mm_hip.cu"});
}

TEST(JobSpecParse, CustomFamilyNeedsStepsNotSources) {
  auto p = parse_job_spec_file((source_dir() / "jobs/custom-steps/job.yaml").string());
  ASSERT_TRUE(p.ok()) << p.error_text();
  ASSERT_TRUE(p.spec->kernel.steps.has_value());
  EXPECT_EQ(p.spec->kernel.steps->build, "make -j");

  auto no_steps = parse_job_spec("name: c\ntarget: {gpu: L4}\nkernel: {family: custom, language: hip}\n", "c.yaml");
  ASSERT_FALSE(no_steps.ok());
  EXPECT_NE(find_issue(no_steps, "kernel.steps"), nullptr) << no_steps.error_text();
  auto steps_on_attention = parse_job_spec(
      "name: c\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [a.cu],"
      " steps: {test: t, bench: b}}\n", "c.yaml");
  EXPECT_NE(find_issue(steps_on_attention, "kernel.steps"), nullptr);
}

// kernel.flags choose how the sources compile, never the host compiler or files to run.
TEST(JobSpecParse, FlagsThatPickProgramsOrFilesAreRefusedSayingWhatIsAllowed) {
  auto bad = parse_job_spec(
      "name: f\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu],"
      " flags: [-O3, -ccbin, ./evil.sh]}\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  const SpecIssue* i = find_issue(bad, "kernel.flags[1]");
  ASSERT_NE(i, nullptr) << bad.error_text();
  EXPECT_NE(i->message.find("'-ccbin' is not allowed"), std::string::npos) << i->message;
  EXPECT_NE(i->message.find("-maxrregcount=N"), std::string::npos) << i->message;
  auto good = parse_job_spec(
      "name: f\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu],"
      " flags: [-O3, -maxrregcount=16, -DTILE=64, -Xptxas, -v]}\n", "f.yaml");
  EXPECT_TRUE(good.ok()) << good.error_text();
}

TEST(JobSpecParse, SyntaxErrorHasLineAndColumn) {
  auto p = parse_job_spec_file((source_dir() / "jobs/bad/syntax-error.yaml").string());
  ASSERT_FALSE(p.ok());
  ASSERT_EQ(p.issues.size(), 1u);
  EXPECT_GE(p.issues[0].line, 7);  // the unclosed '[' opens on line 7
  EXPECT_GT(p.issues[0].column, 0);
  EXPECT_NE(p.issues[0].to_string().find("syntax-error.yaml:"), std::string::npos);
}

TEST(JobSpecParse, UnknownKeysSuggestTheNearestKey) {
  auto p = parse_job_spec_file((source_dir() / "jobs/bad/unknown-key.yaml").string());
  ASSERT_FALSE(p.ok());
  const auto* typo = find_issue(p, "gates.resources.max_register");
  ASSERT_NE(typo, nullptr) << p.error_text();
  EXPECT_EQ(typo->line, 6);
  EXPECT_EQ(typo->column, 15);
  EXPECT_NE(typo->message.find("did you mean 'max_registers'?"), std::string::npos) << typo->message;
  EXPECT_NE(typo->message.find("allowed: "), std::string::npos);
  const auto* colour = find_issue(p, "colour");
  ASSERT_NE(colour, nullptr);
  EXPECT_EQ(colour->line, 7);
  EXPECT_EQ(colour->column, 1);
}

TEST(JobSpecParse, WrongTypesAreAllReported) {
  auto p = parse_job_spec_file((source_dir() / "jobs/bad/wrong-type.yaml").string());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.issues.size(), 3u) << p.error_text();
  ASSERT_NE(find_issue(p, "benchmark.min_samples"), nullptr) << p.error_text();
  EXPECT_NE(find_issue(p, "benchmark.min_samples")->message.find("whole number"), std::string::npos);
  ASSERT_NE(find_issue(p, "gates.correctness.cases[0].seeds"), nullptr);
  const auto* neg = find_issue(p, "gates.correctness.cases[1].seeds[1]");
  ASSERT_NE(neg, nullptr) << p.error_text();
  EXPECT_EQ(neg->line, 9);
}

TEST(JobSpecParse, MissingFieldsNameTheField) {
  auto p = parse_job_spec_file((source_dir() / "jobs/bad/missing-field.yaml").string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(find_issue(p, "target.gpu"), nullptr) << p.error_text();
  EXPECT_NE(find_issue(p, "kernel.language"), nullptr) << p.error_text();
  EXPECT_EQ(find_issue(p, "target.gpu")->line, 3);
  auto empty = parse_job_spec("", "e.yaml");
  EXPECT_FALSE(empty.ok());
  auto list = parse_job_spec("[1, 2]", "l.yaml");
  EXPECT_FALSE(list.ok());
}

TEST(JobSpecParse, SourcePathsMayNotEscape) {
  auto p = parse_job_spec_file((source_dir() / "jobs/bad/path-escape.yaml").string());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.issues.size(), 2u) << p.error_text();
  EXPECT_NE(find_issue(p, "kernel.sources[1]"), nullptr);
  EXPECT_NE(find_issue(p, "kernel.sources[2]"), nullptr);
  EXPECT_EQ(find_issue(p, "kernel.sources[0]"), nullptr);
}

TEST(JobSpecParse, EnumsRangesAndCaseReferences) {
  auto p = parse_job_spec_file((source_dir() / "jobs/bad/bad-enum-range.yaml").string());
  ASSERT_FALSE(p.ok());
  for (const char* f : {"priority", "kernel.family", "gates.performance.case",
                        "gates.performance.metric", "gates.performance.threshold_pct"}) {
    EXPECT_NE(find_issue(p, f), nullptr) << f << "\n" << p.error_text();
  }
  EXPECT_NE(find_issue(p, "kernel.family")->message.find("did you mean 'attention'"), std::string::npos);
  EXPECT_NE(find_issue(p, "gates.performance.case")->message.find("did you mean 'mission'"),
            std::string::npos);
}

struct BadCase {
  const char* yaml_tail;  // appended to a valid minimal job
  const char* field;
};

TEST(JobSpecParse, RejectsEachOutOfRangeOrMalformedValue) {
  const BadCase cases[] = {
      {"priority: -1001\n", "priority"},
      {"max_attempts: 0\n", "max_attempts"},
      {"max_attempts: 21\n", "max_attempts"},
      {"timeout_s: 86401\n", "timeout_s"},
      {"timeout_s: \"60\"\n", "timeout_s"},
      {"benchmark: {min_samples: 0}\n", "benchmark.min_samples"},
      {"benchmark: {l2_flush: maybe}\n", "benchmark.l2_flush"},
      {"benchmark: [1]\n", "benchmark"},
      {"gates: {correctness: {cases: [{name: a, shape: {B: 1}}], tolerance: {atol: 0}}}\n",
       "gates.correctness.tolerance.atol"},
      {"gates: {correctness: {cases: [{name: a, shape: {B: 1}}, {name: a, shape: {B: 2}}]}}\n",
       "gates.correctness.cases[1].name"},
      {"gates: {correctness: {cases: [{name: a, shape: {B: 1}}]}, performance: {case: a, threshold_pct: 101}}\n",
       "gates.performance.threshold_pct"},
      {"gates: {correctness: {cases: [{name: a, shape: {B: 1}}]}, performance: {case: a, compare_to: parent}}\n",
       "gates.performance.compare_to"},
      {"gates: {correctness: {cases: [{name: a, shape: {B: 1}}]}, performance: {case: a, compare_to: {job: 1, value_us: 3}}}\n",
       "gates.performance.compare_to"},
      {"gates: {correctness: {cases: [{name: a, shape: {B: 1}}]}, performance: {case: a, compare_to: {value_us: -3}}}\n",
       "gates.performance.compare_to.value_us"},
      {"gates: {correctness: {cases: [{name: a, shape: {B: 1}}]}, performance: {case: a, compare_to: yesterday}}\n",
       "gates.performance.compare_to"},
      {"gates: {correctness: {dtype: [fp16], cases: [{name: a, shape: {B: 1}}]}}\n", "gates.correctness.dtype"},
      {"gates: {correctness: {cases: [{name: a, shape: {B: 0}}]}}\n", "gates.correctness.cases[0].shape.B"},
      // A job of no problem: each case gives its shape, a non-empty map.
      {"gates: {correctness: {cases: [{name: a}]}}\n", "gates.correctness.cases[0].shape"},
      {"gates: {correctness: {cases: [{name: a, shape: {}}]}}\n", "gates.correctness.cases[0].shape"},
      {"gates: {correctness: {cases: [{name: a, shape: [1, 2]}]}}\n", "gates.correctness.cases[0].shape"},
      {"profile: {tool: rocprofv3}\n", "profile.tool"},
      {"profile: {tool: ncu, when: sometimes}\n", "profile.when"},
      {"simulate: {fail_stage: compile}\n", "simulate.fail_stage"},
      {"simulate: {time_us: 0}\n", "simulate.time_us"},
      {"simulate: {eager_us: 0}\n", "simulate.eager_us"},
      {"simulate: {compile_us: fast}\n", "simulate.compile_us"},
      {"parent: \"has space\"\n", "parent"},
  };
  for (const auto& c : cases) {
    auto p = parse_job_spec(std::string(kMinimal) + c.yaml_tail, "t.yaml");
    EXPECT_FALSE(p.ok()) << c.yaml_tail;
    EXPECT_NE(find_issue(p, c.field), nullptr) << c.yaml_tail << "got:\n" << p.error_text();
  }
}

TEST(JobSpecParse, DefinesAcceptScalarsAsStrings) {
  auto p = parse_job_spec(std::string(kMinimal).replace(
                              std::string(kMinimal).find("sources"), 0,
                              "defines: {A: 1, B: 2.5, C: true, D: fast, E: }, "),
                          "d.yaml");
  ASSERT_TRUE(p.ok()) << p.error_text();
  const auto& d = p.spec->kernel.defines;
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].second, "1");
  EXPECT_EQ(d[1].second, "2.5");
  EXPECT_EQ(d[2].second, "true");
  EXPECT_EQ(d[3].second, "fast");
  EXPECT_EQ(d[4].second, "");
  auto nested = parse_job_spec(std::string(kMinimal).replace(
                                   std::string(kMinimal).find("sources"), 0, "defines: {A: [1]}, "),
                               "d.yaml");
  EXPECT_NE(find_issue(nested, "kernel.defines.A"), nullptr) << nested.error_text();
}

}  // namespace
}  // namespace kfleet

namespace kfleet {
namespace {

SpecParse with_compare(const std::string& compare) {
  return parse_job_spec(std::string(kMinimal) +
                            "parent: t/p\ngates: {correctness: {cases: [{name: a, shape: {B: 1}}]},"
                            " performance: {case: a, compare_to: " + compare + "}}\n",
                        "c.yaml");
}

TEST(JobSpecParse, EveryCompareToForm) {
  auto parent = with_compare("parent");
  ASSERT_TRUE(parent.ok()) << parent.error_text();
  EXPECT_EQ(parent.spec->gates.performance->compare_to.kind, CompareTo::Kind::parent);
  auto baseline = with_compare("baseline");
  ASSERT_TRUE(baseline.ok());
  EXPECT_EQ(baseline.spec->gates.performance->compare_to.kind, CompareTo::Kind::baseline);
  auto job = with_compare("{job: 42}");
  ASSERT_TRUE(job.ok()) << job.error_text();
  EXPECT_EQ(job.spec->gates.performance->compare_to.kind, CompareTo::Kind::job);
  EXPECT_EQ(job.spec->gates.performance->compare_to.job_id, 42);
  auto us = with_compare("{value_us: 38.5, label: cublas}");
  ASSERT_TRUE(us.ok()) << us.error_text();
  EXPECT_DOUBLE_EQ(us.spec->gates.performance->compare_to.value_us, 38.5);
  EXPECT_EQ(us.spec->gates.performance->compare_to.label, "cublas");
  auto ref = with_compare("{reference: torch_sdpa}");
  ASSERT_TRUE(ref.ok()) << ref.error_text();
  EXPECT_EQ(ref.spec->gates.performance->compare_to.kind, CompareTo::Kind::reference);
  EXPECT_EQ(ref.spec->gates.performance->compare_to.label, "torch_sdpa");
  EXPECT_FALSE(with_compare("{}").ok());
  EXPECT_FALSE(with_compare("[parent]").ok());
}

TEST(JobSpecParse, DuplicateKeysAreReported) {
  auto p = parse_job_spec(std::string(kMinimal) + "priority: 1\npriority: 2\n", "d.yaml");
  ASSERT_FALSE(p.ok());
  const auto* dup = find_issue(p, "priority");
  ASSERT_NE(dup, nullptr) << p.error_text();
  EXPECT_EQ(dup->line, 5);
}

}  // namespace
}  // namespace kfleet
