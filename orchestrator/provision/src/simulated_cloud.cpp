// SimulatedCloud: scripted answers and real agent processes. Timers carry a weak reference to
// the state, so a completion that fires after the cloud is gone does nothing.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kfleet/provision/simulated_cloud.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent_process.hpp"
#include "cloud_messages.hpp"

namespace kfleet::provision {

namespace {

constexpr auto kReapPoll = std::chrono::milliseconds(20);
constexpr int kVcpusPerInstance = 4;

struct RegionState {
  SimulatedRegion cfg;
  std::deque<std::string> script;
  int used = 0;  // granted instances plus ones still starting
};

struct Instance {
  SimulatedInstance info;
  bool releasing = false;
  std::vector<std::function<void(Result<void>)>> on_released;
  std::shared_ptr<boost::asio::steady_timer> grace;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

struct SimulatedCloud::State {
  boost::asio::any_io_executor ex;
  SimulatedCloudConfig cfg;
  std::vector<RegionState> regions;
  std::vector<Instance> instances;
  std::uint64_t next_serial = 1;
  bool stopped = false;

  RegionState* region(const std::string& name) {
    for (auto& r : regions)
      if (r.cfg.name == name) return &r;
    return nullptr;
  }
  int total_used() const {
    int n = 0;
    for (const auto& r : regions) n += r.used;
    return n;
  }
  Instance* instance(const std::string& id) {
    for (auto& i : instances)
      if (i.info.id == id) return &i;
    return nullptr;
  }
  std::string instance_type(const RegionState& r) const {
    return r.cfg.instance_type.empty() ? detail::instance_type_for(r.cfg.gpu, r.cfg.name) : r.cfg.instance_type;
  }

  // What the cloud answers next in this region; consumes one script word.
  std::string next_word(RegionState& r, const std::string& gpu) {
    if (lower(gpu) != lower(r.cfg.gpu)) return "unsupported";
    std::string word;
    if (!r.script.empty()) {
      word = r.script.front();
      r.script.pop_front();
    } else {
      word = "ok";
    }
    // A script can stage failures but cannot conjure hardware: ok needs room.
    if (word == "ok" && r.used >= r.cfg.capacity) word = "stockout";
    if (word == "ok" && total_used() >= cfg.max_instances) word = "quota";
    return word;
  }

  Result<SimulatedInstance> start_agent(const RegionState& r, const std::string& id,
                                        const std::string& name) {
    const std::filesystem::path dir = std::filesystem::path(cfg.work_root) / id;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return make_error(Errc::unavailable,
                        "cannot create " + dir.string() + ": " + ec.message() + " (check work_root)");
    // The enrolment token (and the CA kfleetd's certificate chains to) go in 0600 files, never
    // on the agent's command line.
    auto write_0600 = [](const std::string& path, const std::string& text) -> Result<void> {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) return make_error(Errc::unavailable, "cannot write " + path);
      const bool ok = ::fchmod(fd, 0600) == 0 &&
                      ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      if (!ok) return make_error(Errc::unavailable, "cannot write " + path);
      return ok_result();
    };
    const std::string token_file = (dir / "enrol-token").string();
    if (auto w = write_0600(token_file, cfg.enrol_token + "\n"); !w) return w.error();
    std::vector<std::string> argv = {
        cfg.agent_binary, "--server",     cfg.server_url, "--enrol-token-file", token_file,
        "--name",         name,           "--region",     r.cfg.name,      "--backend",
        "simulated",      "--gpu-class",  r.cfg.gpu,      "--arch",        r.cfg.arch,
        "--provider",     "simulated",    "--instance-id", id,             "--work-dir",
        dir.string()};
    if (!cfg.server_ca_pem.empty()) {
      const std::string ca_file = (dir / "ca.pem").string();
      if (auto w = write_0600(ca_file, cfg.server_ca_pem); !w) return w.error();
      argv.insert(argv.end(), {"--ca-file", ca_file});
    }
    auto pid = detail::spawn_in_group(argv, (dir / "agent.log").string());
    if (!pid) return pid.error();
    return SimulatedInstance{id, name, r.cfg.name, *pid, true};
  }

