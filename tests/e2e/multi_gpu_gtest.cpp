// A simulated 8-GPU host end to end: kfleetd and eight kfleet-agent processes, one per GPU
// (--sim-gpus 8 --gpu N --host-id simhost). Eight jobs run at once, one per slot; a slot never
// holds two jobs; a host-exclusive job runs with every other slot of its host idle.
#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

constexpr int kGpus = 8;

void start_host(Cluster& c, const std::string& host) {
  for (int i = 0; i < kGpus; ++i)
    c.start_agent(host + "-gpu" + std::to_string(i), "local", "L4", "sm_89",
                  {"--host-id", host, "--sim-gpus", std::to_string(kGpus), "--gpu",
                   std::to_string(i)});
  // Every agent enrolled with its slot before any job is sent.
  ASSERT_TRUE(wait_until(
      [&] {
        auto rows = c.sql("SELECT COUNT(DISTINCT slot) FROM agents WHERE host = '" + host + "'");
        return !rows.empty() && rows[0][0] == std::to_string(kGpus);
      },
      std::chrono::seconds(30)))
      << c.logs();
}

// A run's life as an interval of global event ids: from its lease.granted to its last event.
// Two runs overlapped in time exactly when their intervals overlap.
struct Span {
  std::int64_t run = 0, job = 0, lo = 0, hi = 0;
  int slot = -1;
  bool exclusive = false;
};

std::vector<Span> spans(Cluster& c) {
  std::vector<Span> out;
  for (const auto& r : c.sql(
           "SELECT r.id, r.job_id, r.slot, r.host_exclusive, "
           "(SELECT e.id FROM events e WHERE e.type = 'lease.granted' AND "
           " json_extract(e.data, '$.run_id') = r.id), "
           "(SELECT MAX(e.id) FROM events e WHERE e.run_id = r.id) "
           "FROM runs r ORDER BY r.id")) {
    Span s;
    s.run = std::stoll(r[0]);
    s.job = std::stoll(r[1]);
    s.slot = std::stoi(r[2]);
    s.exclusive = r[3] == "1";
    s.lo = r[4].empty() ? 0 : std::stoll(r[4]);
    s.hi = r[5].empty() ? 0 : std::stoll(r[5]);
    out.push_back(s);
  }
  return out;
}

bool overlap(const Span& a, const Span& b) { return a.lo <= b.hi && b.lo <= a.hi; }

int peak_concurrency(const std::vector<Span>& v) {
  int peak = 0;
  for (const auto& a : v) {
    int n = 0;
    for (const auto& b : v)
      if (b.lo <= a.lo && a.lo <= b.hi) ++n;
    peak = std::max(peak, n);
  }
  return peak;
}

TEST(MultiGpu, EightJobsRunAtOnceOnEightSlotsAndNeverTwoOnOneSlot) {
  Cluster c;
  c.start_kfleetd();
  start_host(c, "simhost");
  std::vector<std::int64_t> jobs;
  for (int i = 0; i < 2 * kGpus; ++i) {
    const std::string n = "mg" + std::to_string(i);
    jobs.push_back(c.submit_api(c.write_job(n, Cluster::sim_job_yaml("multi/" + n, "L4", "", 150))));
  }
  for (auto id : jobs) EXPECT_EQ(c.wait_terminal(id)["job"]["state"], "passed");

  auto v = spans(c);
  ASSERT_EQ(v.size(), jobs.size());
  std::set<int> slots;
  for (const auto& s : v) {
    ASSERT_GT(s.lo, 0) << "run " << s.run << " has no lease.granted event";
    ASSERT_GE(s.hi, s.lo) << "run " << s.run;
    slots.insert(s.slot);
  }
  EXPECT_EQ(slots.size(), static_cast<std::size_t>(kGpus)) << "every GPU of the host was used";
  EXPECT_EQ(peak_concurrency(v), kGpus) << "eight jobs at once, no more";
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i + 1; j < v.size(); ++j)
      if (v[i].slot == v[j].slot) {
        EXPECT_FALSE(overlap(v[i], v[j]))
            << "slot " << v[i].slot << " held runs " << v[i].run << " and " << v[j].run << " at once";
      }
  auto hosts = c.sql("SELECT DISTINCT host FROM runs");
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0][0], "simhost");

  // Every stage says which GPU ran it, and it is the run's own slot: index, UUID and PCI bus id.
  std::map<int, std::string> uuid_of_slot;
  for (const auto& s : v) {
    auto rows = c.sql(
        "SELECT DISTINCT json_extract(data, '$.gpu.index'), json_extract(data, '$.gpu.uuid'), "
        "json_extract(data, '$.gpu.pci_bus_id') FROM events WHERE type IN ('stage.started', "
        "'stage.finished') AND run_id = " + std::to_string(s.run));
    ASSERT_EQ(rows.size(), 1u) << "run " << s.run << " names more than one GPU (or none)";
    EXPECT_EQ(rows[0][0], std::to_string(s.slot));
    EXPECT_EQ(rows[0][1].rfind("GPU-SIM-", 0), 0u) << rows[0][1];
    EXPECT_FALSE(rows[0][2].empty());
    auto [it, fresh] = uuid_of_slot.emplace(s.slot, rows[0][1]);
    EXPECT_EQ(it->second, rows[0][1]) << "slot " << s.slot << " changed GPU";
  }
  std::set<std::string> uuids;
  for (auto& [slot, u] : uuid_of_slot) uuids.insert(u);
  EXPECT_EQ(uuids.size(), static_cast<std::size_t>(kGpus)) << "each slot is its own GPU";
}

