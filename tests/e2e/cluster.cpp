#include "cluster.hpp"

#include <sqlite3.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "kfleet/common/bundle.hpp"
#include "kfleet/common/jobspec.hpp"

namespace kfleet::e2e {

namespace fs = std::filesystem;

Cluster::Cluster(ClusterOptions o) : opts_(std::move(o)), dir_(make_temp_dir("kfleet-e2e")) {}

Cluster::~Cluster() {
  for (auto& a : agents_) a->terminate(3000);
  if (kfleetd_.running()) kfleetd_.terminate(5000);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir_);
  else std::fprintf(stderr, "e2e: keeping %s for inspection\n", dir_.c_str());
}

void Cluster::start_kfleetd() {
  const std::string port_file = dir_ + "/port";
  fs::remove(port_file);
  std::vector<std::string> argv = {KFLEETD_BIN,
                                   "--listen", "127.0.0.1:" + std::to_string(port_),
                                   "--db", opts_.db_url.empty() ? db_path() : opts_.db_url,
                                   "--lease-ttl-ms", std::to_string(opts_.lease_ttl_ms),
                                   "--heartbeat-ms", std::to_string(opts_.heartbeat_ms),
                                   "--stockout-cooldown-ms", std::to_string(opts_.stockout_cooldown_ms),
                                   "--port-file", port_file,
                                   "--provisioner", opts_.provisioner,
                                   "--agent-binary", KFLEET_AGENT_BIN};
  if (opts_.provisioner == "simulated") {
    nlohmann::json sc = opts_.simulated_cloud;
    sc["work_root"] = dir_ + "/cloud";
    fs::create_directories(dir_ + "/cloud");
    write_file(dir_ + "/cloud.json", sc.dump(2));
    argv.insert(argv.end(), {"--simulated-cloud", dir_ + "/cloud.json"});
  }
  argv.insert(argv.end(), opts_.extra_args.begin(), opts_.extra_args.end());
  kfleetd_ = Proc::spawn(argv, dir_ + "/kfleetd-" + std::to_string(restarts_++) + ".log",
                         {{"KFLEET_LOG", "debug"},
                          {"KFLEET_ADMIN_TOKEN", kUserToken},
                          {"KFLEET_ENROL_TOKEN", kEnrolToken}});
  ASSERT_TRUE(wait_until([&] { return fs::exists(port_file) || !kfleetd_.running(); },
                         std::chrono::seconds(20)));
  ASSERT_TRUE(fs::exists(port_file)) << "kfleetd did not start:\n" << kfleetd_.log();
  port_ = std::stoi(read_file(port_file));
  url_ = "http://127.0.0.1:" + std::to_string(port_);
}

void Cluster::kill_kfleetd() { kfleetd_.kill9(); }

Proc& Cluster::start_agent(const std::string& name, const std::string& region,
                           const std::string& gpu_class, const std::string& arch,
                           const std::vector<std::string>& extra) {
  const std::string work = dir_ + "/agent-" + name;
  fs::create_directories(work);
  std::vector<std::string> argv = {KFLEET_AGENT_BIN, "--server", url_,
                                   "--name", name, "--region", region, "--backend", "simulated",
                                   "--gpu-class", gpu_class, "--arch", arch, "--work-dir", work};
  argv.insert(argv.end(), extra.begin(), extra.end());
  agents_.push_back(std::make_unique<Proc>(Proc::spawn(
      argv,
      dir_ + "/agent-" + name + ".log",
      {{"KFLEET_LOG", "debug"}, {"KFLEET_ENROL_TOKEN", kEnrolToken}})));
  return *agents_.back();
}

Proc& Cluster::start_compile_agent(const std::string& name,
                                   const std::map<std::string, std::string>& env) {
  const std::string work = dir_ + "/agent-" + name;
  fs::create_directories(work);
  std::map<std::string, std::string> e = env;
  e.emplace("KFLEET_LOG", "debug");
  e.emplace("KFLEET_ENROL_TOKEN", kEnrolToken);
  agents_.push_back(std::make_unique<Proc>(Proc::spawn(
      {KFLEET_AGENT_BIN, "--server", url_, "--name", name,
       "--region", "build", "--backend", "compile", "--work-dir", work},
      dir_ + "/agent-" + name + ".log", e)));
  return *agents_.back();
}

std::string Cluster::write_job(const std::string& name, const std::string& yaml) {
  const std::string d = dir_ + "/jobs/" + name;
  fs::create_directories(d);
  write_file(d + "/k.cu", "// " + name + "\n__global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n");
  write_file(d + "/job.yaml", yaml);
  return d + "/job.yaml";
}

std::string Cluster::sim_job_yaml(const std::string& name, const std::string& gpu,
                                  const std::string& regions, int stage_ms, double time_us,
                                  const std::string& extra) {
  std::string y = "name: " + name + "\ntarget:\n  gpu: " + gpu + "\n";
  if (!regions.empty()) y += "  regions: [" + regions + "]\n";
  y += "kernel:\n  family: attention\n  language: cuda\n  sources: [k.cu]\n  entry: k\n"
       "  defines: {TAG: \"" + name + "\"}\n"
       "gates:\n  resources: {max_registers: 128}\n  correctness:\n    dtype: fp16\n"
       "    cases:\n      - {name: small, shape: {B: 1, H: 2, S: 128, D: 64}, seeds: [0, 1]}\n"
       "    tolerance: {atol: 1.0e-3, rtol: 1.0e-3}\n"
       "simulate: {time_us: " + std::to_string(time_us) + ", stage_ms: " + std::to_string(stage_ms) + "}\n";
  return y + extra;
}

