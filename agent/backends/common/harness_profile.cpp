// The profile stage: the vendor's profiler runs the harness's benchmark of the job's case for a
// few launches of the job's own kernels, and what it measured is parsed into the stage's data
// (the pipeline's `profile` event): per-launch metric values, a per-kernel summary, the
// profiler's advice. A profile is evidence, never a gate: anything that goes wrong becomes a
// note and the stage stays ok.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/harness_backend.hpp"
#include "common/harness_protocol.hpp"
#include "common/profile_output.hpp"
#include "kfleet/common/event.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;
using agent::StageContext;
using agent::StageResult;

namespace {

// What the stage keeps: enough to read, small enough for an event.
constexpr std::size_t kMaxLaunches = 3, kMaxMetrics = 32, kMaxKernels = 8, kMaxAdvice = 8;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

// The profiler's own lines ("==PROF==", "==ERROR==", "==WARNING=="), the last `n` of them.
std::vector<std::string> tool_lines(const std::string& text, std::size_t n) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l.rfind("==", 0) == 0) out.push_back(l.size() > 300 ? l.substr(0, 300) + "..." : l);
  }
  if (out.size() > n) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(n));
  return out;
}

// Why a profiler run left no values, in words someone can act on.
std::string why_nothing(const ProfileCommand& pc, const SubprocessResult& res, const std::string& text) {
  if (contains(text, "ERR_NVGPUCTRPERM")) {
    return "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run the agent as "
           "root, or let every user profile by loading the NVIDIA driver with "
           "NVreg_RestrictProfilingToAdminUsers=0 (a line 'options nvidia "
           "NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d, then reload the driver)";
  }
  if (res.timed_out) return pc.tool + " " + res.describe() + " before it printed any values";
  if (contains(text, "No kernels were profiled")) {
    // ncu then lists the kernels it saw ("Available Kernels:\n1. _Z4fillPfi\n...").
    std::string seen;
    std::istringstream in(text.substr(text.find("No kernels were profiled")));
    int n = 0;
    for (std::string l; std::getline(in, l) && n < 8;) {
      auto dot = l.find(". ");
      if (dot == std::string::npos || dot == 0 || l.find_first_not_of("0123456789") != dot) continue;
      seen += (seen.empty() ? "" : ", ") + l.substr(dot + 2);
      ++n;
    }
    return "ncu profiled no kernel: no launch matched " +
           (pc.kernel_filter.empty() ? std::string("its filter") : pc.kernel_filter) +
           (seen.empty() ? "" : " (the process launched " + seen + ")");
  }
  std::string why = pc.tool + " (" + res.describe() + ") left no metric values";
  why += pc.tool == "ncu" ? " in " + pc.output : " under " + pc.output;
  for (const auto& l : tool_lines(text, 50)) {
    if (l.rfind("==ERROR==", 0) == 0) return why + ": " + l;
  }
  if (auto t = tail_lines(res.err, 1); !t.empty()) why += ": " + t;
  return why;
}

// rocprofv3's CSVs under `dir` (its layout varies by release: <dir>/<prefix>_..., pmc_N/,
// %hostname%/...): kernel stats first, then per-dispatch counters.
ProfileOutput read_rocprofv3(const std::string& dir, std::vector<std::string>& files) {
  ProfileOutput out;
  std::vector<fs::path> stats, counters;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    auto ends = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends("kernel_stats.csv")) stats.push_back(it->path());
    if (ends("counter_collection.csv")) counters.push_back(it->path());
  }
  std::sort(stats.begin(), stats.end());
  std::sort(counters.begin(), counters.end());
  for (const auto& group : {std::pair{&stats, &parse_rocprofv3_stats}, std::pair{&counters, &parse_rocprofv3_counters}}) {
    for (const auto& f : *group.first) {
      files.push_back(fs::relative(f, dir, ec).string());
      auto o = group.second(read_text(f));
      out.skipped_rows += o.skipped_rows;
      for (auto& l : o.launches) out.launches.push_back(std::move(l));
    }
  }
  return out;
}

}  // namespace