TEST(MultiGpu, AHostExclusiveJobRunsAloneOnItsHost) {
  Cluster c;
  c.start_kfleetd();
  start_host(c, "simhost");
  std::vector<std::int64_t> first, after;
  for (int i = 0; i < kGpus; ++i) {
    const std::string n = "busy" + std::to_string(i);
    first.push_back(c.submit_api(c.write_job(n, Cluster::sim_job_yaml("multi/" + n, "L4", "", 150))));
  }
  // The exclusive job arrives while all eight slots are busy.
  ASSERT_TRUE(wait_until(
      [&] {
        auto rows = c.sql("SELECT COUNT(*) FROM runs WHERE outcome = 'running'");
        return !rows.empty() && rows[0][0] == std::to_string(kGpus);
      },
      std::chrono::seconds(30)))
      << c.logs();
  const auto excl = c.submit_api(c.write_job(
      "alone", Cluster::sim_job_yaml("multi/alone", "L4", "", 100, 100,
                                     "priority: 5\nbenchmark:\n  host_exclusive: true\n")));
  for (int i = 0; i < 3; ++i) {
    const std::string n = "later" + std::to_string(i);
    after.push_back(c.submit_api(c.write_job(n, Cluster::sim_job_yaml("multi/" + n, "L4", "", 50))));
  }
  for (auto id : first) EXPECT_EQ(c.wait_terminal(id)["job"]["state"], "passed");
  EXPECT_EQ(c.wait_terminal(excl)["job"]["state"], "passed");
  for (auto id : after) EXPECT_EQ(c.wait_terminal(id)["job"]["state"], "passed");

  auto v = spans(c);
  auto x = std::find_if(v.begin(), v.end(), [&](const Span& s) { return s.job == excl; });
  ASSERT_NE(x, v.end());
  EXPECT_TRUE(x->exclusive);
  for (const auto& s : v) {
    if (s.run == x->run) continue;
    EXPECT_FALSE(overlap(*x, s)) << "run " << s.run << " (slot " << s.slot
                                 << ") ran beside the host-exclusive run " << x->run;
    if (std::find(after.begin(), after.end(), s.job) != after.end()) {
      EXPECT_GT(s.lo, x->hi) << "job " << s.job << " overtook the host-exclusive job";
    }
  }
  // It said it was waiting for the host, not for a GPU.
  auto waits = c.sql("SELECT json_extract(data, '$.host'), json_extract(data, '$.reason') FROM events "
                     "WHERE type = 'sched.decision' AND json_extract(data, '$.waits_for') = 'host' "
                     "AND job_id = " + std::to_string(excl));
  ASSERT_FALSE(waits.empty()) << c.logs();
  EXPECT_EQ(waits[0][0], "simhost");
  EXPECT_NE(waits[0][1].find("drain"), std::string::npos) << waits[0][1];
}

}  // namespace
}  // namespace kfleet::e2e
