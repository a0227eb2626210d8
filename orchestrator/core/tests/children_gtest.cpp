// A child submitted as parent + change, in the control plane: each refusal says what to do
// instead (a parent that does not exist or is in no campaign, another campaign or parent name,
// a parent that is not the current best, a child identical to its parent, a change already
// tried, with what became of it), and what lets it through (allow_non_best, force, an earlier
// try that errored or was cancelled).
#include <gtest/gtest.h>

#include "kfleet/core/fleet.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

// (The ch_ names: the core tests build in unity batches, where another file's helpers share
// this anonymous namespace.)
// How a job is submitted: as a child of `parent_job` (named `parent`) when not 0.
struct ChTry {
  std::int64_t parent_job = 0;
  std::string parent, campaign = "fa";
  bool allow_non_best = false, force = false;
};

struct ChPlane : test::Plane {
  std::int64_t agent = enrol_agent("a", "L4", /*simulated=*/false).agent_id;

  // Submits `name` with k.cu saying `body`: the job, or the refusal.
  std::variant<SubmitResult, SubmitError> ch_submit(const std::string& name, const std::string& body,
                                                    const ChTry& t = {}) {
    Bundle b;
    b.files.push_back({"k.cu", body});
    SubmitRequest sr;
    sr.spec_yaml = "name: " + name + "\n" + (t.campaign.empty() ? "" : "campaign: " + t.campaign + "\n") +
                   (t.parent.empty() ? "" : "parent: " + t.parent + "\n") +
                   "target: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n";
    sr.bundle = bundle_to_json(b);
    sr.submitted_by = "carol";
    sr.parent_job = t.parent_job;
    sr.allow_non_best = t.allow_non_best;
    sr.force = t.force;
    return cp->submit(sr);
  }
  std::int64_t ch_ok(const std::string& name, const std::string& body, const ChTry& t = {}) {
    auto r = ch_submit(name, body, t);
    if (auto* e = std::get_if<SubmitError>(&r)) {
      ADD_FAILURE() << name << ": " << e->error.message;
      return 0;
    }
    return std::get<SubmitResult>(r).job.id;
  }
  SubmitError ch_refused(const std::string& name, const std::string& body, const ChTry& t) {
    auto r = ch_submit(name, body, t);
    if (auto* e = std::get_if<SubmitError>(&r)) return *e;
    ADD_FAILURE() << name << " was accepted";
    return SubmitError{make_error(Errc::internal, ""), {}, "", nullptr};
  }
  void ch_run(std::int64_t job, RunOutcome o, const std::string& gate, const std::string& perf,
              std::optional<double> delta, const std::string& reason) {
    Verdict v = test::verdict_of(o, gate, perf, 10, reason);
    v.delta_pct = delta;
    EXPECT_TRUE(run_to_verdict(job, agent, v).ok());
  }
};

void ch_expect(const SubmitError& e, Errc code, const std::string& words) {
  EXPECT_EQ(e.error.code, code) << e.error.message;
  EXPECT_NE(e.error.message.find(words), std::string::npos) << e.error.message;
}

TEST(Children, AParentThatCannotHaveThisChildSaysWhatToSetInstead) {
  ChPlane p;
  ch_expect(p.ch_refused("fa/c", "// c\n", {.parent_job = 99, .parent = "fa/root"}), Errc::not_found,
            "parent_job 99 does not exist: read the campaign");
  const auto loose = p.ch_ok("loose", "// loose\n", {.campaign = ""});
  ch_expect(p.ch_refused("fa/c", "// c\n", {.parent_job = loose, .parent = "loose"}), Errc::invalid_argument,
            "(loose) names no campaign");
  const auto root = p.ch_ok("fa/root", "// root\n");
  ch_expect(p.ch_refused("gb/c", "// c\n", {.parent_job = root, .parent = "fa/root", .campaign = "gb"}),
            Errc::invalid_argument, "the child names campaign 'gb' but its parent job " + std::to_string(root) +
                                        " (fa/root) is in campaign 'fa': set campaign: fa");
  ch_expect(p.ch_refused("fa/c", "// c\n", {.parent_job = root, .parent = "fa/other"}), Errc::invalid_argument,
            "set parent: fa/root so that compare_to: parent measures against it");
}

