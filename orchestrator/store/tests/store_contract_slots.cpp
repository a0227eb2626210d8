// The store contract, part 7: GPU slots, checked by the store under its write lock (on
// PostgreSQL in the grant's own statement): one running lease per (host, slot), a
// host-exclusive lease alone on its host, an agent that names no host a host of its own.
#include "store_contract.hpp"

namespace kfleet::store::testing {
namespace {

std::int64_t add_job(Store& s, const std::string& name, bool exclusive = false) {
  NewJob j;
  j.name = name;
  j.gpu = "L4";
  j.content_hash = "sha256:" + name;
  j.host_exclusive = exclusive;
  auto r = s.create_job(j, 100);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->id : 0;
}

std::int64_t add_agent(Store& s, const std::string& name, const std::string& host, int slot) {
  NewAgent a;
  a.name = name;
  a.region = "r";
  a.backend = "simulated";
  a.host = host;
  a.slot = slot;
  auto r = s.enrol_agent(a, 100);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r->id : 0;
}

Verdict passed() {
  Verdict v;
  v.outcome = RunOutcome::passed;
  v.reason = "ok";
  return v;
}

}  // namespace

TEST_P(StoreContract, ASlotNeverHoldsTwoLeases) {
  Store* s = &store();
  const auto a = add_agent(*s, "gpu0", "h", 0);
  const auto again = add_agent(*s, "gpu0-restarted", "h", 0);  // same GPU, a new agent record
  const auto b = add_agent(*s, "gpu1", "h", 1);
  const auto j1 = add_job(*s, "j1"), j2 = add_job(*s, "j2"), j3 = add_job(*s, "j3");
  auto l1 = s->grant_lease(j1, a, 1000, 200);
  ASSERT_TRUE(l1.ok()) << l1.error().message;
  auto dup = s->grant_lease(j2, again, 1000, 201);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, Errc::conflict);
  EXPECT_NE(dup.error().message.find("GPU slot 0 of host h already holds run"), std::string::npos)
      << dup.error().message;
  EXPECT_TRUE(s->grant_lease(j3, b, 1000, 202).ok());  // another slot of the host is free
  auto run = s->get_run(l1->run_id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->host, "h");
  EXPECT_EQ(run->slot, 0);
  // Once the slot's run ends, the slot takes a lease again (through the restarted agent too).
  ASSERT_TRUE(s->finish_run(l1->run_id, l1->fencing_token, passed(), 300).ok());
  EXPECT_TRUE(s->grant_lease(j2, again, 1000, 301).ok());
}

TEST_P(StoreContract, AHostExclusiveLeaseRunsAlone) {
  Store* s = &store();
  const auto h0 = add_agent(*s, "h0", "h", 0), h1 = add_agent(*s, "h1", "h", 1);
  const auto g0 = add_agent(*s, "g0", "g", 0);
  const auto normal = add_job(*s, "normal"), excl = add_job(*s, "excl", true);
  const auto later = add_job(*s, "later"), elsewhere = add_job(*s, "elsewhere");
  auto n = s->grant_lease(normal, h0, 1000, 200);
  ASSERT_TRUE(n.ok());
  auto refused = s->grant_lease(excl, h1, 1000, 201);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("host-exclusive and host h still runs"), std::string::npos)
      << refused.error().message;
  ASSERT_TRUE(s->finish_run(n->run_id, n->fencing_token, passed(), 300).ok());
  auto e = s->grant_lease(excl, h1, 1000, 301);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_TRUE(s->get_run(e->run_id)->host_exclusive);
  auto beside = s->grant_lease(later, h0, 1000, 302);
  ASSERT_FALSE(beside.ok());
  EXPECT_NE(beside.error().message.find("held by host-exclusive run"), std::string::npos)
      << beside.error().message;
  EXPECT_TRUE(s->grant_lease(elsewhere, g0, 1000, 303).ok());  // other hosts are not affected
  ASSERT_TRUE(s->finish_run(e->run_id, e->fencing_token, passed(), 400).ok());
  EXPECT_TRUE(s->grant_lease(later, h0, 1000, 401).ok());
}

TEST_P(StoreContract, AgentsThatNameNoHostAreHostsOfTheirOwn) {
  Store* s = &store();
  const auto a = add_agent(*s, "a", "", 0), b = add_agent(*s, "b", "", 0);
  EXPECT_EQ(s->get_agent(a)->host, "agent:" + std::to_string(a));
  EXPECT_EQ(s->get_agent(b)->host, "agent:" + std::to_string(b));
  EXPECT_TRUE(s->grant_lease(add_job(*s, "x", true), a, 1000, 200).ok());
  EXPECT_TRUE(s->grant_lease(add_job(*s, "y", true), b, 1000, 200).ok());
}

TEST_P(StoreContract, BadSlotIsRefused) {
  Store* s = &store();
  NewAgent a;
  a.name = "bad";
  a.slot = -1;
  auto r = s->enrol_agent(a, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
}

}  // namespace kfleet::store::testing