CmdResult Cluster::cli(const std::vector<std::string>& args, int timeout_ms) {
  std::vector<std::string> argv = {KFLEET_CLI_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_cmd(argv, timeout_ms,
                 {{"KFLEET_SERVER", url_}, {"KFLEET_TOKEN", kUserToken}, {"NO_COLOR", "1"},
                  {"HOME", dir_}, {"XDG_CONFIG_HOME", dir_ + "/xdg"}});
}

nlohmann::json Cluster::get(const std::string& path) {
  HttpClient c(url_, kUserToken);
  auto r = c.get(path);
  EXPECT_TRUE(r.ok()) << path << ": " << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  EXPECT_EQ(r->status, 200) << path << ": " << r->body;
  auto j = r->json();
  return j.ok() ? *j : nlohmann::json();
}

std::vector<nlohmann::json> Cluster::job_events(std::int64_t id) {
  auto j = get("/api/v1/jobs/" + std::to_string(id) + "/events?limit=10000");
  std::vector<nlohmann::json> out;
  for (auto& e : j["events"]) out.push_back(e);
  return out;
}

nlohmann::json Cluster::wait_terminal(std::int64_t id, int timeout_ms) {
  nlohmann::json last;
  bool done = wait_until(
      [&] {
        HttpClient c(url_, kUserToken);
        auto r = c.get("/api/v1/jobs/" + std::to_string(id));
        if (!r.ok() || r->status != 200) return false;
        last = *r->json();
        auto s = last["job"]["state"].get<std::string>();
        return s == "passed" || s == "rejected" || s == "error" || s == "cancelled";
      },
      std::chrono::milliseconds(timeout_ms), std::chrono::milliseconds(50));
  EXPECT_TRUE(done) << "job " << id << " did not finish: " << last.dump(2) << "\n" << logs();
  return last;
}

std::int64_t Cluster::submit_api(const std::string& yaml_path, bool force) {
  auto spec = parse_job_spec_file(yaml_path);
  EXPECT_TRUE(spec.ok()) << spec.error_text();
  if (!spec.ok()) return 0;
  // lib: sources come from this source tree's kernel library (read, never written).
  auto b = pack_job_bundle(fs::path(yaml_path).parent_path().string(), spec.spec->kernel.sources,
                           std::string(KFLEET_SOURCE_DIR) + "/kernels");
  EXPECT_TRUE(b.ok());
  HttpClient c(url_, kUserToken);
  auto r = c.post_json("/api/v1/jobs", {{"spec_yaml", read_file(yaml_path)},
                                        {"source_name", fs::path(yaml_path).filename().string()},
                                        {"bundle", bundle_to_json(*b)},
                                        {"force", force}});
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return 0;
  EXPECT_TRUE(r->status == 201 || r->status == 200) << r->body;
  return (*r->json())["job"]["id"].get<std::int64_t>();
}

std::string Cluster::the_passed_simulated_job() {
  const auto jobs = sql("SELECT id, state FROM jobs");
  if (jobs.size() != 1) {
    ADD_FAILURE() << jobs.size() << " jobs in the database, not 1\n" << logs();
    return "";
  }
  EXPECT_EQ(jobs[0][1], "passed");
  EXPECT_EQ(sql("SELECT outcome, simulated FROM runs WHERE job_id = " + jobs[0][0]),
            (std::vector<std::vector<std::string>>{{"passed", "1"}}));
  return jobs[0][0];
}

std::vector<std::vector<std::string>> Cluster::sql(const std::string& query) {
  std::vector<std::vector<std::string>> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path();
    sqlite3_close(db);
    return rows;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, query.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "bad query " << query << ": " << sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        auto* t = sqlite3_column_text(st, i);
        row.push_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      rows.push_back(std::move(row));
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

std::string Cluster::logs() const { return log_tails(dir_); }

int start_kfleetd_process(Proc& p, const std::vector<std::string>& argv, const std::string& log,
                          const std::string& port_file) {
  fs::remove(port_file);
  p = Proc::spawn(argv, log,
                  {{"KFLEET_LOG", "debug"},
                   {"KFLEET_ADMIN_TOKEN", Cluster::kUserToken},
                   {"KFLEET_ENROL_TOKEN", Cluster::kEnrolToken}});
  wait_until([&] { return fs::exists(port_file) || !p.running(); }, std::chrono::seconds(20));
  if (!fs::exists(port_file)) {
    ADD_FAILURE() << "kfleetd did not start:\n" << p.log();
    return 0;
  }
  return std::stoi(read_file(port_file));
}

nlohmann::json Cluster::enrol_raw_agent(const std::string& name) {
  HttpClient enrol(url_, kEnrolToken);
  auto r = enrol.post_json("/api/v1/agents/enrol",
                           {{"name", name}, {"region", "local"}, {"backend", "simulated"},
                            {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}});
  EXPECT_TRUE(r.ok() && r->json() && r->json()->contains("token"))
      << name << ": " << (r.ok() ? r->body : r.error().message);
  return r.ok() && r->json() ? *r->json() : nlohmann::json::object();
}

}  // namespace kfleet::e2e
