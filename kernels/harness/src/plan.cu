// The plan a Python recorder records on (PYTHON.md): kfleet-measure, which holds
// none of the job's code, makes each of the stage's problems exactly as it will when it replays
// (the same buffers at the same fixed addresses, the same args: correctness seeds, the
// benchmark's refreshed inputs) and writes them down (cpu/python_plan.hpp). The recorder is the
// job's process: what it does with the plan is re-checked here when the list comes back.
#include <cstdio>
#include <fstream>

#include "../cpu/python_plan.hpp"
#include "harness.hpp"

namespace kfleet::harness {

int run_plan(const Options& o) {
  // The measuring process's rule for the family (no kernel is linked into kfleet-measure):
  // make_problem takes it from the shape when a replay is asked for, so ask as the measurer.
  Options m = o;
  m.replay_path = o.plan_path;
  const std::string family = o.shape.count("M") ? "scaled_mm" : "attention";
  std::vector<PlanRecording> recs;
  if (o.stage == "correctness") {
    for (const std::uint64_t seed : o.seeds) {
      auto problem = make_problem(m, seed);
      recs.push_back({recording_name(o.stage, seed), problem->args_bytes(), fixed_buffers()});
    }
  } else if (o.stage == "benchmark") {
    auto problem = make_problem(m, o.seeds.front());
    problem->refresh_inputs(0);  // the benchmark's args: scales of refreshed inputs (record.cu)
    recs.push_back({recording_name(o.stage, 0), problem->args_bytes(), fixed_buffers()});
  } else {
    fail_usage("--plan is for the correctness and benchmark stages");
  }
  std::string error;
  const std::string json = plan_json(family, fixed_arena_base(), fixed_arena_end(), recs, &error);
  if (json.empty()) fail_setup("cannot write the plan: " + error);
  const std::string tmp = o.plan_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << json << "\n";
    if (!out.good()) fail_setup("cannot write the plan to " + tmp);
  }
  if (std::rename(tmp.c_str(), o.plan_path.c_str()) != 0)
    fail_setup("cannot move the plan to " + o.plan_path);
  JsonLine("plan").str("family", family).integer("recordings", (long long)recs.size())
      .str("path", o.plan_path).print();
  return 0;
}

}  // namespace kfleet::harness
