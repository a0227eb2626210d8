// Each call the agent makes to kfleetd, against a stand-in kfleetd on loopback that resets the
// connection, answers 503, or stalls past the client's timeout: the fleet's failures. A whole
// agent (real HTTP transport, simulated GPU) runs a job through it. After each fault the run
// goes on, or is given back and requeued; it never ends in `error`.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "canned_http_server.hpp"
#include "kfleet/agent/agent.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/testing/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;
using kfleet::testing::CannedHttpServer;
using kfleet::testing::CannedReply;
using kfleet::testing::SeenRequest;

namespace {

enum class Fault { reset, unavailable, stall };

const char* fault_name(Fault f) {
  switch (f) {
    case Fault::reset: return "reset";
    case Fault::unavailable: return "503";
    case Fault::stall: return "stall";
  }
  return "?";
}

// The client gives up on a stalled call after this; the stand-in stalls longer.
constexpr std::chrono::milliseconds kTimeout{400};
constexpr std::chrono::milliseconds kStall{1500};
constexpr std::chrono::milliseconds kLeaseTtl{1500};

// A kfleetd stand-in that knows one job. The first `fault_count` requests of the call under
// test get `fault`; everything else is answered as kfleetd would. A lease poll while the job
// has a run out means that run was given back: it is requeued as a new run (attempt + 1).
class StandIn {
 public:
  StandIn(std::string call, Fault fault, int fault_count)
      : call_(std::move(call)), fault_(fault), faults_left_(fault_count),
        server_([this](const SeenRequest& r) { return answer(r); }) {
    bundle_.files = {{"k.cu", "__global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n"}};
  }

  std::string url() const { return server_.url(); }
  std::atomic<bool> bad_spec{false};  // leases carry a spec this agent cannot read

  struct Finish {
    std::int64_t run;
    Verdict verdict;
  };
  std::vector<Finish> finishes() {
    std::lock_guard<std::mutex> l(mu_);
    return finishes_;
  }
  int faults_served() {
    std::lock_guard<std::mutex> l(mu_);
    return faults_served_;
  }
  int runs_granted() {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(next_run_ - 10);
  }
  // Every run's stored events: seq 1..n with no gap.
  bool events_gap_free() {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [run, seqs] : events_) {
      std::int64_t want = 1;
      for (auto s : seqs)
        if (s != want++) return false;
    }
    return true;
  }

 private:
  static std::string call_of(const SeenRequest& r) {
    if (r.target == "/api/v1/agents/enrol") return "enrol";
    if (r.target.find("/lease") != std::string::npos) return "lease";
    if (r.target.find("/heartbeat") != std::string::npos) return "heartbeat";
    if (r.target.find("/events") != std::string::npos) return "upload_events";
    if (r.target.find("/finish") != std::string::npos) return "finish";
    if (r.target.rfind("/api/v1/bundles/", 0) == 0) return "fetch_bundle";
    return "";
  }

