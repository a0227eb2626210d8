// Compile agents: a GPU-less agent builds each job and runs its resources gate with the real
// compilers, and only a job that passes both is handed to a GPU (here simulated) agent.
#include <filesystem>

#include <gtest/gtest.h>

#include "../../common/tests/test_paths.hpp"
#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

std::int64_t agent_id(Cluster& c, const std::string& name) {
  auto rows = c.sql("SELECT id FROM agents WHERE name = '" + name + "' ORDER BY id DESC LIMIT 1");
  return rows.empty() ? 0 : std::stoll(rows[0][0]);
}

// Jobs go to a compile agent only once one has enrolled: submit after the fleet is up.
void wait_enrolled(Cluster& c, std::initializer_list<const char*> names) {
  for (const char* n : names)
    ASSERT_TRUE(wait_until([&] { return agent_id(c, n) > 0; }, std::chrono::seconds(30)))
        << n << " did not enrol\n" << c.logs();
}

bool is_leased_or_running(const nlohmann::json& job) {
  const std::string s = job["state"];
  return s == "leased" || s == "building" || s == "gating" || s == "benchmarking";
}

// The agent names on a job's stage.started events, per stage, in order.
std::vector<std::pair<std::string, std::string>> stage_agents(Cluster& c, std::int64_t job) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : c.job_events(job))
    if (e["type"] == "stage.started")
      out.emplace_back(e["data"].value("stage", ""), e["data"].value("agent", ""));
  return out;
}

// kfleetd with a compile agent "builder" and a simulated L4 agent "gpu-l4", both enrolled.
void start_builder_and_gpu(Cluster& c) {
  c.start_kfleetd();
  c.start_compile_agent("builder");
  c.start_agent("gpu-l4", "local", "L4", "sm_89");
  wait_enrolled(c, {"builder", "gpu-l4"});
}

TEST(CompileAgents, AJobThatFailsToBuildNeverReachesAGpuAgent) {
  Cluster c;
  start_builder_and_gpu(c);
  const std::string yaml = c.write_job("broken", Cluster::sim_job_yaml("handoff/broken"));
  write_file(std::filesystem::path(yaml).parent_path() / "k.cu",
             "__global__ void k(float* o) { o[threadIdx.x] = undeclared_name; }\n");
  const auto id = c.submit_api(yaml);
  auto done = c.wait_terminal(id, 120000);
  EXPECT_EQ(done["job"]["state"], "error") << done.dump(2) << c.logs();  // a build failure
  EXPECT_NE(done["job"]["state_reason"].get<std::string>().find("build failed"), std::string::npos)
      << done.dump(2);
  EXPECT_NE(done["job"]["state_reason"].get<std::string>().find("undeclared_name"), std::string::npos)
      << done.dump(2);
  const auto builder = agent_id(c, "builder"), gpu = agent_id(c, "gpu-l4");
  ASSERT_GT(builder, 0);
  ASSERT_GT(gpu, 0);
  ASSERT_EQ(done["runs"].size(), 1u);
  EXPECT_EQ(done["runs"][0]["agent_id"], builder);
  EXPECT_TRUE(c.sql("SELECT id FROM runs WHERE agent_id = " + std::to_string(gpu)).empty());
  for (const auto& [stage, agent] : stage_agents(c, id)) EXPECT_EQ(agent, "builder") << stage;
}

// A HIP kernel asking for more LDS than a gfx1151 workgroup has (jobs/exploits/24): clang-19 on
// the compile agent refuses the allocation, and the job is rejected at the resources gate,
// naming the amount and the target's LDS, before any GPU agent sees it.
TEST(CompileAgents, AHipKernelOverTheTargetsLdsIsRefusedByTheResourcesGate) {
  Cluster c;
  c.start_kfleetd();
  c.start_compile_agent("builder");
  c.start_agent("gpu-amd", "local", "gfx1151", "gfx1151");
  wait_enrolled(c, {"builder", "gpu-amd"});
  const auto id = c.submit_api((kfleet::testing::source_dir() / "jobs/exploits/24-hip-lds-over-limit/job.yaml").string());
  auto done = c.wait_terminal(id, 300000);
  EXPECT_EQ(done["job"]["state"], "rejected") << done.dump(2) << c.logs();
  const auto& v = done["job"]["verdict"];
  EXPECT_EQ(v.value("gate", ""), "resources") << done.dump(2);
  EXPECT_NE(v.value("reason", "").find("fused_attention (gfx1151): 65792 bytes of LDS > 65536, all the LDS a "
                                       "workgroup has on gfx1151"),
            std::string::npos)
      << done.dump(2);
  const auto gpu = agent_id(c, "gpu-amd");
  ASSERT_GT(gpu, 0);
  EXPECT_TRUE(c.sql("SELECT id FROM runs WHERE agent_id = " + std::to_string(gpu)).empty());
}

