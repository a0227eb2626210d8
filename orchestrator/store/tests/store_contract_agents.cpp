// The store contract, part 1 continued: agents, region blocks, bundles and job events.
#include "store_contract.hpp"

namespace kfleet::store::testing {

TEST_P(StoreContract, EnrolAgentStoresInventoryAndKnowsSimulation) {
  auto r = store().enrol_agent(agent("gpu-1"), 777);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto a = store().get_agent(r->id);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "gpu-1");
  EXPECT_EQ(a->region, "us-east-1");
  EXPECT_EQ(a->backend, "cuda");
  ASSERT_EQ(a->gpus.size(), 1u);
  EXPECT_EQ(a->gpus[0].arch, "sm_89");
  EXPECT_EQ(a->gpus[0].memory_bytes, 24LL << 30);
  EXPECT_EQ(a->token_hash, "th-gpu-1");
  EXPECT_EQ(a->provider, "static");
  EXPECT_EQ(a->info["host"], "gpu-1.local");
  EXPECT_EQ(a->state, AgentState::idle);
  EXPECT_EQ(a->enrolled_ms, 777);
  EXPECT_EQ(a->last_seen_ms, 777);
  EXPECT_FALSE(a->simulated());

  auto sim_gpu = store().enrol_agent(agent("sim-gpu", true), 778);
  auto sim_backend_spec = agent("sim-backend");
  sim_backend_spec.backend = "simulated";
  auto sim_backend = store().enrol_agent(sim_backend_spec, 779);
  ASSERT_TRUE(sim_gpu.ok() && sim_backend.ok());
  EXPECT_TRUE(store().get_agent(sim_gpu->id)->simulated());
  EXPECT_TRUE(store().get_agent(sim_backend->id)->simulated());
  EXPECT_EQ(store().list_agents().size(), 3u);
  EXPECT_STREQ(to_string(AgentState::lost), "lost");

  auto nameless = store().enrol_agent(agent(""), 780);
  ASSERT_FALSE(nameless.ok());
  EXPECT_EQ(nameless.error().code, Errc::invalid_argument);
}

