// Triton and torch jobs go only to agents whose Python runs them (kfleet::gpu_runs_language);
// the control plane reads a job's kernel.language from its row (jobs.language), also on the
// pending-job scan that leaves specs out, so a takeover reads no spec per queued job.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>

#include "kfleet/common/bundle.hpp"
#include "plane.hpp"

namespace kfleet::core {
namespace {

struct Plane : test::Plane {
  void settle() {
    io.restart();
    io.run_for(std::chrono::seconds(5));
  }

  // A CUDA agent with one NVIDIA L4; `python`: what it reported of its Python (null: nothing).
  std::int64_t enrol(const std::string& name, nlohmann::json python) {
    EnrolRequest er{name, "us-east-1", "cuda", "static", "", {}, {}};
    GpuInfo g;
    g.gpu_class = "L4";
    g.arch = "sm_89";
    g.vendor = "nvidia";
    if (!python.is_null()) g.extra["python"] = std::move(python);
    er.gpus = {g};
    auto r = cp->enrol(er);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? r->agent_id : 0;
  }

  std::int64_t submit(const std::string& name, const std::string& language) {
    Bundle b;
    const std::string src = language == "cuda" ? "k.cu" : "k.py";
    b.files.push_back({src, language == "cuda" ? "// k\n" : "# k\n"});
    SubmitRequest sr{"name: " + name + "\ntarget: {gpu: L4}\nkernel: {family: attention, language: " +
                         language + ", sources: [" + src + "]}\n",
                     "job.yaml", bundle_to_json(b), true, "test"};
    auto r = cp->submit(sr);
    EXPECT_TRUE(std::holds_alternative<SubmitResult>(r))
        << (std::holds_alternative<SubmitError>(r) ? std::get<SubmitError>(r).error.message : "");
    return std::holds_alternative<SubmitResult>(r) ? std::get<SubmitResult>(r).job.id : 0;
  }

  // One long-poll of `agent`: the job it was offered (0: none).
  std::int64_t offered(std::int64_t agent) {
    std::optional<LeaseOffer> got;
    bool done = false;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          auto r = co_await cp->wait_for_lease(agent, 1000);
          if (r.ok()) got = *r;
          done = true;
        },
        boost::asio::detached);
    io.restart();
    while (!done && io.run_one_for(std::chrono::seconds(5))) {
    }
    return got ? got->lease.job_id : 0;
  }
};

TEST(PythonJobs, GoOnlyToAgentsWhosePythonRunsThemAndWaitNamingWhatIsMissing) {
  Plane p;
  const auto triton = p.submit("t", "triton");
  const auto torch = p.submit("p", "torch");
  EXPECT_EQ(p.st->get_job(triton)->language, "triton");
  EXPECT_EQ(p.st->get_job(torch)->language, "torch");
  const auto bare = p.enrol("bare", nlohmann::json());  // reported no Python
  p.settle();
  EXPECT_EQ(p.offered(bare), 0);
  p.settle();
  EXPECT_EQ(p.st->get_job(triton)->state_reason,
            "no agent of class L4 has torch and triton for triton kernels (none reported a "
            "Python) and the fleet cannot grow");
  EXPECT_EQ(p.st->get_job(torch)->state_reason,
            "no agent of class L4 has torch for torch kernels (none reported a Python) and the "
            "fleet cannot grow");

  // An agent with torch but no triton: the torch job goes to it, the triton job names what
  // that agent's Python lacks.
  const auto with_torch = p.enrol(
      "torch", {{"python", "/opt/py/bin/python3"}, {"torch", "2.9.0"}, {"languages", {"torch"}},
                {"missing", {"triton: No module named 'triton'"}}});
  EXPECT_EQ(p.offered(with_torch), torch);
  p.settle();
  EXPECT_EQ(p.st->get_job(triton)->state_reason,
            "no agent of class L4 has torch and triton for triton kernels (agent " +
                std::to_string(with_torch) +
                ": torch 2.9.0; no triton: No module named 'triton') and the fleet cannot grow");

  // A CUDA job still goes to any agent of its class.
  const auto cuda = p.submit("c", "cuda");
  EXPECT_EQ(p.offered(bare), cuda);

  // A control plane taking over the same store (a restart, a new leader) reads each queued
  // job's language from the pending-job scan and still offers the triton job only to an agent
  // with triton.
  p.cp->stop();
  Config cfg;
  cfg.enrol_token = "e";
  p.cp = std::make_unique<ControlPlane>(p.io.get_executor(), *p.st, p.clock, *p.prov, cfg);
  p.cp->start();  // recovers the queue from the store: pending_jobs(), no spec
  const auto full = p.enrol("full", {{"python", "/opt/py/bin/python3"}, {"torch", "2.9.0"},
                                     {"triton", "3.5.0"}, {"languages", {"torch", "triton"}}});
  EXPECT_EQ(p.offered(full), triton);
}

// A job submitted while an agent waits is leased in the submit's own transaction when the plan
// for it says so (plan_for_new_job): that plan reads the new job's language too, so a triton
// job is not handed to a waiting agent without triton, while a CUDA job is.
TEST(PythonJobs, ASubmitToAWaitingAgentWithoutTritonLeavesATritonJobQueued) {
  Plane p;
  const auto bare = p.enrol("bare", nlohmann::json());
  std::optional<LeaseOffer> got;
  bool done = false;
  boost::asio::co_spawn(
      p.io,
      [&]() -> boost::asio::awaitable<void> {
        auto r = co_await p.cp->wait_for_lease(bare, 5000);
        if (r.ok()) got = *r;
        done = true;
      },
      boost::asio::detached);
  p.io.restart();
  p.io.poll();
  ASSERT_FALSE(done);
  const auto triton = p.submit("t", "triton");
  EXPECT_EQ(p.st->get_job(triton)->state, JobState::queued);
  p.io.poll();
  EXPECT_FALSE(done) << "the waiting agent was offered the triton job";
  const auto cuda = p.submit("c", "cuda");
  EXPECT_EQ(p.st->get_job(cuda)->state, JobState::leased);
  p.io.restart();
  while (!done && p.io.run_one_for(std::chrono::seconds(5))) {
  }
  ASSERT_TRUE(got);
  EXPECT_EQ(got->lease.job_id, cuda);
}

}  // namespace
}  // namespace kfleet::core
