// A campaign's view in the control plane, no HTTP: the first passed root is the best until a
// child improves on it; every other finished child is a rejection whose reason says why (not an
// improvement, or the gate that rejected it); unfinished jobs are pending; and the no-repeat map
// lists each change tried from the current best, without its file diffs.
#include <gtest/gtest.h>

#include "kfleet/core/fleet.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

// (The cv_ names: the core tests build in unity batches, where another file's helpers share
// this anonymous namespace.)
struct CvPlane : test::Plane {
  std::int64_t agent = enrol_agent("a", "L4", /*simulated=*/false).agent_id;

  // Submits `name` of campaign fa (a child of job `parent_job`, named `parent`, when not 0), its
  // k.cu saying `body`.
  std::int64_t cv_submit(const std::string& name, std::int64_t parent_job, const std::string& parent,
                         const std::string& body) {
    Bundle b;
    b.files.push_back({"k.cu", body});
    SubmitRequest sr;
    sr.spec_yaml = "name: " + name + "\ncampaign: fa\n" + (parent_job ? "parent: " + parent + "\n" : "") +
                   "target: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n";
    sr.bundle = bundle_to_json(b);
    sr.submitted_by = "carol";
    sr.parent_job = parent_job;
    sr.allow_non_best = true;
    auto r = cp->submit(sr);
    if (auto* e = std::get_if<SubmitError>(&r)) {
      ADD_FAILURE() << e->error.message;
      return 0;
    }
    return std::get<SubmitResult>(r).job.id;
  }
  void cv_run(std::int64_t job, const Verdict& v) { EXPECT_TRUE(run_to_verdict(job, agent, v).ok()); }
};

Verdict cv_verdict(RunOutcome o, const std::string& gate, const std::string& perf, const std::string& reason) {
  return test::verdict_of(o, gate, perf, 90, reason);
}

nlohmann::json cv_by_name(const nlohmann::json& list, const std::string& name) {
  for (const auto& e : list)
    if (e["name"] == name) return e;
  ADD_FAILURE() << "no " << name << " in " << list.dump();
  return nlohmann::json::object();
}

