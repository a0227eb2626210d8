#pragma once
// A kfleet cluster on loopback for end-to-end tests: kfleetd on a fresh SQLite file, agents on
// the simulated GPU backend, and the kfleet CLI, all as real processes.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/http_client.hpp"
#include "support.hpp"

namespace kfleet::e2e {

struct ClusterOptions {
  std::string provisioner = "static";
  nlohmann::json simulated_cloud;       // config for --provisioner simulated
  int lease_ttl_ms = 3000;
  int heartbeat_ms = 300;
  int stockout_cooldown_ms = 60000;
  std::vector<std::string> extra_args;  // more kfleetd flags
  std::string db_url;                   // --db for kfleetd: "" = a SQLite file in dir()
};

// Starts one more kfleetd (argv; its log in `log`) with the e2e tokens in its environment, its
// --port-file at `port_file`, and waits until it listens: its port, or 0 and a failure with its
// log when it did not start.
int start_kfleetd_process(Proc& p, const std::vector<std::string>& argv, const std::string& log,
                          const std::string& port_file);

class Cluster {
 public:
  explicit Cluster(ClusterOptions o = {});
  ~Cluster();

  void start_kfleetd();                 // first start: port 0; restarts reuse the port
  void kill_kfleetd();                  // SIGKILL
  Proc& kfleetd() { return kfleetd_; }
  // `extra`: more kfleet-agent flags (e.g. --provider gce --instance-id NAME, as a cloud
  // instance's startup script passes them).
  Proc& start_agent(const std::string& name, const std::string& region = "local",
                    const std::string& gpu_class = "L4", const std::string& arch = "sm_89",
                    const std::vector<std::string>& extra = {});
  // A compile agent (--backend compile): real nvcc / clang-19 builds, no GPU stages.
  Proc& start_compile_agent(const std::string& name,
                            const std::map<std::string, std::string>& env = {});

  const std::string& url() const { return url_; }
  const std::string& dir() const { return dir_; }
  std::string db_path() const { return dir_ + "/kfleet.db"; }
  // kfleetd's first admin token (given through KFLEET_ADMIN_TOKEN, never argv); the CLI uses
  // it through KFLEET_TOKEN. Admin includes submit and read.
  static constexpr const char* kUserToken = "e2e-admin-token-5f0c3a9e1b7d";
  static constexpr const char* kEnrolToken = "e2e-enrol-token-8a1d4c2e";

  // Writes dir/jobs/<name>/job.yaml (with `yaml`) and a kernel source k.cu beside it.
  std::string write_job(const std::string& name, const std::string& yaml);
  // A valid job running on the simulated backend; `extra` is appended YAML.
  static std::string sim_job_yaml(const std::string& name, const std::string& gpu = "L4",
                                  const std::string& regions = "", int stage_ms = 20,
                                  double time_us = 100, const std::string& extra = "");

  CmdResult cli(const std::vector<std::string>& args, int timeout_ms = 120000);
  nlohmann::json get(const std::string& path);           // GET JSON (asserting 200)
  nlohmann::json job(std::int64_t id) { return get("/api/v1/jobs/" + std::to_string(id)); }
  std::vector<nlohmann::json> job_events(std::int64_t id);
  // Waits for a terminal state; returns the job JSON (fails the test on timeout).
  nlohmann::json wait_terminal(std::int64_t id, int timeout_ms = 60000);
  std::int64_t submit_api(const std::string& yaml_path, bool force = false);
  // Enrols an agent the test drives itself over HTTP (simulated, one L4 of sm_89): kfleetd's
  // answer (agent_id, token).
  nlohmann::json enrol_raw_agent(const std::string& name);
  // Runs a query on the SQLite file (read-only) and returns rows of text.
  std::vector<std::vector<std::string>> sql(const std::string& query);
  // The id of the database's one job, which passed in one simulated run ("" and the test fails
  // when that is not so).
  std::string the_passed_simulated_job();
  std::string logs() const;             // every process log, for failure messages

 private:
  ClusterOptions opts_;
  std::string dir_, url_;
  int port_ = 0;
  int restarts_ = 0;
  Proc kfleetd_;
  std::vector<std::unique_ptr<Proc>> agents_;
};

}  // namespace kfleet::e2e
