// The whole CLI, in-process, against a fake kfleetd on port 0.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "../../common/tests/shell_characters.hpp"
#include <nlohmann/json.hpp>

#include "fake_kfleetd.hpp"
#include "kfleet/cli/app.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/jobspec.hpp"
#include "kfleet/testing/temp_dir.hpp"
#include "run_kfleet.hpp"

namespace kfleet::cli {
namespace {

using testing::CannedReply;
using testing::FakeKfleetd;
using testing::RecordedRequest;
using testing::sse_body;
namespace fs = std::filesystem;

constexpr const char* kJobYaml = R"(name: fa-s512-v3/iter1
campaign: fa-s512-v3
target:
  gpu: L4
  regions: [us-west-2, us-east-1]
kernel:
  family: attention
  language: cuda
  sources: [fa.cu]
  entry: fa_s512_v3
)";

using test::Ran;
using test::run_kfleet;

class JobDir : public ::testing::Test {
 protected:
  void SetUp() override {
    write("job.yaml", kJobYaml);
    write("fa.cu", "__global__ void fa_s512_v3() {}\n");
  }
  std::string write(const std::string& name, const std::string& text) {
    return tmp_.write(name, text).string();
  }
  std::string job() const { return (dir_ / "job.yaml").string(); }
  const kfleet::testing::TempDir tmp_{"kfleet-cli"};
  const fs::path dir_ = tmp_.path();
};

nlohmann::json job_json(int id, const std::string& state) {
  return {{"id", id}, {"name", "fa-s512-v3/iter1"}, {"gpu", "L4"},
          {"regions", {"us-west-2", "us-east-1"}}, {"state", state}};
}

CannedReply created(int id) { return {201, "application/json", nlohmann::json{{"job", job_json(id, "queued")}}.dump()}; }

std::string event(int id, const std::string& type, nlohmann::json data) {
  return nlohmann::json{{"id", id}, {"job_id", 12}, {"run_id", 1}, {"seq", id}, {"type", type},
                        {"data", data}}.dump();
}

std::vector<std::string> run_events(const std::string& outcome) {
  return {event(1, "lease.granted", {{"agent_id", 3}, {"region", "us-west-2"}, {"gpu_class", "L4"}, {"attempt", 1}}),
          event(2, "stage.finished", {{"stage", "build"}, {"ok", true}, {"duration_ms", 1200}}),
          event(3, "bench.result", {{"median_us", 696.0}, {"n", 40}, {"rel_stdev_pct", 0.3}}),
          event(4, "verdict", {{"status", outcome}, {"gate", outcome == "rejected" ? "performance" : ""},
                               {"reason", "do not merge: +6.1% (696 µs vs 656 µs)"}}),
          event(5, "job.state", {{"state", outcome}})};
}

TEST(JobYaml, FixtureIsAValidJob) {
  auto p = parse_job_spec(kJobYaml, "job.yaml");
  EXPECT_TRUE(p.ok()) << p.error_text();
}

TEST_F(JobDir, SubmitSendsSpecBundleAndToken) {
  FakeKfleetd server([](const RecordedRequest&) { return created(12); });
  Ran r = run_kfleet({"--server", server.url(), "submit", job(), "--force"},
                     {{"KFLEET_TOKEN", "s3cret"}});
  ASSERT_EQ(r.code, 0) << r.err;
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/api/v1/jobs");
  EXPECT_EQ(reqs[0].authorization, "Bearer s3cret");
  auto body = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(body["spec_yaml"], kJobYaml);
  EXPECT_EQ(body["source_name"], "job.yaml");
  EXPECT_EQ(body["force"], true);
  auto bundle = bundle_from_json(body["bundle"]);
  ASSERT_TRUE(bundle.ok()) << bundle.error().message;
  ASSERT_EQ(bundle->files.size(), 1u);
  EXPECT_EQ(bundle->files[0].path, "fa.cu");
  EXPECT_EQ(bundle->files[0].content, "__global__ void fa_s512_v3() {}\n");
  EXPECT_NE(r.out.find("submitted job 12 fa-s512-v3/iter1 (L4, regions us-west-2, us-east-1)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find(server.url() + "/#/jobs/12"), std::string::npos) << r.out;
}

TEST_F(JobDir, TokenFromEnvironmentAndPriorityInTheYaml) {
  FakeKfleetd server([](const RecordedRequest&) { return created(12); });
  Ran r = run_kfleet({"submit", job(), "--priority", "9"},
                     {{"KFLEET_SERVER", server.url()}, {"KFLEET_TOKEN", "envtok"}});
  ASSERT_EQ(r.code, 0) << r.err;
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].authorization, "Bearer envtok");
  auto spec = parse_job_spec(nlohmann::json::parse(reqs[0].body)["spec_yaml"], "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error_text();
  EXPECT_EQ(spec.spec->priority, 9);
}

TEST_F(JobDir, InvalidJobPrintsIssuesAndSendsNothing) {
  std::string bad = write("bad.yaml", std::string(kJobYaml) + "benchmark: {min_samples: lots}\n");
  FakeKfleetd server([](const RecordedRequest&) { return created(12); });
  Ran r = run_kfleet({"--server", server.url(), "submit", job(), bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(server.requests().empty());  // the valid file is held back too
  EXPECT_NE(r.err.find("bad.yaml:11:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("min_samples"), std::string::npos) << r.err;
}

// nvcc runs its build steps through a shell, a -D value between double quotes: a define that
// would run a command there is refused by `kfleet submit` itself, with its place, and nothing is
// sent (kfleetd and the agent refuse it again).
TEST_F(JobDir, ADefineWithShellSyntaxIsRefusedAndNothingIsSent) {
  std::string bad = write("bad.yaml", std::string(kJobYaml) + "  defines: {TILE: \"64$(id)\"}\n");
  FakeKfleetd server([](const RecordedRequest&) { return created(12); });
  Ran r = run_kfleet({"--server", server.url(), "submit", bad}, {{"KFLEET_TOKEN", "t"}});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(server.requests().empty());
  EXPECT_EQ(r.err, bad + ":11:19: kernel.defines.TILE: '64$(id)' has U+0024 '$', which a shell "
                         "expands, even inside double quotes; a define value may hold only ASCII "
                         "letters, digits and _ @ % + = : . / - (nvcc runs its build steps "
                         "through a shell)\n");
  EXPECT_EQ(r.out, "");
}

// Every refused character: `kfleet submit` names the field and the character, exits 2 and sends
// nothing.
TEST_F(JobDir, EveryShellCharacterIsRefusedByTheCli) {
  FakeKfleetd server([](const RecordedRequest&) { return created(12); });
  for (const auto& c : kfleet::testing::refused_shell_characters()) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"  defines: {TILE: \"64" + c.yaml + "\"}\n", "kernel.defines.TILE: "},
        {"  flags: [\"-DX=1" + c.yaml + "\"]\n", "kernel.flags[0]: "},
        {"  entry: \"k" + c.yaml + "x\"\n", "kernel.entry: "},
    };
    for (const auto& [tail, field] : cases) {
      std::string yaml = kJobYaml;
      if (tail.rfind("  entry:", 0) == 0) yaml.erase(yaml.find("  entry: fa_s512_v3\n"));  // the last line
      std::string bad = write("bad.yaml", yaml + tail);
      Ran r = run_kfleet({"--server", server.url(), "submit", bad}, {{"KFLEET_TOKEN", "t"}});
      EXPECT_EQ(r.code, 2) << c.shown << " " << tail << r.err;
      EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(c.shown), std::string::npos) << r.err;
    }
  }
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(JobDir, MissingSourceIsAUsageError) {
  fs::remove(dir_ / "fa.cu");
  FakeKfleetd server([](const RecordedRequest&) { return created(12); });
  Ran r = run_kfleet({"--server", server.url(), "submit", job()});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(server.requests().empty());
  EXPECT_NE(r.err.find("fa.cu"), std::string::npos) << r.err;
}

class FollowVerdict : public JobDir, public ::testing::WithParamInterface<std::pair<std::string, int>> {};

TEST_P(FollowVerdict, ExitStatusReflectsStreamedVerdict) {
  const auto [outcome, expected] = GetParam();
  FakeKfleetd server([outcome = outcome](const RecordedRequest& r) -> CannedReply {
    if (r.method == "POST") return created(12);
    if (r.target == "/api/v1/jobs/12/events") return {200, "text/event-stream", sse_body(run_events(outcome))};
    return {404, "application/json", R"({"error":{"code":"not_found","message":"no such thing"}})"};
  });
  Ran r = run_kfleet({"--server", server.url(), "submit", job(), "--follow"},
                     {{"KFLEET_TOKEN", "t"}});
  EXPECT_EQ(r.code, expected) << r.out << r.err;
  auto reqs = server.requests();
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].accept, "text/event-stream");
  EXPECT_NE(r.out.find("leased to agent 3 (us-west-2, L4) attempt 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[build] ok 1.2s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[benchmark] median 696.0 µs (n=40, ±0.3%)"), std::string::npos) << r.out;
  std::string upper = outcome == "passed"   ? "PASSED: do not merge"
                      : outcome == "rejected" ? "REJECTED performance: do not merge"
                                              : "ERROR: do not merge";
  EXPECT_NE(r.out.find(upper), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Outcomes, FollowVerdict,
                         ::testing::Values(std::make_pair(std::string("passed"), 0),
                                           std::make_pair(std::string("rejected"), 1),
                                           std::make_pair(std::string("error"), 3)));

// A problem's kernel: --follow's last lines are the verdict, with its marks, and then its
// comparison with kfleet's PyTorch references.
TEST_F(JobDir, FollowEndsWithTheComparisonWithPyTorch) {
  auto evs = run_events("rejected");
  evs[3] = event(4, "verdict", {{"status", "rejected"}, {"gate", "performance"}, {"simulated", true},
                                {"reason", "do not merge: +6.1% (696 µs vs 656 µs)\n0.93x eager [0.92, 0.94], "
                                           "1.41x torch.compile [1.39, 1.43] (mission, simulated)"}});
  FakeKfleetd server([&](const RecordedRequest& r) -> CannedReply {
    if (r.method == "POST") return created(12);
    if (r.target == "/api/v1/jobs/12/events") return {200, "text/event-stream", sse_body(evs)};
    return {404, "application/json", R"({"error":{"code":"not_found","message":"no such thing"}})"};
  });
  Ran r = run_kfleet({"--server", server.url(), "submit", job(), "--follow"}, {{"KFLEET_TOKEN", "t"}});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("REJECTED performance: do not merge: +6.1% (696 µs vs 656 µs) [simulated]\n"
                       "0.93x eager [0.92, 0.94], 1.41x torch.compile [1.39, 1.43] (mission, simulated)\n"),
            std::string::npos) << r.out;
}

TEST_F(JobDir, FollowResumesWithLastEventIdWhenTheStreamDrops) {
  auto all = run_events("rejected");
  std::atomic<int> streams{0};
  FakeKfleetd server([&](const RecordedRequest& r) -> CannedReply {
    if (r.method == "POST") return created(12);
    if (r.target == "/api/v1/jobs/12") return {200, "application/json", nlohmann::json{{"job", job_json(12, "benchmarking")}}.dump()};
    if (streams++ == 0) return {200, "text/event-stream", sse_body({all[0], all[1]}, /*dropped=*/true)};
    return {200, "text/event-stream", sse_body({all[2], all[3], all[4]})};
  });
  Ran r = run_kfleet({"--server", server.url(), "submit", job(), "--follow"},
                     {{"KFLEET_TOKEN", "t"}});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  std::vector<RecordedRequest> sse;
  for (auto& q : server.requests())
    if (q.target == "/api/v1/jobs/12/events") sse.push_back(q);
  ASSERT_EQ(sse.size(), 2u);
  EXPECT_EQ(sse[0].last_event_id, "");
  EXPECT_EQ(sse[1].last_event_id, "2");
}

TEST_F(JobDir, FollowAsksForTheJobWhenTheStreamEndsWithoutItsState) {
  FakeKfleetd server([](const RecordedRequest& r) -> CannedReply {
    if (r.method == "POST") return created(12);
    if (r.target == "/api/v1/jobs/12/events")
      return {200, "text/event-stream", sse_body({event(1, "job.state", {{"state", "queued"}})})};
    auto j = job_json(12, "cancelled");
    j["state_reason"] = "cancelled by token:abc";
    return {200, "application/json", nlohmann::json{{"job", j}}.dump()};
  });
  Ran r = run_kfleet({"--server", server.url(), "submit", job(), "--follow"},
                     {{"KFLEET_TOKEN", "t"}});
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  EXPECT_NE(r.out.find("cancelled: cancelled by token:abc"), std::string::npos) << r.out;
}

TEST_F(JobDir, DuplicateIsReportedAndWaitUsesItsVerdict) {
  FakeKfleetd server([](const RecordedRequest& r) -> CannedReply {
    auto old = job_json(7, "rejected");
    old["verdict"] = {{"outcome", "rejected"}, {"gate", "performance"}, {"reason", "+6.1%"}};
    if (r.method == "POST") return {200, "application/json", nlohmann::json{{"job", old}, {"duplicate_of", 7}}.dump()};
    if (r.target == "/api/v1/jobs/7") return {200, "application/json", nlohmann::json{{"job", old}}.dump()};
    return {404, "application/json", "{}"};
  });
  Ran r = run_kfleet({"--server", server.url(), "submit", job(), "--wait"},
                     {{"KFLEET_TOKEN", "t"}});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("identical to job 7 (verdict rejected performance): not run again; use "
                       "--force to run it anyway"), std::string::npos) << r.out;
}