TEST(CompileAgents, AJobThatBuildsIsBenchmarkedByAGpuAgent) {
  Cluster c;
  start_builder_and_gpu(c);
  const auto id = c.submit_api(c.write_job("ok", Cluster::sim_job_yaml("handoff/ok")));
  auto done = c.wait_terminal(id, 120000);
  ASSERT_EQ(done["job"]["state"], "passed") << done.dump(2) << c.logs();
  EXPECT_EQ(done["job"]["simulated"], true);
  const auto builder = agent_id(c, "builder"), gpu = agent_id(c, "gpu-l4");
  ASSERT_EQ(done["runs"].size(), 2u) << done.dump(2);
  EXPECT_EQ(done["runs"][0]["agent_id"], builder);
  EXPECT_EQ(done["runs"][0]["outcome"], "passed");  // handed on
  EXPECT_EQ(done["runs"][1]["agent_id"], gpu);
  EXPECT_EQ(done["runs"][1]["outcome"], "passed");

  // Build and resources on the compile agent, for real; the GPU stages on the GPU agent,
  // marked simulated.
  std::map<std::string, std::string> who;
  for (const auto& [stage, agent] : stage_agents(c, id)) who[stage + "@" + agent] = agent;
  EXPECT_TRUE(who.count("build@builder")) << done.dump(2);
  EXPECT_TRUE(who.count("resources@builder"));
  EXPECT_TRUE(who.count("correctness@gpu-l4"));
  EXPECT_TRUE(who.count("benchmark@gpu-l4"));
  EXPECT_FALSE(who.count("build@gpu-l4"));
  EXPECT_FALSE(who.count("benchmark@builder"));
  bool resources = false, handed = false, bench = false;
  for (const auto& e : c.job_events(id)) {
    if (e["type"] == "resources") {
      resources = true;
      EXPECT_FALSE(e["data"].value("simulated", false)) << e.dump();
      ASSERT_FALSE(e["data"]["kernels"].empty()) << e.dump();
      EXPECT_GT(e["data"]["kernels"][0].value("registers", 0), 0) << e.dump();  // from ptxas
    }
    if (e["type"] == "run.handed_off") handed = true;
    if (e["type"] == "bench.result") {
      bench = true;
      EXPECT_TRUE(e["data"].value("simulated", false)) << e.dump();
    }
  }
  EXPECT_TRUE(resources);
  EXPECT_TRUE(handed);
  EXPECT_TRUE(bench);
}

TEST(CompileAgents, ACompileAgentKilledMidBuildRequeuesTheJob) {
  Cluster c;
  c.start_kfleetd();
  // The first compile agent's nvcc takes long enough to be killed in the middle of a build.
  // It runs in the job sandbox as an unprivileged uid, so it lives in a toolchain folder of its
  // own (the sandbox sees the compiler's prefix, read-only), readable and executable by anyone.
  namespace fs = std::filesystem;
  const std::string tools = c.dir() + "/toolchain";
  fs::create_directories(tools + "/bin");
  const std::string slow = tools + "/bin/slow-nvcc";
  write_file(slow, "#!/bin/sh\ncase \" $* \" in *\" -c \"*) sleep 60 ;; esac\n"
                   "exec /usr/local/cuda/bin/nvcc \"$@\"\n");
  const auto rx = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                  fs::perms::others_read | fs::perms::others_exec;
  for (const auto& p : {tools, tools + "/bin", slow}) fs::permissions(p, rx);
  Proc& first = c.start_compile_agent("builder-1", {{"KFLEET_NVCC", slow}});
  c.start_agent("gpu-l4", "local", "L4", "sm_89");
  wait_enrolled(c, {"builder-1", "gpu-l4"});
  const auto id = c.submit_api(c.write_job("killed", Cluster::sim_job_yaml("handoff/killed")));
  ASSERT_TRUE(wait_until(
      [&] {
        for (const auto& [stage, agent] : stage_agents(c, id))
          if (stage == "build" && agent == "builder-1") return true;
        return false;
      },
      std::chrono::seconds(60)))
      << c.logs();
  EXPECT_TRUE(is_leased_or_running(c.job(id)["job"]));
  first.kill9();
  c.start_compile_agent("builder-2");
  auto done = c.wait_terminal(id, 120000);
  ASSERT_EQ(done["job"]["state"], "passed") << done.dump(2) << c.logs();
  ASSERT_EQ(done["runs"].size(), 3u) << done.dump(2);
  EXPECT_EQ(done["runs"][0]["agent_id"], agent_id(c, "builder-1"));
  EXPECT_EQ(done["runs"][0]["outcome"], "lost");
  EXPECT_EQ(done["runs"][1]["agent_id"], agent_id(c, "builder-2"));
  EXPECT_EQ(done["runs"][1]["outcome"], "passed");
  EXPECT_EQ(done["runs"][2]["agent_id"], agent_id(c, "gpu-l4"));
  bool lost = false;
  for (const auto& e : c.job_events(id))
    if (e["type"] == "lease.lost") lost = true;
  EXPECT_TRUE(lost);
}

}  // namespace
}  // namespace kfleet::e2e
