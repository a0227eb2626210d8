// Real agent processes: the argv the agent engineer implements, its own process group, the
// log file, and that release (and shutdown) really end the process.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "provision_test_util.hpp"

namespace kfleet::provision {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)

std::vector<std::string> read_lines(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// kill(pid, 0) fails with ESRCH only once the child has been reaped.
bool gone(int pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

struct AgentProcessTest : ::testing::Test {
  boost::asio::io_context io;
  TempDir tmp;

  SimulatedInstance start(SimulatedCloud& cloud) {
    std::optional<CapacityResult> got;
    cloud.request(CapacityRequest{7, "us-east-1", "L4"}, [&](CapacityResult r) { got = r; });
    EXPECT_TRUE(run_until(io, [&] { return got.has_value(); }));
    EXPECT_EQ(got->outcome, Outcome::ok) << got->message;
    const auto insts = cloud.instances();
    EXPECT_EQ(insts.size(), 1u);
    return insts.at(0);
  }
};

TEST_F(AgentProcessTest, StartsAgentWithTheAgreedFlagsAndKillsItOnRelease) {
  SimulatedCloud cloud(io.get_executor(), one_region(tmp.path().string(), 1));
  const SimulatedInstance inst = start(cloud);
  EXPECT_TRUE(inst.alive);
  EXPECT_EQ(::getpgid(inst.pid), inst.pid) << "the agent leads its own process group";

  const auto dir = tmp.path() / inst.id;
  ASSERT_TRUE(run_until(io, [&] { return std::filesystem::exists(dir / "argv.txt"); }));
  const std::vector<std::string> expected = {
      KFLEET_FAKE_AGENT, "--server",   "http://127.0.0.1:1", "--enrol-token-file",
      (dir / "enrol-token").string(),
      "--name",          inst.name,    "--region",           "us-east-1",     "--backend",
      "simulated",       "--gpu-class", "L4",                "--arch",        "sm_89",
      "--provider",      "simulated",  "--instance-id",      inst.id,         "--work-dir",
      dir.string()};
  EXPECT_EQ(read_lines(dir / "argv.txt"), expected);
  // The token itself is in a file only its owner may read, never on the command line.
  EXPECT_EQ(read_lines(dir / "enrol-token"), std::vector<std::string>{"tok"});
  EXPECT_EQ(std::filesystem::status(dir / "enrol-token").permissions() &
                std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ASSERT_TRUE(run_until(io, [&] {
    const auto log = read_lines(dir / "agent.log");
    return !log.empty() && log[0].find("fake agent") == 0;
  })) << "stdout goes to agent.log";

  std::optional<Result<void>> released;
  cloud.release(inst.id, [&](Result<void> r) { released = r; });
  ASSERT_TRUE(run_until(io, [&] { return released.has_value(); }));
  EXPECT_TRUE(released->ok());
  EXPECT_TRUE(gone(inst.pid));
  EXPECT_TRUE(cloud.instances().empty());
}

// With kfleetd on https, the agent gets the CA that signed kfleetd's certificate as a 0600 file
// and --ca-file; the token stays in its file, off the command line.
constexpr const char* kTestCa =
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2E=\n-----END CERTIFICATE-----\n";

TEST_F(AgentProcessTest, HttpsAgentGetsTheCaAsA0600FileAndCaFile) {
  auto cfg = one_region(tmp.path().string(), 1);
  cfg.server_url = "https://127.0.0.1:1";
  cfg.enrol_token = "kfe_secret-0123456789abcdef";
  cfg.server_ca_pem = kTestCa;
  SimulatedCloud cloud(io.get_executor(), cfg);
  const SimulatedInstance inst = start(cloud);
  const auto dir = tmp.path() / inst.id;
  ASSERT_TRUE(run_until(io, [&] { return std::filesystem::exists(dir / "argv.txt"); }));
  const auto argv = read_lines(dir / "argv.txt");
  ASSERT_GE(argv.size(), 2u);
  EXPECT_EQ(argv[argv.size() - 2], "--ca-file");
  EXPECT_EQ(argv.back(), (dir / "ca.pem").string());
  for (const auto& a : argv) EXPECT_EQ(a.find("kfe_secret"), std::string::npos) << "a token on the command line";
  std::ifstream in(dir / "ca.pem");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), kTestCa);
  const auto owner_rw = std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;
  EXPECT_EQ(std::filesystem::status(dir / "ca.pem").permissions() & std::filesystem::perms::all, owner_rw);
  EXPECT_EQ(std::filesystem::status(dir / "enrol-token").permissions() & std::filesystem::perms::all, owner_rw);
  cloud.shutdown();
}

TEST_F(AgentProcessTest, AgentIgnoringSigtermIsKilledAfterTheGrace) {
  auto cfg = one_region(tmp.path().string(), 1);
  cfg.release_grace_ms = 100;
  ::setenv("KFLEET_FAKE_AGENT_IGNORE_TERM", "1", 1);
  SimulatedCloud cloud(io.get_executor(), cfg);
  const SimulatedInstance inst = start(cloud);
  ::unsetenv("KFLEET_FAKE_AGENT_IGNORE_TERM");
  // Its handler is set before argv.txt appears, so SIGTERM is surely ignored from here on.
  ASSERT_TRUE(run_until(io, [&] { return std::filesystem::exists(tmp.path() / inst.id / "argv.txt"); }));

  std::optional<Result<void>> released;
  cloud.release(inst.id, [&](Result<void> r) { released = r; });
  ASSERT_TRUE(run_until(io, [&] { return released.has_value(); }));
  EXPECT_TRUE(gone(inst.pid));
}

TEST_F(AgentProcessTest, ExitedAgentShowsAsNotAlive) {
  SimulatedCloud cloud(io.get_executor(), one_region(tmp.path().string(), 1));
  const SimulatedInstance inst = start(cloud);
  ASSERT_TRUE(run_until(io, [&] { return std::filesystem::exists(tmp.path() / inst.id / "argv.txt"); }));
  ::kill(inst.pid, SIGKILL);
  ASSERT_TRUE(run_until(io, [&] { return !cloud.instances().at(0).alive; }));
  EXPECT_EQ(cloud.used("us-east-1"), 1) << "a crashed agent's instance is held until released";
}

TEST_F(AgentProcessTest, ShutdownKillsEveryAgent) {
  auto cfg = one_region(tmp.path().string(), 3);
  SimulatedCloud cloud(io.get_executor(), cfg);
  std::vector<int> pids;
  for (int i = 0; i < 2; ++i) {
    std::optional<CapacityResult> got;
    cloud.request(CapacityRequest{i, "us-east-1", "L4"}, [&](CapacityResult r) { got = r; });
    ASSERT_TRUE(run_until(io, [&] { return got.has_value(); }));
    ASSERT_EQ(got->outcome, Outcome::ok) << got->message;
  }
  for (const auto& i : cloud.instances()) pids.push_back(i.pid);
  ASSERT_EQ(pids.size(), 2u);
  cloud.shutdown();
  for (int pid : pids) EXPECT_TRUE(gone(pid)) << pid;
  EXPECT_TRUE(cloud.instances().empty());
}

}  // namespace
}  // namespace kfleet::provision
