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
namespace {

// Each arena buffer as it is now, <va in hex>.bin in `dir` (not the python scratch: torch's).
void write_buffers(const std::string& dir) {
  for (const auto& b : fixed_buffers()) {
    if (b.name == "python scratch") continue;
    std::vector<char> host(b.bytes);
    KFLEET_GPU_CHECK(gpuMemcpy(host.data(), reinterpret_cast<const void*>(b.va), b.bytes,
                               gpuMemcpyDeviceToHost));
    char name[64];
    std::snprintf(name, sizeof name, "/%llx.bin", static_cast<unsigned long long>(b.va));
    std::ofstream out(dir + name, std::ios::binary | std::ios::trunc);
    out.write(host.data(), static_cast<std::streamsize>(host.size()));
    if (!out.good()) fail_setup("cannot write " + dir + name);
  }
}

}  // namespace

int run_plan(const Options& o) {
  // The measuring process's rule for the family (no kernel is linked into kfleet-measure):
  // make_problem takes it from the shape when a replay is asked for, so ask as the measurer.
  Options m = o;
  m.replay_path = o.plan_path;
  const bool generic = !o.problem_spec.empty();
  const std::string family = generic ? "problem" : o.shape.count("M") ? "scaled_mm" : "attention";
  std::vector<PlanRecording> recs;
  // One recording: its args, the buffers as mapped now, and (a problem of the library) the
  // fields by the spec's names.
  auto add = [&](const std::string& what, const Problem& problem) {
    PlanRecording r{what, problem.args_bytes(), fixed_buffers(), ""};
    if (!o.plan_inputs.empty()) write_buffers(o.plan_inputs);
    if (generic) {
      std::string error;
      r.fields = problem_plan_fields(problem, &error);
      if (r.fields.empty()) fail_setup("cannot write the plan: " + error);
    }
    recs.push_back(std::move(r));
  };
  if (o.stage == "correctness") {
    for (const std::uint64_t seed : o.seeds) add(recording_name(o.stage, seed), *make_problem(m, seed));
  } else if (o.stage == "benchmark") {
    auto problem = make_problem(m, o.seeds.front());
    problem->refresh_inputs(0);  // the benchmark's args: scales of refreshed inputs (record.cu)
    add(recording_name(o.stage, 0), *problem);
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
