// Interleaved A/B verdicts and pooled multi-process benchmarks, through the whole pipeline on
// the simulated GPU: the same round logic the CUDA backend runs, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "pipeline_support.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;
using kfleet::testing::verdict_is;

namespace {

JobSpec sim_spec(const std::string& name, double time_us, double noise_pct) {
  JobSpec s;
  s.name = name;
  s.parent = "ref";
  s.target.gpu = "L4";
  s.kernel.family = "attention";
  s.kernel.language = "cuda";
  s.kernel.sources = {"k.cu"};
  CorrectnessGate cg;
  CorrectnessCase cs;
  cs.name = "mission";
  cs.shape.dims = {{"B", 1}};
  cs.seeds = {0};
  cg.cases = {cs};
  s.gates.correctness = cg;
  PerformanceGate pg;
  pg.case_name = "mission";
  pg.compare_to.kind = CompareTo::Kind::parent;
  s.gates.performance = pg;
  SimulationSpec sim;
  sim.time_us = time_us;
  sim.noise_pct = noise_pct;
  sim.stage_ms = 1;
  s.simulate = sim;
  s.benchmark.min_samples = 30;
  return s;
}

Bundle bundle_of(const std::string& text) {
  Bundle b;
  b.files = {{"k.cu", text}};
  return b;
}

struct AbRun : kfleet::testing::PipelineRun {
  BackendPtr backend = make_simulated_backend({});
  Bundle cand = bundle_of("// candidate\n"), ref = bundle_of("// reference\n");

  AbRun() {
    server.bundles[cand.hash()] = cand;
    server.bundles[ref.hash()] = ref;
  }

  // A lease for `cand_us` judged interleaved against a reference job of `ref_us`, the compare
  // object shaped as kfleetd's resolve_compare sends it.
  Lease lease(double cand_us, double ref_us, double noise_pct) {
    Lease l;
    l.run_id = 9;
    l.job_id = 2;
    l.fencing_token = 1;
    l.spec = sim_spec("cand", cand_us, noise_pct);
    l.spec.benchmark.interleave = true;
    l.bundle_hash = cand.hash();
    l.compare = Comparison::from_json({{"kind", "parent"},
                                       {"label", "parent ref (job 1)"},
                                       {"job_id", 1},
                                       {"median_us", ref_us},
                                       {"interleave", true},
                                       {"bundle_hash", ref.hash()},
                                       {"spec", to_json(sim_spec("ref", ref_us, noise_pct))}});
    return l;
  }

  std::optional<Verdict> run(const Lease& l) { return PipelineRun::run(*backend, l); }
};

}  // namespace

TEST(Interleave, ComparisonCarriesTheReferenceBuild) {
  AbRun r;
  auto l = r.lease(100, 100, 0.5);
  EXPECT_TRUE(l.compare.interleave);
  EXPECT_EQ(l.compare.bundle_hash, r.ref.hash());
  ASSERT_TRUE(l.compare.spec.has_value());
  EXPECT_EQ(l.compare.spec->name, "ref");
  EXPECT_TRUE(l.compare.interleave_error.empty());

  auto bad = Comparison::from_json({{"kind", "parent"}, {"interleave", true}, {"spec", "nonsense"}});
  EXPECT_TRUE(bad.interleave);
  EXPECT_NE(bad.interleave_error.find("does not parse"), std::string::npos) << bad.interleave_error;
  EXPECT_FALSE(Comparison::from_json({{"kind", "parent"}}).interleave);
}

TEST(Interleave, IdenticalReferenceIsSameDespiteRoundDrift) {
  AbRun r;
  // The simulated GPU drifts by a random walk of 0.5% per process: the baseline measured on
  // both sides of each candidate cancels it.
  auto v = r.run(r.lease(100, 100, 0.5));
  ASSERT_TRUE(verdict_is(v, RunOutcome::passed));
  EXPECT_EQ(v->perf, "same") << v->reason;
  auto bench = r.sink.of("bench.result");
  ASSERT_EQ(bench.size(), 1u);
  const auto& b = bench[0];
  EXPECT_TRUE(b.value("interleaved", false));
  const int rounds = b.value("rounds", 0);
  EXPECT_GE(rounds, 5);
  EXPECT_LE(rounds, r.lease(1, 1, 1).spec.benchmark.max_rounds);
  EXPECT_EQ(b["round_ratios"].size(), static_cast<std::size_t>(rounds));
  EXPECT_EQ(b["samples_us"].size(), static_cast<std::size_t>(rounds) * 30);
  EXPECT_NE(v->reason.find("interleaved, " + std::to_string(rounds) + " rounds"), std::string::npos)
      << v->reason;
  EXPECT_TRUE(v->metrics.value("interleaved", false));
  // Each round's delta, in %, as the verdict keeps it.
  ASSERT_EQ(v->metrics["round_deltas_pct"].size(), static_cast<std::size_t>(rounds));
  for (int i = 0; i < rounds; ++i)
    EXPECT_NEAR(v->metrics["round_deltas_pct"][i].get<double>(), (b["round_ratios"][i].get<double>() - 1) * 100, 1e-3);
  // The reference's sources were fetched beside the candidate's.
  EXPECT_TRUE(fs::exists(r.dir / "reference-src" / "k.cu"));
}

