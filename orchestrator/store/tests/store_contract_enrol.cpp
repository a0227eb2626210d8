// The store contract, part 4: limited enrolment tokens, used up in the same transaction as the
// agent they let in, and each agent's record of who let it in.
#include "store_contract.hpp"

namespace kfleet::store::testing {

namespace {

EnrolToken enrol_token(const std::string& name, int max_uses, TimeMs expires_ms = 0,
                       const std::string& instance_id = "") {
  EnrolToken t;
  t.name = name;
  t.token_hash = std::string(63, 'a') + name.substr(0, 1);
  t.prefix = "kfe_aaaa";
  t.max_uses = max_uses;
  t.expires_ms = expires_ms;
  t.instance_id = instance_id;
  t.created_by = "alice";
  return t;
}

}  // namespace

TEST_P(StoreContract, EnrolTokensAreStoredListedNewestFirstAndRevokedOnce) {
  auto a = store().create_enrol_token(enrol_token("a", 1), 100);
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = store().create_enrol_token(enrol_token("b", 0, 5000, "i-123"), 101);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(store().create_enrol_token(enrol_token("a", 1), 102).error().code, Errc::conflict);
  auto nameless = enrol_token("c", 1);
  nameless.name = "";
  EXPECT_EQ(store().create_enrol_token(nameless, 102).error().code, Errc::invalid_argument);

  auto list = store().list_enrol_tokens(10);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "b");
  EXPECT_EQ(list[0].instance_id, "i-123");
  EXPECT_EQ(list[0].max_uses, 0);
  EXPECT_EQ(list[0].expires_ms, 5000);
  EXPECT_EQ(list[0].created_by, "alice");
  EXPECT_EQ(list[0].created_ms, 101);
  EXPECT_EQ(list[1].name, "a");
  EXPECT_EQ(store().list_enrol_tokens(1).size(), 1u);

  auto found = store().find_enrol_token_by_hash(a->token_hash);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, a->id);
  EXPECT_FALSE(store().find_enrol_token_by_hash(std::string(64, 'f')));

  auto r1 = store().revoke_enrol_token(a->id, 200);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->revoked_ms, 200);
  EXPECT_EQ(store().revoke_enrol_token(a->id, 300)->revoked_ms, 200);
  EXPECT_EQ(store().revoke_enrol_token(9999, 300).error().code, Errc::not_found);
}

TEST_P(StoreContract, ASingleUseTokenLetsOneAgentInAndRecordsWhoMintedIt) {
  auto t = store().create_enrol_token(enrol_token("s", 1), 100);
  ASSERT_TRUE(t.ok());
  auto first = agent("first");
  first.enrol_token_hash = t->token_hash;
  auto in = store().enrol_agent(first, 110);
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(in->enrol_token_id, t->id);
  EXPECT_EQ(in->enrol_token_name, "s");
  EXPECT_EQ(in->enrol_token_by, "alice");
  EXPECT_EQ(store().find_enrol_token_by_hash(t->token_hash)->uses, 1);

  auto second = agent("second");
  second.enrol_token_hash = t->token_hash;
  auto out = store().enrol_agent(second, 111);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Errc::unauthorized);
  EXPECT_NE(out.error().message.find("used up (1 of 1"), std::string::npos) << out.error().message;
  // Nothing of the refused enrolment is stored, and the count stays.
  EXPECT_EQ(store().list_agents().size(), 1u);
  EXPECT_EQ(store().find_enrol_token_by_hash(t->token_hash)->uses, 1);

  // The fleet's token (no hash) is recorded as id 0.
  auto fleet = store().enrol_agent(agent("fleet"), 112);
  ASSERT_TRUE(fleet.ok());
  EXPECT_EQ(fleet->enrol_token_id, 0);
  EXPECT_EQ(store().get_agent(fleet->id)->enrol_token_name, "");
}

TEST_P(StoreContract, ACountedTokenAllowsThatManyEnrolments) {
  auto t = store().create_enrol_token(enrol_token("n", 3), 100);
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 3; ++i) {
    auto a = agent("n" + std::to_string(i));
    a.enrol_token_hash = t->token_hash;
    ASSERT_TRUE(store().enrol_agent(a, 110 + i).ok()) << i;
  }
  auto a = agent("n3");
  a.enrol_token_hash = t->token_hash;
  EXPECT_EQ(store().enrol_agent(a, 120).error().code, Errc::unauthorized);
  // 0 uses: no limit.
  auto many = store().create_enrol_token(enrol_token("m", 0), 100);
  for (int i = 0; i < 5; ++i) {
    auto b = agent("m" + std::to_string(i));
    b.enrol_token_hash = many->token_hash;
    ASSERT_TRUE(store().enrol_agent(b, 130 + i).ok()) << i;
  }
}

TEST_P(StoreContract, ExpiredRevokedUnknownAndOtherInstanceTokensAreRefusedWithTheReason) {
  auto exp = store().create_enrol_token(enrol_token("e", 0, 1000), 100);
  auto rev = store().create_enrol_token(enrol_token("r", 0), 100);
  auto bound = store().create_enrol_token(enrol_token("b", 0, 0, "i-abc"), 100);
  ASSERT_TRUE(exp.ok() && rev.ok() && bound.ok());
  ASSERT_TRUE(store().revoke_enrol_token(rev->id, 150).ok());

  auto with = [&](const std::string& hash, const std::string& instance) {
    auto a = agent("x");
    a.enrol_token_hash = hash;
    a.instance_id = instance;
    return a;
  };
  // Still valid one millisecond before its expiry; refused at it.
  EXPECT_TRUE(store().enrol_agent(with(exp->token_hash, ""), 999).ok());
  auto late = store().enrol_agent(with(exp->token_hash, ""), 1000);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, Errc::unauthorized);
  EXPECT_NE(late.error().message.find("expired"), std::string::npos) << late.error().message;

  auto revoked = store().enrol_agent(with(rev->token_hash, ""), 200);
  ASSERT_FALSE(revoked.ok());
  EXPECT_EQ(revoked.error().code, Errc::unauthorized);
  EXPECT_NE(revoked.error().message.find("revoked"), std::string::npos);

  auto other = store().enrol_agent(with(bound->token_hash, "i-xyz"), 200);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, Errc::forbidden);
  EXPECT_NE(other.error().message.find("'i-xyz'"), std::string::npos) << other.error().message;
  // The bound id itself is not told.
  EXPECT_EQ(other.error().message.find("i-abc"), std::string::npos) << other.error().message;
  EXPECT_EQ(store().enrol_agent(with(bound->token_hash, ""), 200).error().code, Errc::forbidden);
  EXPECT_TRUE(store().enrol_agent(with(bound->token_hash, "i-abc"), 200).ok());

  auto unknown = store().enrol_agent(with(std::string(64, 'f'), ""), 200);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Errc::unauthorized);
  EXPECT_EQ(unknown.error().message, "kfleetd does not know this enrolment token");
  EXPECT_EQ(store().list_agents().size(), 2u);
}

}  // namespace kfleet::store::testing