  CannedReply answer(const SeenRequest& r) {
    const std::string call = call_of(r);
    std::lock_guard<std::mutex> l(mu_);
    // Heartbeats that renew the run's lease are the ones that matter; idle ones pass.
    const bool renewal = call == "heartbeat" && r.body.find("run_id") != std::string::npos;
    if (call == call_ && faults_left_ > 0 && (call != "heartbeat" || renewal)) {
      --faults_left_;
      ++faults_served_;
      CannedReply f;
      switch (fault_) {
        case Fault::reset: f.reset = true; break;
        case Fault::unavailable:
          f.status = 503;
          f.body = R"({"error":{"code":"unavailable","message":"kfleetd is restarting"}})";
          break;
        case Fault::stall: f.stall = kStall; break;
      }
      return f;
    }
    if (call == "enrol")
      return {201, nlohmann::json{{"agent_id", 1}, {"token", "agent-token"}, {"heartbeat_ms", 100},
                                  {"lease_ttl_ms", kLeaseTtl.count()}}.dump()};
    if (call == "lease") {
      if (done_) return {204, ""};
      // As kfleetd: an agent holding a run is refused more work until the run ends or its
      // lease lapses (a given-back run is never renewed); then the job is requeued.
      if (current_run_ != 0 && std::chrono::steady_clock::now() - renewed_ < kLeaseTtl)
        return {409, R"({"error":{"code":"conflict","message":"agent 1 holds a run"}})"};
      current_run_ = next_run_++;
      renewed_ = std::chrono::steady_clock::now();
      nlohmann::json spec = to_json(spec_());
      if (bad_spec) spec["kernel"]["family"] = "from-a-newer-kfleetd";
      return {200, nlohmann::json{{"lease", {{"run_id", current_run_}, {"job_id", 1},
                                             {"fencing_token", current_run_}, {"ttl_ms", kLeaseTtl.count()},
                                             {"attempt", current_run_ - 9},
                                             {"bundle_hash", bundle_.hash()}, {"spec", spec}}}}
                       .dump()};
    }
    if (call == "heartbeat") {
      auto body = nlohmann::json::parse(r.body, nullptr, false);
      const auto run = body.is_object() ? body.value("run_id", std::int64_t{0}) : 0;
      const bool valid = run == 0 || run == current_run_;
      if (run != 0 && valid) renewed_ = std::chrono::steady_clock::now();
      return {200, nlohmann::json{{"lease_valid", valid}, {"cancel", false}}.dump()};
    }
    if (call == "upload_events") {
      const auto run = std::stoll(r.target.substr(std::string("/api/v1/runs/").size()));
      auto body = nlohmann::json::parse(r.body);
      if (body["fencing_token"].get<std::int64_t>() != current_run_)
        return {409, R"({"error":{"code":"conflict","message":"stale fencing token"}})"};
      auto& seqs = events_[run];
      for (const auto& e : body["events"]) seqs.insert(e["seq"].get<std::int64_t>());
      std::int64_t contiguous = 0;
      while (seqs.count(contiguous + 1)) ++contiguous;
      return {200, nlohmann::json{{"contiguous", contiguous}}.dump()};
    }
    if (call == "finish") {
      const auto run = std::stoll(r.target.substr(std::string("/api/v1/runs/").size()));
      auto body = nlohmann::json::parse(r.body);
      if (body["fencing_token"].get<std::int64_t>() != current_run_ || done_)
        return {409, R"({"error":{"code":"conflict","message":"the run already ended"}})"};
      finishes_.push_back({run, verdict_from_json(body["verdict"])});
      done_ = true;
      return {200, "{}"};
    }
    if (call == "fetch_bundle") {
      if (r.target != "/api/v1/bundles/" + bundle_.hash())
        return {404, R"({"error":{"code":"not_found","message":"no such bundle"}})"};
      return {200, bundle_to_json(bundle_).dump()};
    }
    return {404, R"({"error":{"code":"not_found","message":"no route"}})"};
  }

  static JobSpec spec_() {
    auto p = parse_job_spec(
        "name: faults/one\ntarget:\n  gpu: L4\n"
        "kernel:\n  family: attention\n  language: cuda\n  sources: [k.cu]\n  entry: k\n"
        "gates:\n  resources: {max_registers: 128}\n  correctness:\n    dtype: fp16\n"
        "    cases:\n      - {name: small, shape: {B: 1, H: 2, S: 128, D: 64}, seeds: [0]}\n"
        "    tolerance: {atol: 1.0e-3, rtol: 1.0e-3}\n"
        "simulate: {time_us: 100, stage_ms: 100}\n",
        "job.yaml");
    EXPECT_TRUE(p.ok()) << p.error_text();
    return p.spec.value_or(JobSpec{});
  }

  std::string call_;
  Fault fault_;
  std::mutex mu_;
  int faults_left_;
  int faults_served_ = 0;
  Bundle bundle_;
  std::int64_t next_run_ = 10, current_run_ = 0;
  bool done_ = false;
  std::chrono::steady_clock::time_point renewed_;
  std::vector<Finish> finishes_;
  std::map<std::int64_t, std::set<std::int64_t>> events_;
  CannedHttpServer server_;  // last: its threads stop before the state above goes
};

struct Case {
  std::string call;
  Fault fault;
  int count;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.call << " " << fault_name(c.fault) << " x" << c.count;
}

