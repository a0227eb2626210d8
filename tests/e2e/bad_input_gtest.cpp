// Bad input end to end: malformed job files through the CLI and raw through the API, an
// oversized body, an unauthenticated submit. Each gets a clear error naming the place,
// nothing is stored, and kfleetd keeps serving.
#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

struct Bad {
  std::string name, yaml, expect;  // expect: a fragment the error must contain
};

std::vector<Bad> bad_jobs() {
  const std::string tail = "kernel:\n  family: attention\n  language: cuda\n  sources: [k.cu]\n";
  return {
      {"syntax", "name: x\ntarget: {gpu: L4\n" + tail, "job.yaml:"},
      {"wrong-type", "name: x\npriority: [1]\ntarget: {gpu: L4}\n" + tail, "priority"},
      {"unknown-key", "name: x\ntarget: {gpu: L4, colour: red}\n" + tail, "colour"},
      {"missing-field", "name: x\n" + tail, "target"},
      {"escape", "name: x\ntarget: {gpu: L4}\nkernel:\n  family: attention\n  language: cuda\n"
                 "  sources: [../outside.cu]\n", "sources"},
  };
}

TEST(BadInput, CliRejectsEachMalformedJobWithItsPlace) {
  Cluster c;
  c.start_kfleetd();
  for (const auto& b : bad_jobs()) {
    auto path = c.write_job(b.name, b.yaml);
    auto r = c.cli({"submit", path});
    EXPECT_EQ(r.exit_code, 2) << b.name << ": " << r.output;
    EXPECT_NE(r.output.find(b.expect), std::string::npos) << b.name << ": " << r.output;
    EXPECT_NE(r.output.find("job.yaml:"), std::string::npos) << b.name << ": " << r.output;
  }
  EXPECT_EQ(c.sql("SELECT count(*) FROM jobs")[0][0], "0");
}

TEST(BadInput, ServerRejectsThemTooAndKeepsServing) {
  Cluster c;
  c.start_kfleetd();
  HttpClient user(c.url(), Cluster::kUserToken);
  nlohmann::json bundle = {{"files", {{{"path", "k.cu"}, {"data_b64", "Ly8K"}}}}};
  for (const auto& b : bad_jobs()) {
    auto r = user.post_json("/api/v1/jobs",
                            {{"spec_yaml", b.yaml}, {"source_name", "job.yaml"}, {"bundle", bundle}});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << b.name << ": " << r->body;
    EXPECT_NE(r->body.find(b.expect), std::string::npos) << b.name << ": " << r->body;
    auto d = (*r->json())["error"]["details"];
    ASSERT_TRUE(d.is_array() && !d.empty()) << r->body;
    EXPECT_GT(d[0]["line"].get<int>(), 0) << r->body;
  }
  // A bundle path escaping the job's folder is refused even with a valid spec.
  auto esc = user.post_json(
      "/api/v1/jobs",
      {{"spec_yaml", "name: x\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\n"},
       {"bundle", {{"files", {{{"path", "../../k.cu"}, {"data_b64", "Ly8K"}}}}}}});
  EXPECT_EQ(esc->status, 400) << esc->body;
  // Oversized body: 413 before it is read.
  HttpClient big(c.url(), Cluster::kUserToken);
  auto r = big.request("POST", "/api/v1/jobs", std::string(9u << 20, ' '), "application/json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 413);
  // No token, or a wrong one: 401, from the API and from the CLI.
  HttpClient anon(c.url());
  EXPECT_EQ(anon.post_json("/api/v1/jobs", {{"spec_yaml", "x"}, {"bundle", bundle}})->status, 401);
  auto path = c.write_job("ok", Cluster::sim_job_yaml("ok"));
  auto cli = run_cmd({KFLEET_CLI_BIN, "--server", c.url(), "submit", path}, 60000,
                     {{"HOME", c.dir()}, {"XDG_CONFIG_HOME", c.dir() + "/xdg"},
                      {"KFLEET_TOKEN", "wrong"}});
  EXPECT_NE(cli.exit_code, 0) << cli.output;
  EXPECT_NE(cli.output.find("token"), std::string::npos) << cli.output;
  EXPECT_EQ(c.sql("SELECT count(*) FROM jobs")[0][0], "0");
  // Still serving.
  EXPECT_EQ(c.get("/api/v1/health")["status"], "ok");
  EXPECT_TRUE(c.kfleetd().running());
}

}  // namespace
}  // namespace kfleet::e2e