TEST(Children, OnlyTheCurrentBestHasChildrenUnlessABranchIsMeant) {
  ChPlane p;
  const auto root = p.ch_ok("fa/root", "// root\n");
  const ChTry of_root{.parent_job = root, .parent = "fa/root"};
  const auto early = p.ch_refused("fa/early", "// early\n", of_root);
  ch_expect(early, Errc::conflict, "the campaign has no current best yet (no root job has passed)");
  EXPECT_EQ(early.code, "not_current_best");

  p.ch_run(root, RunOutcome::passed, "", "", std::nullopt, "measured");
  const auto win = p.ch_ok("fa/win", "// win\n", of_root);  // the root is the best
  p.ch_run(win, RunOutcome::passed, "", "improved", -5, "-5%");
  const auto stale = p.ch_refused("fa/stale", "// stale\n", of_root);
  ch_expect(stale, Errc::conflict,
            "job " + std::to_string(root) + " (fa/root) is not the current best of campaign fa; job " +
                std::to_string(win) + " (fa/win) is: submit a child of job " + std::to_string(win) +
                ", or pass allow_non_best: true to branch from job " + std::to_string(root) + " on purpose");
  EXPECT_EQ(stale.code, "not_current_best");
  EXPECT_EQ(stale.details["parent_job"], root);
  EXPECT_EQ(stale.details["current_best"]["job_id"], win);

  ChTry branch = of_root;
  branch.allow_non_best = true;
  EXPECT_NE(p.ch_ok("fa/branch", "// branch\n", branch), 0);
  EXPECT_NE(p.ch_ok("fa/next", "// next\n", {.parent_job = win, .parent = "fa/win"}), 0);
}

TEST(Children, AChildMustChangeSomethingAndNotRepeatAnEarlierTry) {
  ChPlane p;
  const auto root = p.ch_ok("fa/root", "// root\n");
  p.ch_run(root, RunOutcome::passed, "", "", std::nullopt, "measured");
  const ChTry of_root{.parent_job = root, .parent = "fa/root"};
  ch_expect(p.ch_refused("fa/same-as-root", "// root\n", of_root), Errc::invalid_argument,
            "the child is identical to its parent job " + std::to_string(root) +
                " (fa/root): change one thing (a source file, a define or a flag)");

  // What became of the earlier try, in its words: state, gate, comparison, the reason's first line.
  auto again = [&](const std::string& body, const std::string& words) {
    const auto e = p.ch_refused("fa/again", body, of_root);
    ch_expect(e, Errc::conflict, words);
    EXPECT_EQ(e.code, "already_tried");
    EXPECT_NE(e.error.message.find("pass force: true to run it again"), std::string::npos);
  };
  const auto queued = p.ch_ok("fa/queued", "// queued\n", of_root);
  again("// queued\n", "job " + std::to_string(queued) + " (fa/queued) is the same job (queued)");
  const auto wrong = p.ch_ok("fa/wrong", "// wrong\n", of_root);
  p.ch_run(wrong, RunOutcome::rejected, "correctness", "", std::nullopt, "2 of 16 wrong\nfirst at 3");
  again("// wrong\n", "(rejected at correctness: 2 of 16 wrong);");
  const auto slower = p.ch_ok("fa/slower", "// slower\n", of_root);
  p.ch_run(slower, RunOutcome::rejected, "performance", "regressed", 3.14, "+3.1%");
  again("// slower\n", "(rejected at performance, regressed +3.1%: +3.1%);");
  const auto gateless = p.ch_ok("fa/gateless", "// gateless\n", of_root);
  p.ch_run(gateless, RunOutcome::rejected, "", "", std::nullopt, "no gate named");
  again("// gateless\n", "(rejected: no gate named);");
  const auto same = p.ch_ok("fa/flat", "// flat\n", of_root);
  p.ch_run(same, RunOutcome::passed, "", "same", std::nullopt, "");
  again("// flat\n", "(passed, same);");

  // force runs it again; so does a try that errored or was cancelled, without it.
  ChTry forced = of_root;
  forced.force = true;
  EXPECT_NE(p.ch_ok("fa/wrong-again", "// wrong\n", forced), 0);
  const auto broke = p.ch_ok("fa/broke", "// broke\n", of_root);
  p.ch_run(broke, RunOutcome::error, "", "", std::nullopt, "the agent lost its GPU");
  EXPECT_NE(p.ch_ok("fa/broke-again", "// broke\n", of_root), 0);
  const auto dropped = p.ch_ok("fa/dropped", "// dropped\n", of_root);
  ASSERT_TRUE(p.cp->cancel(dropped, "carol").ok());
  EXPECT_NE(p.ch_ok("fa/dropped-again", "// dropped\n", of_root), 0);
}

}  // namespace
}  // namespace kfleet::core