TEST(Campaigns, KeptWinsRejectionsAndTheNoRepeatMap) {
  CvPlane p;
  EXPECT_EQ(campaign_view(*p.st, "fa").error().code, Errc::not_found);

  const auto root = p.cv_submit("fa/root", 0, "", "// root\n");
  p.cv_run(root, cv_verdict(RunOutcome::passed, "", "", "measured"));
  const auto broken_root = p.cv_submit("fa/root2", 0, "", "// root 2\n");
  p.cv_run(broken_root, cv_verdict(RunOutcome::rejected, "correctness", "", "3 of 16 wrong"));

  auto first = campaign_view(*p.st, "fa");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)["current_best"]["job_id"], root) << "the first passed root";
  EXPECT_EQ((*first)["roots"].size(), 2u);
  EXPECT_FALSE((*first)["roots"][0].contains("parent_job_id")) << "a root is no child: " << (*first)["roots"].dump();
  EXPECT_TRUE((*first)["no_repeat"].empty()) << "nothing tried from the root yet";

  Verdict win = cv_verdict(RunOutcome::passed, "", "improved", "-10.0%");
  win.baseline_us = 100;
  win.delta_pct = -10;
  win.ci_low_pct = -11;
  win.ci_high_pct = -9;
  const auto kept = p.cv_submit("fa/win", root, "fa/root", "// root\n// faster\n");
  p.cv_run(kept, win);
  const auto same = p.cv_submit("fa/same", kept, "fa/win", "// same\n");
  p.cv_run(same, cv_verdict(RunOutcome::passed, "", "same", "+0.1%"));
  const auto uncompared = p.cv_submit("fa/uncompared", kept, "fa/win", "// uncompared\n");
  p.cv_run(uncompared, cv_verdict(RunOutcome::passed, "", "", "timed"));
  const auto wrong = p.cv_submit("fa/wrong", kept, "fa/win", "// wrong\n");
  p.cv_run(wrong, cv_verdict(RunOutcome::rejected, "correctness", "", "2 of 16 wrong"));
  const auto failed = p.cv_submit("fa/failed", kept, "fa/win", "// failed\n");
  // An error is no rejection at a gate, whatever stage it stopped in, and no correct kernel
  // for fast_p, whatever comparison it carries.
  Verdict broke = cv_verdict(RunOutcome::error, "build", "", "the build ran out of time");
  BaselineComparison eager;
  eager.baseline = "eager";
  eager.speedup = 2.0;
  broke.versus = {eager};
  p.cv_run(failed, broke);
  const auto queued = p.cv_submit("fa/queued", kept, "fa/win", "// queued\n");

  auto v = campaign_view(*p.st, "fa");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ((*v)["jobs"], 8);
  const auto& best = (*v)["current_best"];
  EXPECT_EQ(best["job_id"], kept);
  EXPECT_EQ(best["median_us"], 90);
  EXPECT_EQ(best["baseline_us"], 100);
  EXPECT_EQ(best["delta_pct"], -10);
  EXPECT_EQ(best["ci_low_pct"], -11);
  EXPECT_EQ(best["ci_high_pct"], -9);
  EXPECT_EQ(best["parent_job_id"], root);
  EXPECT_NE(best["change"].get<std::string>().find("k.cu +1"), std::string::npos) << best.dump();
  ASSERT_EQ((*v)["kept_wins"].size(), 1u);
  EXPECT_EQ((*v)["kept_wins"][0]["job_id"], kept);

  const auto& rej = (*v)["rejections"];
  ASSERT_EQ(rej.size(), 4u) << rej.dump();
  EXPECT_EQ(cv_by_name(rej, "fa/same")["reason"], "same, not an improvement: +0.1%");
  EXPECT_EQ(cv_by_name(rej, "fa/uncompared")["reason"], "no comparison, not an improvement: timed");
  EXPECT_EQ(cv_by_name(rej, "fa/wrong")["reason"], "rejected at correctness: 2 of 16 wrong");
  EXPECT_EQ(cv_by_name(rej, "fa/failed")["reason"], "the build ran out of time");
  const auto& fast = (*v)["fast_p"];
  EXPECT_EQ(fast["kernels"], 7) << "every finished job: " << fast.dump();
  EXPECT_EQ(fast["baselines"][0]["timed"], 1) << fast.dump();
  EXPECT_EQ(fast["baselines"][0]["p"][0]["fast"], 0) << "an error is not a correct kernel: " << fast.dump();
  const auto uncompared_entry = cv_by_name(rej, "fa/uncompared");
  EXPECT_FALSE(uncompared_entry.contains("baseline_us") || uncompared_entry.contains("delta_pct") ||
               uncompared_entry.contains("ci_low_pct") || uncompared_entry.contains("ci_high_pct"))
      << uncompared_entry.dump();
  ASSERT_EQ((*v)["pending"].size(), 1u);
  EXPECT_EQ((*v)["pending"][0]["job_id"], queued);
  EXPECT_FALSE((*v)["pending"][0].contains("perf")) << "no verdict yet";

  // Every change tried from the current best, in order, each with what became of it; its
  // files say what changed but carry no diff.
  const auto& tried = (*v)["no_repeat"];
  ASSERT_EQ(tried.size(), 5u) << tried.dump();
  EXPECT_EQ(tried[0]["job_id"], same);
  EXPECT_EQ(tried[0]["perf"], "same");
  EXPECT_EQ(tried[0]["change_summary"], tried[0]["change"]["summary"]);
  ASSERT_TRUE(tried[0]["change"]["files"].is_array()) << tried[0].dump();
  ASSERT_FALSE(tried[0]["change"]["files"].empty());
  for (const auto& f : tried[0]["change"]["files"]) {
    EXPECT_EQ(f["path"], "k.cu");
    EXPECT_FALSE(f.contains("diff")) << f.dump();
  }
  EXPECT_EQ(tried[4]["job_id"], queued);
}

}  // namespace
}  // namespace kfleet::core
