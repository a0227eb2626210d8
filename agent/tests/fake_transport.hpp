#pragma once
// An in-memory kfleetd for agent tests: ingests events idempotently on (run, seq) and answers
// `contiguous` like the real one; switches make it unreachable or make a run's token stale.
#include <map>
#include <mutex>
#include <set>

#include "kfleet/agent/transport.hpp"

namespace kfleet::testing {

class FakeKfleetd final : public agent::Transport {
 public:
  Result<agent::Enrolment> enrol(const nlohmann::json&) override {
    std::lock_guard<std::mutex> l(mu);
    if (unreachable) return make_error(Errc::unavailable, "fake kfleetd is down");
    return agent::Enrolment{7, "agent-token", 1000, 3000};
  }
  void set_agent_token(const std::string&) override {}
  Result<std::optional<agent::Lease>> lease(std::int64_t, int) override {
    return std::optional<agent::Lease>{};
  }
  Result<agent::HeartbeatReply> heartbeat(std::int64_t, std::int64_t run, std::int64_t) override {
    std::lock_guard<std::mutex> l(mu);
    ++heartbeats;
    last_heartbeat_run = run;
    if (unreachable) return make_error(Errc::unavailable, "fake kfleetd is down");
    return reply;
  }
  Result<agent::UploadAck> upload_events(std::int64_t run, std::int64_t token,
                                         const std::vector<Event>& events) override {
    std::lock_guard<std::mutex> l(mu);
    ++uploads;
    if (unreachable) return make_error(Errc::unavailable, "fake kfleetd is down");
    if (stale_runs.count(run) || token <= 0) return make_error(Errc::conflict, "stale fencing token");
    auto& stored = events_by_run[run];
    for (const auto& e : events) {
      if (stored.count(e.seq)) ++duplicates;
      else stored[e.seq] = e;
    }
    std::int64_t c = 0;
    while (stored.count(c + 1)) ++c;
    // Simulates an upload whose answer was lost: stored, but the agent sees a failure.
    if (lose_next_answer) {
      lose_next_answer = false;
      return make_error(Errc::unavailable, "connection reset before the answer");
    }
    return agent::UploadAck{c};
  }
  Result<void> finish(std::int64_t run, std::int64_t, const Verdict& v) override {
    std::lock_guard<std::mutex> l(mu);
    if (unreachable) return make_error(Errc::unavailable, "fake kfleetd is down");
    finished[run] = v;
    return ok_result();
  }
  Result<Bundle> fetch_bundle(const std::string& hash) override {
    std::lock_guard<std::mutex> l(mu);
    ++fetch_count;
    if (unreachable) return make_error(Errc::unavailable, "fake kfleetd is down");
    auto it = bundles.find(hash);
    if (it == bundles.end()) return make_error(Errc::not_found, "no bundle " + hash);
    return it->second;
  }

  int fetches() {
    std::lock_guard<std::mutex> l(mu);
    return fetch_count;
  }

  std::vector<Event> stored(std::int64_t run) {
    std::lock_guard<std::mutex> l(mu);
    std::vector<Event> out;
    for (auto& [_, e] : events_by_run[run]) out.push_back(e);
    return out;
  }

  std::mutex mu;
  bool unreachable = false;
  bool lose_next_answer = false;
  std::set<std::int64_t> stale_runs;
  agent::HeartbeatReply reply;
  int heartbeats = 0, uploads = 0, duplicates = 0, fetch_count = 0;
  std::int64_t last_heartbeat_run = -1;
  std::map<std::int64_t, std::map<std::int64_t, Event>> events_by_run;
  std::map<std::int64_t, Verdict> finished;
  std::map<std::string, Bundle> bundles;
};

}  // namespace kfleet::testing
