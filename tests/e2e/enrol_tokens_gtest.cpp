// Limited enrolment tokens, end to end: a real kfleetd, real agents and the kfleet CLI. An admin
// mints tokens with `kfleet enrol-token mint`; a single-use one lets one agent in and refuses the
// next, an expired one and one bound to another instance are refused, each with the reason; the
// fleet's long-lived token keeps working; `kfleet agents` says who let each agent in, and
// `kfleet agents revoke` takes one out, its job requeued, and its single-use token cannot bring
// it back.
#include <sys/stat.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

struct Minted {
  std::int64_t id = 0;
  std::string file;
};

// `kfleet enrol-token mint ... --out FILE`, then the token's id from `enrol-token list --json`.
Minted mint(Cluster& c, const std::string& name, const std::vector<std::string>& flags) {
  Minted m;
  // Beside nothing else: the agent hides its token file's dir from the jobs it runs.
  std::filesystem::create_directories(c.dir() + "/tokens");
  m.file = c.dir() + "/tokens/" + name + ".token";
  std::vector<std::string> args = {"enrol-token", "mint", "--name", name, "--out", m.file};
  args.insert(args.end(), flags.begin(), flags.end());
  auto r = c.cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("written to " + m.file), std::string::npos) << r.output;
  struct stat st{};
  EXPECT_EQ(::stat(m.file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the token file must be private";
  const auto listed = c.get("/api/v1/enrol-tokens");
  for (const auto& t : listed["enrol_tokens"])
    if (t["name"] == name) m.id = t["id"].get<std::int64_t>();
  EXPECT_NE(m.id, 0) << "minted token " << name << " is not listed";
  return m;
}

std::vector<std::string> with_token(const Minted& m, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), {"--enrol-token-file", m.file});
  return extra;
}

nlohmann::json agent_named(Cluster& c, const std::string& name) {
  const auto all = c.get("/api/v1/agents?state=all");
  for (const auto& a : all["agents"])
    if (a["name"] == name) return a;
  return nullptr;
}

bool enrolled(Cluster& c, const std::string& name) {
  return wait_until([&] { return !agent_named(c, name).is_null(); }, std::chrono::seconds(30));
}

// The agent exits, refused, with `reason` in its log.
void expect_refused(Proc& agent, const std::string& reason) {
  EXPECT_EQ(agent.wait(30000), 1) << "a refused agent exits 1\n" << agent.log();
  const std::string log = agent.log();
  EXPECT_NE(log.find("enrolment refused"), std::string::npos) << log;
  EXPECT_NE(log.find(reason), std::string::npos) << log;
}

TEST(EnrolTokens, ASingleUseTokenEnrolsOneAgentAndRefusesASecond) {
  Cluster c;
  c.start_kfleetd();
  const Minted once = mint(c, "rack-3", {"--uses", "1", "--expires-in", "1h"});
  c.start_agent("first", "local", "L4", "sm_89", with_token(once));
  ASSERT_TRUE(enrolled(c, "first")) << c.logs();
  Proc& second = c.start_agent("second", "local", "L4", "sm_89", with_token(once));
  expect_refused(second, "is used up (1 of 1 enrolments)");
  EXPECT_TRUE(agent_named(c, "second").is_null());

  // The agent says who let it in, in the API and in `kfleet agents`.
  const auto first = agent_named(c, "first");
  EXPECT_EQ(first["enrolled_by"]["kind"], "enrol_token") << first.dump(2);
  EXPECT_EQ(first["enrolled_by"]["enrol_token_id"], once.id);
  EXPECT_EQ(first["enrolled_by"]["minted_by"], "admin");
  auto list = c.cli({"agents"});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find("#" + std::to_string(once.id) + " rack-3 (admin)"), std::string::npos)
      << list.output;
  auto tokens = c.cli({"enrol-token", "list"});
  EXPECT_NE(tokens.output.find("1/1"), std::string::npos) << tokens.output;
  EXPECT_NE(tokens.output.find("used_up"), std::string::npos) << tokens.output;

  // The fleet's long-lived token keeps working beside the limited ones.
  c.start_agent("fleet");
  ASSERT_TRUE(enrolled(c, "fleet")) << c.logs();
  EXPECT_EQ(agent_named(c, "fleet")["enrolled_by"]["kind"], "fleet_token");
  list = c.cli({"agents"});
  EXPECT_NE(list.output.find("fleet token"), std::string::npos) << list.output;
}

