// A custom job's numbers are its own scripts' word (self-reported). kfleetd keeps them, and a
// custom campaign's kept win is a baseline for the next custom job, but never for a job the
// harness measures: neither as the stored baseline of its kernel nor as its parent. These run
// the control plane itself (submit, lease offer, finish), not the agent.
#include <gtest/gtest.h>

#include "kfleet/core/fleet.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

struct SelfReportPlane : test::Plane {
  std::int64_t agent = enrol_agent("a", "L4", /*simulated=*/false).agent_id;

  std::int64_t submit(const std::string& yaml) { return test::Plane::submit(yaml, "carol"); }

  // One long-poll of the agent: the offer kfleetd makes (what it compares the job with).
  std::optional<LeaseOffer> offer() { return wait_offer(agent); }

  void finish(const LeaseOffer& o, double median_us, const std::string& perf = "improved") {
    Verdict v;
    v.outcome = RunOutcome::passed;
    v.perf = perf;
    v.median_us = median_us;
    auto r = cp->finish(agent, o.lease.run_id, o.lease.fencing_token, v);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }

  // The next offer is for `job` and compares it with nothing, its note saying `why`.
  std::optional<LeaseOffer> expect_no_reference_for(std::int64_t job, const std::string& why) {
    auto o = offer();
    EXPECT_TRUE(o && o->lease.job_id == job);
    if (!o) return o;
    EXPECT_EQ(o->compare.value("kind", "?"), "") << o->compare.dump();
    EXPECT_FALSE(o->compare.contains("median_us")) << o->compare.dump();
    EXPECT_NE(o->compare.value("note", "").find(why), std::string::npos) << o->compare.dump();
    return o;
  }
};

// The gates of every job here: one case, "mission", benchmarked and compared with `compare_to`
// ("" = its parent by default, or nothing).
std::string gates(const std::string& compare_to) {
  return "gates:\n  correctness:\n    cases: [{name: mission, shape: {M: 64}, seeds: [0]}]\n"
         "    tolerance: {max_abs: 0.01}\n  performance: {case: mission" +
         (compare_to.empty() ? std::string() : ", compare_to: " + compare_to) + "}\n";
}

std::string custom_job(const std::string& name, const std::string& more = "") {
  return "name: " + name + "\ncampaign: mm\ntarget: {gpu: L4}\n"
         "kernel:\n  family: custom\n  language: cuda\n  sources: [k.cu]\n"
         "  steps: {build: \"make\", test: \"./test\", bench: \"./bench --json\"}\n" + more;
}

std::string harness_job(const std::string& name, const std::string& more) {
  return "name: " + name + "\ncampaign: mm\ntarget: {gpu: L4}\n"
         "kernel: {family: attention, language: cuda, sources: [k.cu]}\n" + more;
}

TEST(SelfReported, ACustomJobsNumberIsNeverTheBaselineOfAHarnessMeasuredJob) {
  SelfReportPlane p;
  // A custom campaign's variant wins: kfleetd keeps it, marked self-reported, as the kernel's
  // baseline (for custom jobs).
  const auto win = p.submit(custom_job("mm/step1", "parent: mm/root\n" + gates("")));
  auto o = p.offer();
  ASSERT_TRUE(o && o->lease.job_id == win);
  p.finish(*o, 500);
  auto done = p.st->get_job(win);
  ASSERT_TRUE(done && done->verdict);
  EXPECT_TRUE(done->verdict->self_reported) << "kfleetd marks a custom job's verdict itself";
  auto kept = p.st->current_baseline("mm", "mission", "L4", false);
  ASSERT_TRUE(kept) << "a custom campaign's kept win is its kernel's baseline";
  EXPECT_EQ(kept->job_id, win);

  // A harness-measured job of the same kernel asking for the baseline is offered none, and is
  // told why: the number is the custom job's own word.
  const auto measured =
      p.submit(harness_job("mm/harness", gates("baseline")));
  o = p.expect_no_reference_for(measured, "self-reported");
  ASSERT_TRUE(o);
  p.finish(*o, 400, "");

  // The harness job's own result does not become the baseline either way round: the stored
  // baseline is still the custom one (its run was not a kept win), and a custom job asking
  // for the baseline does get that custom number.
  const auto custom_next = p.submit(custom_job("mm/custom-next",
                                               gates("baseline")));
  o = p.offer();
  ASSERT_TRUE(o && o->lease.job_id == custom_next);
  EXPECT_EQ(o->compare.value("kind", ""), "baseline") << o->compare.dump();
  EXPECT_EQ(o->compare.value("median_us", 0.0), 500.0) << o->compare.dump();
  p.finish(*o, 510, "");

  // Nor is a custom parent a reference for a harness-measured child.
  const auto child = p.submit(harness_job(
      "mm/child", "parent: mm/step1\n" + gates("parent")));
  p.expect_no_reference_for(child, "custom job");
}

}  // namespace
}  // namespace kfleet::core