TEST(Interleave, TwoPercentSlowerIsRegressedAndRejected) {
  AbRun r;
  auto v = r.run(r.lease(102, 100, 0.5));
  ASSERT_TRUE(verdict_is(v, RunOutcome::rejected));
  EXPECT_EQ(v->gate, "performance");
  EXPECT_EQ(v->perf, "regressed");
  ASSERT_TRUE(v->ci_low_pct.has_value());
  EXPECT_GT(*v->ci_low_pct, 1.0);
  // 0.5% noise and a drifting GPU over 5+ rounds: the estimate lands within about 1% of +2%.
  EXPECT_NEAR(v->delta_pct.value_or(0), 2.0, 1.2);
  EXPECT_EQ(v->reason.rfind("do not merge: +", 0), 0u) << v->reason;
  EXPECT_NE(v->reason.find("interleaved"), std::string::npos) << v->reason;
}

TEST(Interleave, FasterIsImproved) {
  AbRun r;
  auto v = r.run(r.lease(95, 100, 0.5));
  ASSERT_TRUE(verdict_is(v, RunOutcome::passed));
  EXPECT_EQ(v->perf, "improved") << v->reason;
}

TEST(Interleave, UndecidableStopsAtTheRoundCap) {
  AbRun r;
  auto l = r.lease(101, 100, 2.0);  // right on the threshold: no CI can settle it
  l.spec.benchmark.max_rounds = 7;
  auto v = r.run(l);
  ASSERT_TRUE(v.has_value());
  auto bench = r.sink.of("bench.result");
  ASSERT_EQ(bench.size(), 1u);
  EXPECT_LE(bench[0].value("rounds", 0), 7);
  if (v->perf == "inconclusive") {
    EXPECT_EQ(bench[0].value("rounds", 0), 7);
    EXPECT_NE(v->reason.find("; rounds (%): "), std::string::npos) << v->reason;
  }
}

TEST(Interleave, MissingReferenceSourcesAreAnError) {
  AbRun r;
  auto l = r.lease(100, 100, 0.5);
  r.server.bundles.erase(r.ref.hash());
  auto v = r.run(l);
  ASSERT_TRUE(verdict_is(v, RunOutcome::error, "the reference parent ref (job 1)"));

  AbRun r2;
  auto l2 = r2.lease(100, 100, 0.5);
  l2.compare.spec.reset();
  l2.compare.interleave_error = "the reference's spec is missing or does not parse: no spec";
  auto v2 = r2.run(l2);
  ASSERT_TRUE(verdict_is(v2, RunOutcome::error, "interleaved comparison"));
}

TEST(Pooled, SamplesFromSeveralProcessesArePooled) {
  AbRun r;
  auto l = r.lease(100, 100, 0.5);
  l.spec.benchmark.interleave = false;
  l.spec.benchmark.processes = 3;
  l.compare = Comparison::from_json({{"kind", "parent"}, {"label", "p"}, {"median_us", 100.0}});
  auto v = r.run(l);
  ASSERT_TRUE(v.has_value());
  auto bench = r.sink.of("bench.result");
  ASSERT_EQ(bench.size(), 1u);
  const auto& b = bench[0];
  EXPECT_EQ(b.value("processes", 0), 3);
  ASSERT_EQ(b["process_medians_us"].size(), 3u);
  EXPECT_EQ(b["samples_us"].size(), 30u);  // 30 samples split over 3 processes
  EXPECT_FALSE(b.value("interleaved", false));
  // Each process has its own offset, so their medians differ; the pooled median lies between.
  std::vector<double> med = b["process_medians_us"].get<std::vector<double>>();
  auto [lo, hi] = std::minmax_element(med.begin(), med.end());
  EXPECT_LT(*lo, *hi);
  EXPECT_GE(b["median_us"].get<double>(), *lo);
  EXPECT_LE(b["median_us"].get<double>(), *hi);
  EXPECT_EQ(v->perf, "same") << v->reason;
}