TEST_F(JobDir, WaitPollsUntilTheJobEnds) {
  std::atomic<int> polls{0};
  FakeKfleetd server([&](const RecordedRequest& r) -> CannedReply {
    if (r.method == "POST") return created(12);
    auto j = job_json(12, ++polls < 3 ? "benchmarking" : "cancelled");
    return {200, "application/json", nlohmann::json{{"job", j}}.dump()};
  });
  Ran r = run_kfleet({"--server", server.url(), "submit", job(), "--wait"},
                     {{"KFLEET_TOKEN", "t"}});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_EQ(polls.load(), 3);
}

TEST(Errors, UnreachableServerSaysHowToFixIt) {
  std::string url;
  { FakeKfleetd gone([](const RecordedRequest&) { return CannedReply{}; }); url = gone.url(); }
  Ran r = run_kfleet({"--server", url, "agents"});
  EXPECT_EQ(r.code, 5);
  EXPECT_EQ(r.err.rfind("kfleet: cannot reach kfleetd at " + url + " (connection refused)", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("start it with `kfleetd` or pass --server"), std::string::npos) << r.err;
}

TEST(Errors, RefusedTokenAndUnknownFlag) {
  FakeKfleetd server([](const RecordedRequest&) {
    return CannedReply{401, "application/json", R"({"error":{"code":"unauthorized","message":"bad token"}})"};
  });
  Ran r = run_kfleet({"--server", server.url(), "cancel", "3"});
  EXPECT_EQ(r.code, 5);
  EXPECT_NE(r.err.find("kfleetd refused the token: set KFLEET_TOKEN or --token-file"), std::string::npos) << r.err;
  Ran bad = run_kfleet({"--server", server.url(), "agents", "--bogus"});
  EXPECT_EQ(bad.code, 2);
}

TEST(Commands, StatusTableAndResultsJson) {
  FakeKfleetd server([](const RecordedRequest& r) -> CannedReply {
    if (r.target.rfind("/api/v1/jobs?", 0) == 0)
      return {200, "application/json", nlohmann::json{{"jobs", {job_json(12, "waiting_capacity")}}}.dump()};
    if (r.target.rfind("/api/v1/results", 0) == 0)
      return {200, "application/json", R"({"results":[{"run":{"id":9},"job":{"id":12}}]})"};
    return {404, "application/json", R"({"error":{"code":"not_found","message":"no such job 99"}})"};
  });
  Ran status = run_kfleet({"--server", server.url(), "status", "--state", "waiting_capacity", "--limit", "5"});
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_NE(status.out.find("waiting_capacity"), std::string::npos) << status.out;
  EXPECT_EQ(server.requests().back().target, "/api/v1/jobs?limit=5&state=waiting_capacity");
  Ran results = run_kfleet({"--server", server.url(), "results", "--json"});
  EXPECT_EQ(results.code, 0);
  EXPECT_EQ(nlohmann::json::parse(results.out)["results"][0]["run"]["id"], 9);
  Ran missing = run_kfleet({"--server", server.url(), "status", "99"});
  EXPECT_EQ(missing.code, 5);
  EXPECT_NE(missing.err.find("no such job 99"), std::string::npos);
  Ran bad_state = run_kfleet({"--server", server.url(), "status", "--state", "sleeping"});
  EXPECT_EQ(bad_state.code, 2);
}

TEST(Commands, AgentsShowsTheLiveFleetByDefaultAndGathersEveryPage) {
  auto agent = [](int id, const char* state) {
    return nlohmann::json{{"id", id}, {"name", "a" + std::to_string(id)}, {"region", "r"},
                          {"backend", "simulated"}, {"state", state}, {"gpus", nlohmann::json::array()},
                          {"last_seen_ms", 0}, {"current_run_id", 0}};
  };
  FakeKfleetd server([&](const RecordedRequest& r) -> CannedReply {
    if (r.target.find("after=2") == std::string::npos)  // the first page, and it says more follow
      return {200, "application/json",
              nlohmann::json{{"agents", {agent(1, "idle"), agent(2, "busy")}},
                             {"blocks", nlohmann::json::array()}, {"next_after", 2}}.dump()};
    return {200, "application/json",
            nlohmann::json{{"agents", {agent(7, "lost")}}, {"blocks", nlohmann::json::array()}}.dump()};
  });
  Ran live = run_kfleet({"--server", server.url(), "agents", "--json"});
  ASSERT_EQ(live.code, 0) << live.err;
  auto body = nlohmann::json::parse(live.out);
  ASSERT_EQ(body["agents"].size(), 3u) << live.out;
  EXPECT_EQ(body["agents"][2]["id"], 7);
  EXPECT_FALSE(body.contains("next_after"));
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].target, "/api/v1/agents?limit=1000");  // no state: the server's live default
  EXPECT_EQ(reqs[1].target, "/api/v1/agents?limit=1000&after=2");

  EXPECT_EQ(run_kfleet({"--server", server.url(), "agents", "--all"}).code, 0);
  EXPECT_EQ(server.requests()[2].target, "/api/v1/agents?limit=1000&state=all");
  EXPECT_EQ(run_kfleet({"--server", server.url(), "agents", "--state", "lost,retired"}).code, 0);
  EXPECT_EQ(server.requests()[4].target, "/api/v1/agents?limit=1000&state=lost,retired");
  EXPECT_EQ(run_kfleet({"--server", server.url(), "agents", "--state", "gone"}).code, 2);
  EXPECT_EQ(run_kfleet({"--server", server.url(), "agents", "--all", "--state", "lost"}).code, 2);
}

