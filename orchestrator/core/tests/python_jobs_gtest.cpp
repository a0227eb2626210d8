// Triton and torch jobs go only to agents whose Python runs them (kfleet::gpu_runs_language);
// the control plane reads a job's kernel.language from its row (jobs.language), also on the
// pending-job scan that leaves specs out, so a takeover reads no spec per queued job.
#include <gtest/gtest.h>

#include <chrono>

#include "plane.hpp"

namespace kfleet::core {
namespace {

struct PythonPlane : test::Plane {
  void settle() { test::Plane::settle(std::chrono::seconds(5)); }

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
    return test::Plane::submit("name: " + name + "\ntarget: {gpu: L4}\nkernel: {family: attention, "
                               "language: " + language + ", sources: [" + src + "]}\n",
                               "test", b);
  }

  // One long-poll of `agent`: the job it was offered (0: none).
  std::int64_t offered(std::int64_t agent) {
    auto got = wait_offer(agent, 1000);
    return got ? got->lease.job_id : 0;
  }
};

TEST(PythonJobs, GoOnlyToAgentsWhosePythonRunsThemAndWaitNamingWhatIsMissing) {
  PythonPlane p;
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
  PythonPlane p;
  const auto bare = p.enrol("bare", nlohmann::json());
  auto poll = p.start_poll(bare);
  ASSERT_FALSE(poll->done);
  const auto triton = p.submit("t", "triton");
  EXPECT_EQ(p.st->get_job(triton)->state, JobState::queued);
  p.io.poll();
  EXPECT_FALSE(poll->done) << "the waiting agent was offered the triton job";
  const auto cuda = p.submit("c", "cuda");
  EXPECT_EQ(p.st->get_job(cuda)->state, JobState::leased);
  auto got = p.finish_poll(*poll, std::chrono::seconds(5));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->lease.job_id, cuda);
}

}  // namespace
}  // namespace kfleet::core
