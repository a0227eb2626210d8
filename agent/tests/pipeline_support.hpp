#pragma once
// What the pipeline tests share: a sink that records what a run emits, the simulated GPU with
// the stages a test replaces, a lease of one simulated job, and runs of the pipeline against an
// in-memory kfleetd, each in a folder of its own that goes with it.
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fake_transport.hpp"
#include "kfleet/agent/pipeline.hpp"
#include "kfleet/testing/temp_dir.hpp"

namespace kfleet::testing {

// Every event a run emits, from any thread, in order.
struct RecordingSink final : agent::EventSink {
  std::mutex mu;
  std::vector<std::pair<std::string, nlohmann::json>> events;
  // Called with each event before it is recorded (under the lock).
  std::function<void(const std::string& type, const nlohmann::json& data)> on_emit;

  void emit(const std::string& type, nlohmann::json data) override {
    std::lock_guard<std::mutex> l(mu);
    if (on_emit) on_emit(type, data);
    events.emplace_back(type, std::move(data));
  }
  // The data of each event of this type.
  std::vector<nlohmann::json> of(const std::string& type) {
    std::lock_guard<std::mutex> l(mu);
    std::vector<nlohmann::json> out;
    for (auto& [t, d] : events)
      if (t == type) out.push_back(d);
    return out;
  }
  // How many events of this type have data[key] == value.
  int count(const std::string& type, const std::string& key, const nlohmann::json& value) {
    std::lock_guard<std::mutex> l(mu);
    int n = 0;
    for (auto& [t, d] : events)
      if (t == type && d.contains(key) && d[key] == value) ++n;
    return n;
  }
};

// The simulated GPU; a test overrides the stages it changes and leaves the rest to it.
class SimulatedGpu : public agent::Backend {
 public:
  std::string name() const override { return inner_->name(); }
  bool simulated() const override { return true; }
  Result<std::vector<GpuInfo>> discover() override { return inner_->discover(); }
  agent::StageResult build(agent::StageContext& c) override { return inner_->build(c); }
  agent::StageResult resources(agent::StageContext& c) override { return inner_->resources(c); }
  agent::StageResult correctness(agent::StageContext& c) override { return inner_->correctness(c); }
  agent::StageResult benchmark(agent::StageContext& c) override { return inner_->benchmark(c); }
  agent::StageResult profile(agent::StageContext& c) override { return inner_->profile(c); }
  std::optional<nlohmann::json> gpu_settings() override { return inner_->gpu_settings(); }

 protected:
  agent::BackendPtr inner_ = agent::make_simulated_backend({});
};

// The simulated GPU whose settings change during one stage (change_in: "correctness" or
// "benchmark"), as an admin (or a job that could) would change them between two readings:
// change() does it, before that stage runs.
class SettingsChangingGpu : public SimulatedGpu {
 public:
  std::string change_in;
  agent::StageResult correctness(agent::StageContext& c) override {
    if (change_in == "correctness") change();
    return inner_->correctness(c);
  }
  agent::StageResult benchmark(agent::StageContext& c) override {
    if (change_in == "benchmark") change();
    return inner_->benchmark(c);
  }

 protected:
  virtual void change() = 0;
};

// A lease of one job on the simulated GPU: run 7 of job 3, one correctness case "small" (seed
// 0, max_abs 0.06), `time_us` a launch, no noise, 1 ms a stage.
inline agent::Lease simulated_lease(const std::string& name, const std::string& source,
                                    double time_us = 100) {
  agent::Lease l;
  l.run_id = 7;
  l.job_id = 3;
  l.fencing_token = 1;
  l.spec.name = name;
  l.spec.kernel.sources = {source};
  l.spec.kernel.entry = "k";
  CorrectnessGate cg;
  cg.cases = {{"small", {}, {0}, false}};
  cg.tolerance.max_abs = 0.06;
  l.spec.gates.correctness = cg;
  SimulationSpec sim;
  sim.time_us = time_us;
  sim.noise_pct = 0;
  sim.stage_ms = 1;
  l.spec.simulate = sim;
  return l;
}

// The pipeline's surroundings for one run: an in-memory kfleetd, a recording sink, a stop flag
// and a run folder of its own.
struct PipelineRun {
  FakeKfleetd server;
  RecordingSink sink;
  agent::StopFlag stop;
  TempDir dir{"kfleet-pipeline"};

  agent::PipelineDeps deps(agent::Backend& b) {
    return {server, b, sink, stop, dir.str(), {}, std::make_shared<SystemClock>()};
  }
  std::optional<Verdict> run(agent::Backend& b, const agent::Lease& l) {
    auto d = deps(b);
    return agent::run_pipeline(l, d);
  }
};

// The run gave a verdict with this outcome and, where `says` is given, a reason that says it.
inline ::testing::AssertionResult verdict_is(const std::optional<Verdict>& v, RunOutcome outcome,
                                             std::string_view says = {}) {
  if (!v) return ::testing::AssertionFailure() << "no verdict";
  if (v->outcome != outcome)
    return ::testing::AssertionFailure() << "outcome " << to_string(v->outcome) << ": " << v->reason;
  if (v->reason.find(says) == std::string::npos)
    return ::testing::AssertionFailure() << "the reason does not say \"" << says << "\": " << v->reason;
  return ::testing::AssertionSuccess();
}

// A run rejected at the integrity gate (the GPU's settings changed under it), its reason naming
// each of `says`.
inline void expect_integrity_rejection(const std::optional<Verdict>& v,
                                       const std::vector<std::string>& says) {
  ASSERT_TRUE(verdict_is(v, RunOutcome::rejected));
  EXPECT_EQ(v->gate, "integrity");
  for (const auto& s : says) EXPECT_NE(v->reason.find(s), std::string::npos) << s << "\n" << v->reason;
}

}  // namespace kfleet::testing
