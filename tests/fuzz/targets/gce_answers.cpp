// Compute Engine's answers as kfleetd's gce provisioner reads them: the token endpoint's
// (metadata server) answer, instances.insert, zoneOperations.get until DONE, error bodies and
// operation errors, and instances.delete. The real provisioner runs; only its one HTTP call
// (curl_call.cpp, not linked) is replaced by gce::call below, which hands out the input's
// answers in order. A request must always complete with an outcome, and nothing may throw.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "cloud_answers.hpp"
#include "curl_call.hpp"
#include "fuzz_check.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/provision_gce/gce_error.hpp"
#include "kfleet/provision_gce/gce_provisioner.hpp"

namespace {

std::mutex answers_mu;
std::vector<kfleet::fuzz::CannedAnswer> answers;
std::size_t next_answer = 0;

}  // namespace

namespace kfleet::provision::gce {

Result<Answer> call(const std::string&, const std::string&, const std::vector<std::string>&,
                    const std::string&, std::chrono::milliseconds) {
  std::lock_guard lock(answers_mu);
  if (next_answer >= answers.size() || !answers[next_answer].status) {
    ++next_answer;
    return make_error(Errc::unavailable, "connection refused");
  }
  const auto& a = answers[next_answer++];
  return Answer{*a.status, a.body};
}

std::string form_escape(const std::string& s) { return s; }

}  // namespace kfleet::provision::gce

// Warnings about each refused answer would cost more than the run itself; errors still print.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kfleet::log::set_level(kfleet::log::Level::error);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kfleet;
  using namespace kfleet::provision;
  const std::string text(reinterpret_cast<const char*>(data), size);
  {
    std::lock_guard lock(answers_mu);
    answers = fuzz::split_answers(text);
    next_answer = 0;
    // The error classifier on each answer by itself, as every failed call meets it.
    for (const auto& a : answers)
      if (a.status) (void)classify_gce_http(*a.status, a.body);
  }

  GceConfig cfg;
  cfg.project = "fuzz-project";
  cfg.zones = {"us-central1-a"};
  cfg.server_url = "https://kfleetd.example:8443";
  cfg.enrol_token = "0123456789abcdef0123456789abcdef";
  cfg.owner = "fuzz";
  cfg.cost_center = "fuzz";
  cfg.token_url = "http://metadata.google.internal/token";
  cfg.api_endpoint = "https://compute.example/compute/v1";
  cfg.poll_interval = std::chrono::milliseconds(1);
  cfg.retry_base = std::chrono::milliseconds(0);
  cfg.operation_timeout = std::chrono::milliseconds(5000);
  cfg.http_attempts = 3;

  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  auto prov = make_gce_provisioner(cfg, io.get_executor(), std::make_shared<SystemClock>());
  if (!prov) fuzz::broken("the fuzz target's gce config was refused: " + prov.error().message);
  GceProvisioner& p = **prov;

  bool finished = false;
  CapacityResult result;
  p.request(CapacityRequest{1, "us-central1-a", "L4", 1}, [&](CapacityResult r) {
    result = std::move(r);
    finished = true;
    io.stop();
  });
  io.run();
  fuzz::check(finished, "a capacity request never completed");
  if (result.outcome == Outcome::ok) {
    fuzz::check(result.instance_ids.size() == 1, "ok without the instance it made");
    io.restart();
    bool released = false;
    p.release(result.instance_ids[0], [&](Result<void>) {
      released = true;
      io.stop();
    });
    io.run();
    fuzz::check(released, "a release never completed");
  } else {
    fuzz::check(!result.message.empty(), "a failed capacity request without a message");
  }
  p.shutdown();
  return 0;
}