TEST(EnrolTokens, AnExpiredTokenAndOneBoundToAnotherInstanceAreRefused) {
  Cluster c;
  c.start_kfleetd();
  const Minted brief = mint(c, "brief", {"--uses", "0", "--expires-in", "1s"});
  const Minted bound = mint(c, "i-0abc", {"--instance-id", "i-0abc", "--expires-in", "1h"});
  const Minted revoked = mint(c, "gone", {});
  ASSERT_EQ(c.cli({"enrol-token", "revoke", std::to_string(revoked.id)}).exit_code, 0);

  // Wait for kfleetd itself to call the token expired (its clock, not this test's).
  ASSERT_TRUE(wait_until(
      [&] {
        const auto listed = c.get("/api/v1/enrol-tokens");
        for (const auto& t : listed["enrol_tokens"])
          if (t["id"] == brief.id) return t["state"] == "expired";
        return false;
      },
      std::chrono::seconds(10)));
  Proc& late = c.start_agent("late", "local", "L4", "sm_89", with_token(brief));
  expect_refused(late, "expired at");

  Proc& other = c.start_agent("other", "local", "L4", "sm_89",
                              with_token(bound, {"--provider", "gce", "--instance-id", "i-0xyz"}));
  expect_refused(other, "is bound to one instance, and this agent says it is instance 'i-0xyz'");
  EXPECT_EQ(other.log().find("i-0abc"), std::string::npos)
      << "the refusal must not tell which instance the token is for\n" << other.log();
  Proc& none = c.start_agent("none", "local", "L4", "sm_89", with_token(revoked));
  expect_refused(none, "was revoked");

  // The right instance gets in.
  c.start_agent("right", "local", "L4", "sm_89",
                with_token(bound, {"--provider", "gce", "--instance-id", "i-0abc"}));
  ASSERT_TRUE(enrolled(c, "right")) << c.logs();
  EXPECT_EQ(agent_named(c, "right")["instance_id"], "i-0abc");

  // A token kfleetd never made is "not known", and nothing more.
  const Minted fake{0, c.dir() + "/tokens/fake.token"};
  write_file(fake.file, "kfe_00000000000000000000000000000000000000000000000000000000000000aa\n");
  ::chmod(fake.file.c_str(), 0600);
  Proc& stranger = c.start_agent("stranger", "local", "L4", "sm_89", with_token(fake));
  expect_refused(stranger, "kfleetd does not know this enrolment token");
  EXPECT_EQ(c.get("/api/v1/agents")["agents"].size(), 1u);
}

TEST(EnrolTokens, KfleetAgentsRevokeTakesAnAgentOutAndItsSingleUseTokenCannotBringItBack) {
  // The revoked agent's refused heartbeats count as failed authentications from loopback; a
  // high limit lets its next enrolment reach the token check instead of a 429.
  ClusterOptions o;
  o.extra_args = {"--auth-fail-rate-per-min", "100000"};
  Cluster c(o);
  c.start_kfleetd();
  const Minted once = mint(c, "one-host", {});
  Proc& agent = c.start_agent("held", "local", "L4", "sm_89", with_token(once));
  ASSERT_TRUE(enrolled(c, "held")) << c.logs();
  const std::int64_t id = agent_named(c, "held")["id"].get<std::int64_t>();
  // A job that holds the agent long enough to be taken back from it.
  const auto job = c.submit_api(c.write_job("slow", Cluster::sim_job_yaml("revoke/slow", "L4", "", 20000)));
  ASSERT_TRUE(wait_until([&] { return agent_named(c, "held")["state"] == "busy"; },
                         std::chrono::seconds(30)))
      << c.logs();

  auto r = c.cli({"agents", "revoke", std::to_string(id)});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("agent " + std::to_string(id) + " (held) revoked"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("was taken back"), std::string::npos) << r.output;
  EXPECT_EQ(agent_named(c, "held")["state"], "retired");
  auto now = c.job(job);
  EXPECT_EQ(now["job"]["state"], "queued") << now.dump(2);
  EXPECT_EQ(now["runs"][0]["outcome"], "lost") << now.dump(2);

  // Refused from then on: it tries to come back with its enrolment token, which is used up.
  ASSERT_TRUE(wait_until([&] { return agent.log().find("is used up") != std::string::npos; },
                         std::chrono::seconds(30)))
      << agent.log();
  EXPECT_EQ(c.get("/api/v1/agents")["agents"].size(), 0u);
  auto again = c.cli({"agents", "revoke", "99999"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.output.find("no agent 99999"), std::string::npos) << again.output;
}

}  // namespace
}  // namespace kfleet::e2e
