// A fleet regression run end to end over simulated L4 and H100 agents: a first run establishes
// the baselines; in the second, one kernel is scripted 5% slower on L4 only, and exactly that
// cell comes out regressed, in the CLI's exit status, its JSON and its Markdown.
#include <filesystem>

#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

std::string kernel_yaml(const std::string& name, const std::string& simulate) {
  return "name: " + name +
         "\ntarget: {gpu: L4}\n"
         "kernel:\n  family: attention\n  language: cuda\n  sources: [k.cu]\n  entry: k\n"
         "gates:\n  resources: {max_registers: 128}\n  correctness:\n    dtype: fp16\n"
         "    cases:\n      - {name: small, shape: {B: 1, H: 2, S: 128, D: 64}, seeds: [0]}\n"
         "    tolerance: {atol: 1.0e-3, rtol: 1.0e-3}\n"
         "  performance: {case: small, compare_to: baseline, threshold_pct: 1.0}\n"
         "benchmark: {min_samples: 20}\n"
         "simulate: " + simulate + "\n";
}

// dir/<sub>/{nightly.yaml, a.yaml, b.yaml, k.cu}; b's simulate section is `b_sim`.
std::string write_suite(const Cluster& c, const std::string& sub, const std::string& b_sim) {
  const std::string d = c.dir() + "/" + sub;
  std::filesystem::create_directories(d);
  write_file(d + "/k.cu", "__global__ void k() {}\n");
  write_file(d + "/a.yaml", kernel_yaml("kern/a", "{time_us: 80, stage_ms: 5}"));
  write_file(d + "/b.yaml", kernel_yaml("kern/b", b_sim));
  write_file(d + "/nightly.yaml",
             "suite: nightly\njobs: [a.yaml, b.yaml]\non: {gpus: [L4, H100], regions: any}\n"
             "compare_to: baseline\n");
  return d + "/nightly.yaml";
}

const nlohmann::json* cell(const nlohmann::json& reg, const std::string& k, const std::string& g) {
  for (const auto& c : reg["cells"])
    if (c["kernel"] == k && c["gpu_class"] == g) return &c;
  return nullptr;
}