TEST(Commands, LogsPrintsARunsLinesAndFollowsItsStream) {
  FakeKfleetd server([](const RecordedRequest& r) -> CannedReply {
    auto build_log = event(7, "log", {{"stage", "build"}, {"stream", "stdout"}, {"text", "ptxas info: 96 registers"}});
    if (r.target.rfind("/api/v1/runs/4/events?", 0) == 0)
      return {200, "application/json", R"({"events":[)" + build_log + "]}"};
    if (r.target == "/api/v1/runs/4/events")
      return {200, "text/event-stream", sse_body({build_log, event(8, "verdict", {{"outcome", "passed"}})})};
    return {404, "application/json", R"({"error":{"code":"not_found","message":"no such run"}})"};
  });
  Ran once = run_kfleet({"--server", server.url(), "logs", "4"});
  EXPECT_EQ(once.code, 0) << once.err;
  EXPECT_EQ(once.out, "[build] ptxas info: 96 registers\n");
  Ran live = run_kfleet({"--server", server.url(), "logs", "4", "--follow"});
  EXPECT_EQ(live.code, 0) << live.err;
  EXPECT_EQ(live.out, "[build] ptxas info: 96 registers\nPASSED\n");
  EXPECT_EQ(server.requests().back().accept, "text/event-stream");
}

TEST(Commands, UsageErrorsExitTwo) {
  EXPECT_EQ(run_kfleet({"--bogus"}).code, 2);
  EXPECT_NE(run_kfleet({"--bogus", "agents"}).err.find("--bogus"), std::string::npos);
  EXPECT_EQ(run_kfleet({}).code, 2);
  EXPECT_EQ(run_kfleet({"submit", "x.yaml", "--wait", "--follow"}).code, 2);
  Ran help = run_kfleet({"status", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("kfleet status 12"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace kfleet::cli