TEST_P(StoreContract, TouchAgentRecordsHeartbeatAndRevivesALostAgent) {
  now_ = 0;
  auto a = enrol("a");
  auto t = store().touch_agent(a.id, 50'000);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->last_seen_ms, 50'000);
  ASSERT_TRUE(store().set_agent_state(a.id, AgentState::lost, 50'001).ok());
  EXPECT_EQ(store().get_agent(a.id)->state, AgentState::lost);
  auto revived = store().touch_agent(a.id, 60'000);
  ASSERT_TRUE(revived.ok());
  EXPECT_EQ(revived->state, AgentState::idle);

  ASSERT_TRUE(store().set_agent_state(a.id, AgentState::retired, 60'001).ok());
  EXPECT_EQ(store().touch_agent(a.id, 70'000)->state, AgentState::retired);

  auto unknown = store().touch_agent(12345, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Errc::not_found);
  EXPECT_EQ(store().set_agent_state(12345, AgentState::idle, 1).error().code, Errc::not_found);
}

TEST_P(StoreContract, ListAgentsIsTheLiveFleetUnlessAskedAndPages) {
  std::vector<std::int64_t> ids;
  for (const char* name : {"a", "b", "c", "d", "e"}) ids.push_back(enrol(name).id);
  ASSERT_TRUE(store().set_agent_state(ids[1], AgentState::retired, ++now_).ok());
  ASSERT_TRUE(store().set_agent_state(ids[3], AgentState::lost, ++now_).ok());
  auto names = [](const std::vector<AgentRecord>& v) {
    std::string out;
    for (const auto& a : v) out += a.name;
    return out;
  };
  EXPECT_EQ(names(store().list_agents()), "acde");  // the retired one is history, not fleet
  AgentFilter all;
  all.include_retired = true;
  EXPECT_EQ(names(store().list_agents(all)), "abcde");
  AgentFilter some;
  some.states = {AgentState::lost, AgentState::retired};
  EXPECT_EQ(names(store().list_agents(some)), "bd");
  AgentFilter page;
  page.limit = 2;
  EXPECT_EQ(names(store().list_agents(page)), "ac");
  page.after_id = ids[2];
  EXPECT_EQ(names(store().list_agents(page)), "de");
  page.after_id = ids[4];
  EXPECT_TRUE(store().list_agents(page).empty());
  EXPECT_EQ(store().count_agents(AgentState::retired), 1);
  EXPECT_EQ(store().count_agents(AgentState::idle), 3);
  EXPECT_EQ(agent_state_from_string("lost"), AgentState::lost);
  EXPECT_FALSE(agent_state_from_string("gone"));
}

TEST_P(StoreContract, RegionBlocksUpsertOnTheirKeyAndClear) {
  RegionBlock b{"terraform", "us-east-1a", "H100", "stockout", "InsufficientInstanceCapacity",
                1, 1000, 61'000};
  store().put_region_block(b);
  RegionBlock any_class = b;
  any_class.gpu_class = "";
  any_class.kind = "quota";
  store().put_region_block(any_class);
  b.strikes = 2;
  b.until_ms = 181'000;
  b.reason = "again";
  store().put_region_block(b);  // same key: replaces, not a new row

  auto blocks = store().region_blocks();
  ASSERT_EQ(blocks.size(), 2u);
  const RegionBlock* h100 = nullptr;
  for (const auto& x : blocks)
    if (x.gpu_class == "H100") h100 = &x;
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->strikes, 2);
  EXPECT_EQ(h100->until_ms, 181'000);
  EXPECT_EQ(h100->reason, "again");
  EXPECT_EQ(h100->kind, "stockout");
  EXPECT_EQ(h100->since_ms, 1000);

  store().clear_region_block("terraform", "us-east-1a", "H100");
  blocks = store().region_blocks();
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].gpu_class, "");
  EXPECT_EQ(blocks[0].kind, "quota");
  store().clear_region_block("terraform", "nowhere", "");  // clearing nothing is fine
  EXPECT_EQ(store().region_blocks().size(), 1u);
}

TEST_P(StoreContract, BundlesAreContentAddressedAndIdempotent) {
  const std::string body("tar\0bytes\xff\x01", 12);
  ASSERT_TRUE(store().put_bundle("sha256:aa", body).ok());
  ASSERT_TRUE(store().put_bundle("sha256:aa", body).ok());
  auto got = store().get_bundle("sha256:aa");
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, body);
  auto clash = store().put_bundle("sha256:aa", "other");
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().code, Errc::conflict);
  EXPECT_EQ(*store().get_bundle("sha256:aa"), body);
  EXPECT_FALSE(store().get_bundle("sha256:bb"));
  EXPECT_FALSE(store().put_bundle("", body).ok());
}

TEST_P(StoreContract, JobEventsHaveAPerJobSeqAndAGlobalOrder) {
  auto a = create("a");
  auto b = create("b");
  auto e1 = store().append_job_event(a.id, event_type::sched_decision, {{"action", "wait"}}, 10);
  auto e2 = store().append_job_event(b.id, event_type::capacity, {{"region", "r"}}, 11);
  auto e3 = store().append_job_event(a.id, event_type::sched_decision, {{"action", "go"}}, 12);
  EXPECT_EQ(e1.seq, 2);  // 1 is job.submitted
  EXPECT_EQ(e2.seq, 2);
  EXPECT_EQ(e3.seq, 3);
  EXPECT_LT(e1.id, e2.id);
  EXPECT_LT(e2.id, e3.id);
  EXPECT_EQ(e3.ts_ms, 12);
  EXPECT_EQ(e3.run_id, 0);

  auto of_a = store().job_events(a.id, 0, 100);
  ASSERT_EQ(of_a.size(), 3u);
  EXPECT_EQ(of_a[2].data["action"], "go");
  auto after = store().job_events(a.id, e1.id, 100);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].id, e3.id);
  EXPECT_EQ(store().job_events(a.id, 0, 1).size(), 1u);

  auto all = store().events_after(0, 100);
  ASSERT_EQ(all.size(), 5u);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].id, all[i].id);
  auto tail = store().events_after(e2.id, 100);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].id, e3.id);
}

void StoreContract::check_a_failing_batch_writes_nothing(Store& s,
                                                         const std::function<void()>& refuse_boom,
                                                         const std::function<void()>& mend) {
  std::vector<std::int64_t> ids;
  for (const char* name : {"a", "b", "c"}) {
    auto j = s.create_job(job(name), 100);
    ASSERT_TRUE(j.ok()) << j.error().message;
    ids.push_back(j->id);
  }
  refuse_boom();
  auto rs = s.set_job_states({{ids[0], JobState::waiting_capacity, "stockout"},
                              {ids[1], JobState::waiting_capacity, "boom"},
                              {ids[2], JobState::waiting_capacity, "stockout"}},
                             200);
  ASSERT_EQ(rs.size(), 3u);
  for (const auto& r : rs) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("injected failure"), std::string::npos) << r.error().message;
  }
  for (auto id : ids) {  // the change before the failing one is rolled back too
    auto j = s.get_job(id);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->state, JobState::queued);
    EXPECT_EQ(j->state_reason, "");
    EXPECT_EQ(s.job_events(id, 0, 100).size(), 1u);  // job.submitted only
  }
  mend();
  auto again = s.set_job_states({{ids[1], JobState::waiting_capacity, "boom"}}, 300);
  ASSERT_EQ(again.size(), 1u);
  ASSERT_TRUE(again[0].ok()) << again[0].error().message;
  EXPECT_EQ(s.get_job(ids[1])->state_reason, "boom");
}

}  // namespace kfleet::store::testing