  void finish_release(const std::string& id) {
    auto it = std::find_if(instances.begin(), instances.end(),
                           [&](const Instance& i) { return i.info.id == id; });
    if (it == instances.end()) return;
    // The leader is a zombie, so its group id cannot have been reused: safe to sweep the group.
    detail::signal_group(it->info.pid, SIGKILL);
    detail::reap(it->info.pid);
    if (it->grace) it->grace->cancel();
    if (auto* r = region(it->info.region)) --r->used;
    auto waiters = std::move(it->on_released);
    instances.erase(it);
    for (auto& w : waiters) w(ok_result());
  }
};

namespace {

void poll_until_exited(const std::weak_ptr<SimulatedCloud::State>& weak, std::string id) {
  auto st = weak.lock();
  if (!st || st->stopped) return;
  Instance* inst = st->instance(id);
  if (!inst) return;
  if (detail::has_exited(inst->info.pid)) {
    st->finish_release(id);
    return;
  }
  auto timer = std::make_shared<boost::asio::steady_timer>(st->ex, kReapPoll);
  timer->async_wait([weak, id, timer](boost::system::error_code) { poll_until_exited(weak, id); });
}

}  // namespace

SimulatedCloud::SimulatedCloud(boost::asio::any_io_executor ex, SimulatedCloudConfig cfg)
    : st_(std::make_shared<State>()) {
  st_->ex = std::move(ex);
  for (const auto& r : cfg.regions)
    st_->regions.push_back(RegionState{r, {r.script.begin(), r.script.end()}, 0});
  st_->cfg = std::move(cfg);
}

SimulatedCloud::~SimulatedCloud() { shutdown(); }

int SimulatedCloud::capacity_budget() const {
  return std::max(0, st_->cfg.max_instances - st_->total_used());
}

std::vector<std::string> SimulatedCloud::regions() const {
  std::vector<std::string> out;
  for (const auto& r : st_->regions) out.push_back(r.cfg.name);
  return out;
}

std::vector<std::string> SimulatedCloud::gpu_classes() const {
  std::vector<std::string> out;
  for (const auto& r : st_->regions)
    if (std::find(out.begin(), out.end(), r.cfg.gpu) == out.end()) out.push_back(r.cfg.gpu);
  return out;
}

void SimulatedCloud::request(const CapacityRequest& req, std::function<void(CapacityResult)> done) {
  auto& st = *st_;
  RegionState* r = st.region(req.region);
  if (st.stopped || !r) {
    CapacityResult res{st.stopped ? Outcome::fatal : Outcome::unsupported,
                       st.stopped ? "the simulated cloud is shut down"
                                  : "InvalidParameterValue: the simulated cloud has no region '" +
                                        req.region + "'",
                       {},
                       0};
    boost::asio::post(st.ex, [done = std::move(done), res]() { done(res); });
    return;
  }
  const std::string word = st.next_word(*r, req.gpu);
  const std::string region_name = r->cfg.name;
  std::string id, name;
  if (word == "ok") {
    ++r->used;  // held from now on, so concurrent requests see the capacity as taken
    const std::uint64_t serial = st.next_serial++;
    char buf[32];
    std::snprintf(buf, sizeof buf, "i-%017llx", static_cast<unsigned long long>(serial));
    id = buf;
    name = "sim-" + region_name + "-" + std::to_string(serial);
  }
  const detail::CloudAnswer answer{word, st.instance_type(*r), region_name,
                                   st.cfg.max_instances * kVcpusPerInstance, st.cfg.max_instances};
  const int delay_ms = r->cfg.delay_ms;
  auto timer = std::make_shared<boost::asio::steady_timer>(st.ex, std::chrono::milliseconds(delay_ms));
  std::weak_ptr<State> weak = st_;
  timer->async_wait([weak, timer, done = std::move(done), answer, id, name, delay_ms](
                        boost::system::error_code) {
    auto st = weak.lock();
    if (!st || st->stopped) return;
    CapacityResult res;
    res.seconds = delay_ms / 1000.0;
    RegionState* r = st->region(answer.region);
    if (answer.word != "ok") {
      res.outcome = *detail::outcome_of_script_word(answer.word);
      res.message = detail::cloud_message(answer);
      done(res);
      return;
    }
    auto inst = st->start_agent(*r, id, name);
    if (!inst) {
      --r->used;
      res.outcome = Outcome::fatal;
      res.message = inst.error().message;
      done(res);
      return;
    }
    st->instances.push_back(Instance{*inst, false, {}, nullptr});
    res.outcome = Outcome::ok;
    res.instance_ids = {id};
    done(res);
  });
}

void SimulatedCloud::release(const std::string& instance_id, std::function<void(Result<void>)> done) {
  auto& st = *st_;
  Instance* inst = st.instance(instance_id);
  if (!inst) {
    boost::asio::post(st.ex, [done = std::move(done), instance_id]() {
      done(make_error(Errc::not_found, "the simulated cloud has no instance '" + instance_id + "'"));
    });
    return;
  }
  inst->on_released.push_back(std::move(done));
  if (inst->releasing) return;
  inst->releasing = true;
  detail::signal_group(inst->info.pid, SIGTERM);
  std::weak_ptr<State> weak = st_;
  inst->grace = std::make_shared<boost::asio::steady_timer>(
      st.ex, std::chrono::milliseconds(st.cfg.release_grace_ms));
  const int pid = inst->info.pid;
  inst->grace->async_wait([weak, instance_id, pid](boost::system::error_code ec) {
    auto st = weak.lock();
    if (ec || !st || !st->instance(instance_id)) return;
    detail::signal_group(pid, SIGKILL);  // ignored SIGTERM for the whole grace period
  });
  poll_until_exited(weak, instance_id);
}

void SimulatedCloud::shutdown() {
  auto& st = *st_;
  if (st.stopped) return;
  st.stopped = true;
  for (const auto& i : st.instances) detail::signal_group(i.info.pid, SIGTERM);
  // Shutdown is the end of the control plane, so blocking here holds nothing else up.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(st.cfg.release_grace_ms);
  auto all_exited = [&] {
    return std::all_of(st.instances.begin(), st.instances.end(),
                       [](const Instance& i) { return detail::has_exited(i.info.pid); });
  };
  while (!all_exited() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(kReapPoll);
  for (const auto& i : st.instances) {
    detail::signal_group(i.info.pid, SIGKILL);
    detail::reap(i.info.pid);
  }
  st.instances.clear();
  for (auto& r : st.regions) r.used = 0;
}

Result<void> SimulatedCloud::set_script(const std::string& region, std::vector<std::string> outcomes) {
  RegionState* r = st_->region(region);
  if (!r) return make_error(Errc::not_found, "the simulated cloud has no region '" + region + "'");
  for (const auto& w : outcomes)
    if (!detail::outcome_of_script_word(w))
      return make_error(Errc::invalid_argument,
                        "unknown outcome '" + w +
                            "': use ok, stockout, unsupported, quota, auth or throttle");
  r->script.assign(outcomes.begin(), outcomes.end());
  return ok_result();
}

std::vector<SimulatedInstance> SimulatedCloud::instances() {
  std::vector<SimulatedInstance> out;
  for (auto& i : st_->instances) {
    if (i.info.alive && detail::has_exited(i.info.pid)) i.info.alive = false;
    out.push_back(i.info);
  }
  return out;
}

int SimulatedCloud::used(const std::string& region) const {
  const RegionState* r = st_->region(region);
  return r ? r->used : 0;
}

ProvisionerPtr make_simulated_cloud(boost::asio::any_io_executor ex, SimulatedCloudConfig cfg) {
  return std::make_unique<SimulatedCloud>(std::move(ex), std::move(cfg));
}

}  // namespace kfleet::provision