StageResult HarnessBackend::profile(StageContext& c) {
  StageResult r;
  r.ok = true;  // a profile is evidence, never a gate
  const auto& k = c.spec.kernel;
  if (k.family == "custom") {
    if (!k.steps || k.steps->profile.empty()) return r;
    auto s = run_custom_step(c, stage::profile, k.steps->profile, false);
    s.ok = true;
    return s;
  }
  if (!c.spec.profile || harness_binary_.empty()) return r;
  if (python_jobs_.count(harness_binary_)) {
    // The profiler would run the recorder, not the replay: not wired for Python kernels yet.
    r.data["skipped"] = c.spec.kernel.language + " kernels are not profiled yet";
    return r;
  }
  auto cs = benchmark_case(c.spec);
  if (!cs) return r;
  // The benchmark of the job's case, short: a few launches of the kernel are all it profiles.
  std::vector<std::string> cmd = {harness_binary_};
  auto args = harness_benchmark_args(c.spec, *cs, problem_spec_file_, family_case_args_);
  cmd.insert(cmd.end(), args.begin(), args.end());
  cmd.insert(cmd.end(), {"--device", std::to_string(child_device()), "--max-samples", "3",
                         "--warmup-max-s", "0"});
  fs::path out = fs::path(c.work_dir) / "profile";
  std::error_code ec;
  fs::remove_all(out, ec);
  fs::create_directories(out, ec);

  // The job's own kernels, as the compiler named them in the build's resource report.
  std::vector<std::string> kernels;
  for (const auto& u : select_entry(parse_resources(compile_log_, cfg_.arch), k.entry))
    if (!u.mangled.empty() && std::find(kernels.begin(), kernels.end(), u.mangled) == kernels.end())
      kernels.push_back(u.mangled);

  const ProfileSpec& spec = *c.spec.profile;
  r.data = {{"tool", spec.tool}, {"metrics", spec.metrics}};
  auto pc = profile_argv(spec, kernels, cmd, out.string());
  if (!pc.ok()) {
    r.data["note"] = pc.error().message;
    return r;
  }
  r.data["tool"] = pc->tool;
  r.data["collected"] = pc->collected;
  if (!pc->kernel_filter.empty()) r.data["kernel_filter"] = pc->kernel_filter;
  std::string note;
  if (kernels.empty()) {
    note = "the build reported no kernel names, so the first launches were profiled (they may be "
           "the harness's own)";
  }
  if (pc->tool == "ncu") {
    // ncu's default --clock-control base locks the GPU's clocks to their base frequency for
    // the profiled launches (repeatable counters), unlike the benchmark, which runs at whatever
    // clocks the GPU picks: its durations are not the benchmark's.
    r.data["clock_control"] = "base";
    r.data["clock_note"] = "ncu locked the GPU clocks to base (its default --clock-control base): "
                           "durations are longer than the benchmark's";
  }

  std::vector<std::string> profile_reads = {fs::path(harness_binary_).parent_path().string(),
                                            fs::path(pc->argv.front()).parent_path().parent_path().string()};
  if (!problem_spec_file_.empty()) profile_reads.push_back(problem_spec_file_);
  SubprocessSpec sp = job_process(c, profile_reads, true);
  sp.argv = pc->argv;
  // The one stage whose processes may open performance events (the syscall filter denies
  // perf_event_open to every other job process): ncu, nsys and rocprofv3 may use them.
  sp.sandbox.allow_perf_events = true;
  auto res = run_subprocess(sp);
  if (!res.ok()) {
    r.data["note"] = res.error().message;
    return r;
  }
  r.data["exit"] = res->describe();
  if (auto t = tail_lines(res->err, 10); !t.empty()) r.data["stderr"] = t;
  if (res->stopped) {
    r.data["note"] = "stopped";
    return r;
  }

  std::vector<ProfileLaunch> launches;
  std::string tool_text = res->out + "\n" + res->err;
  try {
    ProfileOutput parsed;
    if (pc->tool == "ncu") {
      const std::string log = read_text(pc->output);
      tool_text = log + "\n" + tool_text;
      parsed = parse_ncu_csv(log);
      // An ncu that ignored --log-file printed its table on stdout, between the harness's lines.
      if (parsed.launches.empty()) parsed = parse_ncu_csv(res->out);
    } else {
      std::vector<std::string> files;
      parsed = read_rocprofv3(pc->output, files);
      r.data["files"] = files;
      // rocprofv3's stats cover every kernel of the process: keep the job's.
      std::vector<std::string> names;
      for (const auto& m : kernels) names.push_back(kernel_short_name(m));
      std::vector<ProfileLaunch> mine;
      for (auto& l : parsed.launches)
        if (std::find(names.begin(), names.end(), kernel_short_name(l.kernel)) != names.end())
          mine.push_back(std::move(l));
      if (!mine.empty() || names.empty()) {
        parsed.launches = std::move(mine);
      } else if (!parsed.launches.empty()) {
        note = "no profiled kernel matched the job's kernels by name: every kernel is shown";
      }
    }
    launches = std::move(parsed.launches);
    if (parsed.skipped_rows) r.data["skipped_rows"] = parsed.skipped_rows;
  } catch (const std::exception& e) {
    note = std::string("the profiler's output could not be parsed: ") + e.what();
    launches.clear();
  }

  // What the job asked for leads, then the GPU time, then the rest in the profiler's order.
  std::vector<std::string> first = spec.metrics;
  first.insert(first.end(), pc->collected.begin(), pc->collected.end());
  nlohmann::json kj = nlohmann::json::array();
  for (std::size_t i = 0; i < launches.size() && i < kMaxLaunches; ++i)
    kj.push_back(launch_to_json(launches[i], kMaxMetrics, first));
  r.data["launches"] = launches.size();
  r.data["kernels"] = kj;
  r.data["summary"] = summary_to_json(summarize_profile(launches), kMaxKernels, kMaxMetrics, first);
  nlohmann::json advice = nlohmann::json::array();
  for (const auto& l : launches) {
    for (const auto& a : l.advice) {
      bool seen = false;
      for (const auto& x : advice) seen = seen || (x["rule"] == a.rule && x["description"] == a.description);
      if (seen || advice.size() >= kMaxAdvice) continue;
      advice.push_back({{"kernel", kernel_short_name(l.kernel)}, {"rule", a.rule}, {"type", a.type},
                        {"description", a.description}});
    }
  }
  r.data["advice"] = advice;
  if (launches.empty()) {
    note = why_nothing(*pc, *res, tool_text) + (note.empty() ? "" : "; " + note);
    if (auto lines = tool_lines(tool_text, 5); !lines.empty()) r.data["tool_output"] = lines;
  }
  if (!note.empty()) r.data["note"] = note;
  return r;
}

}  // namespace kfleet::backends