TEST(Regression, FivePercentSlowerOnL4IsTheOnlyRegressedCell) {
  Cluster c;
  c.start_kfleetd();
  c.start_agent("l4", "local", "L4", "sm_89");
  c.start_agent("h100", "local", "H100", "sm_90a");

  // 1. First run: no baselines yet; every passing result becomes its cell's baseline.
  const auto first = write_suite(c, "v1", "{time_us: 120, stage_ms: 5}");
  auto r1 = c.cli({"regress", first}, 180000);
  ASSERT_EQ(r1.exit_code, 0) << r1.output << c.logs();
  EXPECT_NE(r1.output.find("missing baseline"), std::string::npos) << r1.output;
  auto baselines = c.get("/api/v1/baselines")["baselines"];
  ASSERT_EQ(baselines.size(), 4u) << baselines.dump(2);
  for (const auto& b : baselines) {
    EXPECT_TRUE(b["simulated"].get<bool>()) << b.dump();  // simulated agents made them
    EXPECT_GT(b["samples"].get<int>(), 0) << b.dump();
    EXPECT_EQ(b["set_by"], "admin") << b.dump();  // who started the regression run
  }

  // 2. Same kernels, kern/b scripted 5% slower on L4 only.
  const auto second = write_suite(c, "v2", "{time_us: 120, stage_ms: 5, slower_pct: {L4: 5}}");
  const std::string md = c.dir() + "/report.md", js = c.dir() + "/report.json";
  auto r2 = c.cli({"regress", second, "--markdown", md, "--json", js}, 180000);
  EXPECT_NE(r2.exit_code, 0) << r2.output << c.logs();
  EXPECT_EQ(r2.exit_code, 1) << r2.output;

  auto reg = nlohmann::json::parse(read_file(js))["regression"];
  ASSERT_EQ(reg["state"], "done") << reg.dump(2);
  ASSERT_EQ(reg["cells"].size(), 4u) << reg.dump(2);
  int regressed = 0;
  for (const auto& cl : reg["cells"]) {
    if (cl["verdict"] == "regressed") ++regressed;
    EXPECT_TRUE(cl["simulated"].get<bool>());
  }
  EXPECT_EQ(regressed, 1) << reg.dump(2);
  auto* bad = cell(reg, "kern/b", "L4");
  ASSERT_NE(bad, nullptr) << reg.dump(2);
  EXPECT_EQ((*bad)["verdict"], "regressed") << bad->dump(2);
  EXPECT_NEAR((*bad)["delta_pct"].get<double>(), 5.0, 1.0) << bad->dump(2);
  EXPECT_GT((*bad)["ci_low_pct"].get<double>(), 1.0) << bad->dump(2);
  for (auto [k, g] : {std::pair{"kern/a", "L4"}, {"kern/a", "H100"}, {"kern/b", "H100"}}) {
    auto* ok = cell(reg, k, g);
    ASSERT_NE(ok, nullptr) << k << " " << g;
    EXPECT_EQ((*ok)["verdict"], "same") << ok->dump(2);
  }

  // fast_p over the four cells (attention kernels), against each of kfleet's (simulated)
  // PyTorch references: every cell is correct (a performance rejection is still correct) and
  // compared with both, in the JSON, the text and the Markdown.
  EXPECT_EQ(reg["fast_p"]["kernels"], 4) << reg["fast_p"].dump(2);
  for (const auto& b : reg["fast_p"]["baselines"]) EXPECT_EQ(b["timed"], 4) << b.dump();
  for (const auto& cl : reg["cells"]) EXPECT_EQ(cl["versus"].size(), 2u) << cl.dump(2);
  EXPECT_NE(r2.output.find("against PyTorch"), std::string::npos) << r2.output;
  EXPECT_NE(r2.output.find("fast_1.5  eager "), std::string::npos) << r2.output;
  EXPECT_NE(r2.output.find("of 4 finished cells (kernel x GPU class) on a problem's kernel"), std::string::npos)
      << r2.output;

  // The Markdown report names the regressed cell; the API agrees with the file.
  const std::string report = read_file(md);
  EXPECT_NE(report.find("## Against PyTorch: fast_p"), std::string::npos) << report;
  EXPECT_NE(report.find("| fast_1.5 |"), std::string::npos) << report;
  EXPECT_NE(report.find("## Regressed"), std::string::npos) << report;
  EXPECT_NE(report.find("kern/b on L4"), std::string::npos) << report;
  EXPECT_EQ(report.find("kern/a on"), std::string::npos) << report;
  auto api = c.get("/api/v1/regressions/" + std::to_string(reg["id"].get<int>()))["regression"];
  EXPECT_EQ(api["cells"], reg["cells"]);
  EXPECT_EQ(c.get("/api/v1/regressions")["regressions"].size(), 2u);
  auto shown = c.cli({"regress", "show", std::to_string(reg["id"].get<int>())});
  EXPECT_EQ(shown.exit_code, 1) << shown.output;
  EXPECT_NE(shown.output.find("REGRESSED"), std::string::npos) << shown.output;

  // Each regression job ran on the class of its cell.
  for (const auto& cl : reg["cells"]) {
    auto job = c.job(cl["job_id"].get<std::int64_t>());
    EXPECT_EQ(job["job"]["gpu"], cl["gpu_class"]) << job.dump(2);
  }
  // /metrics carries the job duration histogram of these runs.
  HttpClient h(c.url(), Cluster::kUserToken);
  auto m = h.get("/metrics");
  ASSERT_TRUE(m.ok());
  EXPECT_NE(m->body.find("kfleet_job_duration_seconds_count 8"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("\nkfleet_leader 1\n"), std::string::npos) << m->body;  // the only one
}

TEST(Regression, SuiteWithUnknownKeyIsRefusedBeforeAnythingRuns) {
  Cluster c;
  c.start_kfleetd();
  const std::string d = c.dir() + "/bad";
  std::filesystem::create_directories(d);
  write_file(d + "/s.yaml", "suite: s\njobs: [a.yaml]\nnightly: true\n");
  auto r = c.cli({"regress", d + "/s.yaml"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("s.yaml:3:1: nightly: unknown key"), std::string::npos) << r.output;
  EXPECT_TRUE(c.get("/api/v1/regressions")["regressions"].empty());
}

}  // namespace
}  // namespace kfleet::e2e