// Runs an agent (work dir `work`) against the stand-in until `done` holds (at most 20 s), then
// shuts it down: its exit status. give_up_ms: its fleet-retry budget (0: none).
int run_agent_until(StandIn& kfleetd, const std::string& work, int retry_max_ms, int give_up_ms,
                    const std::function<bool()>& done) {
  AgentConfig cfg;
  cfg.name = "faulty";
  cfg.work_dir = work;
  cfg.lease_wait_ms = 100;
  cfg.fleet_retry = {std::chrono::milliseconds(50), std::chrono::milliseconds(retry_max_ms),
                     std::chrono::milliseconds(give_up_ms)};
  TransportTimeouts t{kTimeout, kTimeout, kTimeout, kTimeout};
  Agent agent(cfg,
              make_http_transport(kfleetd.url(), "enrol-token",
                                  HttpOptions{std::chrono::milliseconds(1000), kTimeout}, t),
              make_simulated_backend({}), std::make_shared<SystemClock>());
  int rc = -1;
  std::thread runner([&] { rc = agent.run(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a condition
  agent.request_shutdown();
  runner.join();
  return rc;
}

class TransportFaults : public ::testing::TestWithParam<Case> {};

TEST_P(TransportFaults, TheRunGoesOnOrIsRequeuedNeverError) {
  const Case c = GetParam();
  StandIn kfleetd(c.call, c.fault, c.count);
  const kfleet::testing::TempDir work("kfleet-faults");
  const int rc = run_agent_until(kfleetd, work.str(), 200, 0, [&] { return !kfleetd.finishes().empty(); });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(kfleetd.faults_served(), c.count) << "the fault was never exercised";
  auto fin = kfleetd.finishes();
  ASSERT_EQ(fin.size(), 1u) << c.call << "/" << fault_name(c.fault) << ": the run never finished";
  EXPECT_EQ(fin[0].verdict.outcome, RunOutcome::passed)
      << c.call << "/" << fault_name(c.fault) << ": " << fin[0].verdict.reason;
  EXPECT_TRUE(kfleetd.events_gap_free());
}

// A fetch that keeps failing for longer than the retry budget: the agent gives the run back
// (no verdict; kfleetd requeues it once its lease lapses) and the next attempt passes.
TEST(TransportFaultsPersisting, AFetchFailingPastTheBudgetGivesTheRunBackAndItIsRequeued) {
  StandIn kfleetd("fetch_bundle", Fault::unavailable, 6);
  const kfleet::testing::TempDir work("kfleet-faults");
  const int rc = run_agent_until(kfleetd, work.str(), 100, 400, [&] { return !kfleetd.finishes().empty(); });
  EXPECT_EQ(rc, 0);
  auto fin = kfleetd.finishes();
  ASSERT_EQ(fin.size(), 1u) << "the requeued run never finished";
  EXPECT_GE(kfleetd.runs_granted(), 2) << "the first run was not given back";
  EXPECT_NE(fin[0].run, 10) << "the run whose fetch kept failing must not report a verdict";
  EXPECT_EQ(fin[0].verdict.outcome, RunOutcome::passed) << fin[0].verdict.reason;
}

// The agent's own failures before any stage: runs given back, none reported, the job
// requeued again and again (kfleetd ends it as `agent lost` after its last attempt).
void expect_given_back_not_reported(StandIn& kfleetd, const std::string& work) {
  const int rc = run_agent_until(kfleetd, work, 100, 200, [&] { return kfleetd.runs_granted() >= 2; });
  EXPECT_EQ(rc, 0);
  EXPECT_GE(kfleetd.runs_granted(), 2) << "the first run was not given back";
  EXPECT_TRUE(kfleetd.finishes().empty()) << "a verdict for the fleet's failure: "
                                          << kfleetd.finishes()[0].verdict.reason;
}

TEST(AgentOwnFailures, ASpoolThatCannotBeWrittenGivesTheRunBack) {
  StandIn kfleetd("", Fault::reset, 0);
  const kfleet::testing::TempDir work("kfleet-faults");
  work.write("spool", "a file where the spool folder should be\n");
  expect_given_back_not_reported(kfleetd, work.str());
}

TEST(AgentOwnFailures, ASpecThisAgentCannotReadGivesTheRunBack) {
  StandIn kfleetd("", Fault::reset, 0);
  kfleetd.bad_spec = true;
  const kfleet::testing::TempDir work("kfleet-faults");
  expect_given_back_not_reported(kfleetd, work.str());
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  // Enough faults in a row on each call to need more than one retry.
  const std::map<std::string, int> counts = {{"enrol", 2},         {"lease", 2},
                                             {"heartbeat", 3},     {"upload_events", 2},
                                             {"finish", 2},        {"fetch_bundle", 2}};
  for (const auto& [call, n] : counts)
    for (Fault f : {Fault::reset, Fault::unavailable, Fault::stall})
      // One stalled renewal is already a third of the run's life.
      out.push_back({call, f, call == "heartbeat" && f == Fault::stall ? 1 : n});
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryCall, TransportFaults, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.call + "_" + fault_name(i.param.fault);
                           for (auto& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
