#include "kfleet/agent/pipeline.hpp"

#include <filesystem>
#include <thread>

#include "kfleet/agent/backoff.hpp"
#include "kfleet/agent/verdict.hpp"
#include "kfleet/common/event.hpp"
#include "kfleet/common/log.hpp"

namespace kfleet::agent {

namespace {

namespace fs = std::filesystem;

// The GPU a run is pinned to, as every stage event names it.
nlohmann::json gpu_identity(const GpuInfo& g) {
  nlohmann::json id = {{"index", g.extra.value("index", 0)}};
  for (const char* k : {"uuid", "pci_bus_id"})
    if (g.extra.contains(k) && g.extra[k].is_string()) id[k] = g.extra[k];
  return id;
}

// Marks everything a simulated backend's run emits, so no simulated number can pass for real,
// names the GPU on every stage event, so each stage says which GPU ran it, and files a log line
// that names no stage (the sandbox's, about any job process) under the stage that is running.
class MarkingSink final : public EventSink {
 public:
  MarkingSink(EventSink& inner, bool simulated, nlohmann::json gpu)
      : inner_(inner), simulated_(simulated), gpu_(std::move(gpu)) {}
  void emit(const std::string& type, nlohmann::json data) override {
    if (simulated_ && data.is_object()) data["simulated"] = true;
    if (data.is_object() && (type == event_type::stage_started ||
                             type == event_type::stage_finished || type == event_type::bench_result))
      data["gpu"] = gpu_;
    if (data.is_object() && type == event_type::stage_started && data.contains("stage"))
      stage_ = data["stage"];
    if (data.is_object() && type == event_type::log_line && !stage_.is_null() && !data.contains("stage"))
      data["stage"] = stage_;
    inner_.emit(type, std::move(data));
  }

 private:
  EventSink& inner_;
  bool simulated_;
  nlohmann::json gpu_;
  nlohmann::json stage_;  // the running stage's name, once one started
};

bool profile_wanted(const JobSpec& spec, const Verdict& v) {
  if (!spec.profile) return false;
  const auto& when = spec.profile->when;
  if (when == "never") return false;
  if (when == "rejected") return v.outcome == RunOutcome::rejected;
  if (when == "passed") return v.outcome == RunOutcome::passed;
  return v.outcome != RunOutcome::error;  // always: but a broken run has nothing to profile
}

class StageRunner {
 public:
  StageRunner(EventSink& sink, const Clock& clock) : sink_(sink), clock_(clock) {}

  template <class Fn>
  StageResult run(const std::string& stage, Fn&& fn) {
    sink_.emit(event_type::stage_started, {{"stage", stage}});
    TimeMs t0 = clock_.now_ms();
    StageResult r = fn();
    nlohmann::json fin = {{"stage", stage},
                          {"ok", r.ok},
                          {"seconds", static_cast<double>(clock_.now_ms() - t0) / 1000.0}};
    if (!r.ok) fin["reason"] = r.reason;
    if (r.infra_error) fin["infra_error"] = true;
    if (r.fleet_error) fin["fleet_error"] = true;
    sink_.emit(event_type::stage_finished, fin);
    return r;
  }

 private:
  EventSink& sink_;
  const Clock& clock_;
};

// No way a fetch can fail is the job's: kfleetd checked the bundle when the job was submitted.
// kfleetd unreachable, a bundle damaged on the way, a disk that cannot take it: retried
// (fleet_error). kfleetd refusing on purpose (no such bundle): an error that names its side.
StageResult fetch_bundle(const std::string& bundle_hash, PipelineDeps& d, const std::string& src_dir) {
  StageResult r;
  r.fleet_error = true;
  std::error_code ec;
  fs::remove_all(src_dir, ec);
  fs::create_directories(src_dir, ec);
  if (ec) {
    r.reason = "cannot create " + src_dir + ": " + ec.message();
    return r;
  }
  if (bundle_hash.empty()) {
    r.fleet_error = false;
    r.ok = true;
    r.data["files"] = 0;
    return r;
  }
  auto b = d.transport.fetch_bundle(bundle_hash);
  if (!b) {
    r.reason = "cannot fetch bundle " + bundle_hash + ": " + b.error().message;
    if (b.error().code != Errc::unavailable) {
      r.fleet_error = false;
      r.infra_error = true;
    }
    return r;
  }
  if (b->hash() != bundle_hash) {
    r.reason = "bundle content hashes to " + b->hash() + ", lease says " + bundle_hash;
    return r;
  }
  if (auto u = unpack_bundle(*b, src_dir); !u) {
    r.reason = "cannot unpack bundle: " + u.error().message;
    return r;
  }
  r.fleet_error = false;
  r.ok = true;
  r.data["files"] = b->files.size();
  r.data["bytes"] = b->total_bytes();
  return r;
}

// The GPU's settings are the fleet's: read before and after a GPU stage, and a change (a power
// limit, compute mode or clocks set while the job ran) rejects the run at the integrity gate,
// naming what changed, whatever the stage itself concluded.
template <class Fn>
StageResult with_settings_check(const std::string& stage, Backend& backend, Fn&& fn) {
  const auto before = backend.gpu_settings();
  StageResult r = fn();
  if (!before) return r;
  const auto after = backend.gpu_settings();
  if (!after) return r;
  std::string changed;
  for (const auto& [k, v] : before->items()) {
    const auto now = after->find(k);
    if (now != after->end() && *now == v) continue;
    if (!changed.empty()) changed += ", ";
    changed += k + " " + v.dump() + " -> " + (now == after->end() ? "unreadable" : now->dump());
  }
  if (changed.empty()) return r;
  StageResult bad;
  bad.reason = "the GPU's settings changed during " + stage + ": " + changed;
  bad.data = {{"integrity", true}, {"settings_before", *before}, {"settings_after", *after}};
  return bad;
}

void emit_stage_data(EventSink& sink, const std::string& stage, const StageResult& r) {
  if (stage == stage::resources && !r.data.empty()) {
    sink.emit(event_type::resources, r.data);
  } else if (stage == stage::correctness && r.data.contains("rows") && r.data["rows"].is_array()) {
    for (const auto& row : r.data["rows"]) sink.emit(event_type::correctness, row);
  } else if (stage == stage::benchmark && r.ok) {
    sink.emit(event_type::bench_result, r.data);
  }
}

std::uintmax_t free_bytes_at(PipelineDeps& d, const std::string& path) {
  if (d.free_bytes) return d.free_bytes(path);
  std::error_code ec;
  auto sp = fs::space(path, ec);
  return ec ? UINTMAX_MAX : sp.available;  // unknown: do not guess that the disk is full
}

// Marks a failure the job would be blamed for as the fleet's when the disk is full (the text
// says ENOSPC, or a stage that would end in `error` failed with hardly any space left), or
// when the GPU driver is missing here (the harness could not start on the GPU: infra_error,
// never the kernel's own error, which the harness reports as phase "kernel").
void classify_fleet(const std::string& stage, StageResult& r, PipelineDeps& d) {
  if (r.ok || r.fleet_error) return;
  if (says_disk_full(r.reason) || (r.infra_error && says_driver_missing(r.reason))) {
    r.fleet_error = true;
    return;
  }
  if (verdict_for_failed_stage(stage, r).outcome != RunOutcome::error) return;  // a gate's verdict
  const std::uintmax_t free = free_bytes_at(d, d.run_dir);
  if (free >= kDiskFullBelowBytes) return;
  r.fleet_error = true;
  r.reason += " (the agent's disk is full: " + std::to_string(free >> 20) + " MiB free under " +
              d.run_dir + ")";
}

// Sleeps up to `d`, waking early when the run is stopped; false when it was.
bool sleep_unless_stopped(const StopFlag& stop, std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop.requested()) {
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::milliseconds(0)) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        left, std::chrono::milliseconds(20)));
  }
  return false;
}

}  // namespace

bool says_disk_full(const std::string& text) {
  for (const char* s : {"No space left on device", "Disk quota exceeded", "ENOSPC", "EDQUOT"})
    if (text.find(s) != std::string::npos) return true;
  return false;
}

bool says_driver_missing(const std::string& text) {
  // The runtimes' own words (cudaGetErrorString, hipGetErrorString, NVML, the loader).
  for (const char* s : {"CUDA driver version is insufficient", "no CUDA-capable device",
                        "cudaErrorInsufficientDriver", "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE",
                        "no ROCm-capable device", "hipErrorNoDevice", "hipErrorInsufficientDriver",
                        "NVML_ERROR_DRIVER_NOT_LOADED", "libcuda.so", "libamdhip64.so"})
    if (text.find(s) != std::string::npos) return true;
  return false;
}

std::optional<Verdict> run_pipeline(const Lease& lease, PipelineDeps& d, std::string* gave_back) {
  MarkingSink sink(d.sink, d.backend.simulated(), gpu_identity(d.gpu));
  StageRunner stages(sink, *d.clock);
  // A stage that failed on the fleet's side runs again after a backoff, for up to a lease's
  // TTL of failing; then (nullopt) the run goes back to kfleetd, never as a verdict.
  const TimeMs budget_ms = d.retry.give_up_after.count() > 0 ? d.retry.give_up_after.count()
                                                              : std::max(lease.ttl_ms, 1000);
  auto run_stage = [&](const std::string& name, auto&& fn) -> std::optional<StageResult> {
    Backoff backoff(d.retry.initial, d.retry.cap);
    TimeMs failing_since = -1;
    while (true) {
      StageResult r = stages.run(name, [&] {
        StageResult x = fn();
        classify_fleet(name, x, d);
        return x;
      });
      if (r.ok || !r.fleet_error || d.stop.requested()) return r;
      const TimeMs now = d.clock->now_ms();
      if (failing_since < 0) failing_since = now;
      if (now - failing_since >= budget_ms) {
        const std::string why = name + ": " + r.reason + " (the fleet's failure, not the job's; " +
                                std::to_string(backoff.attempts() + 1) + " tries over " +
                                std::to_string((now - failing_since) / 1000) + " s)";
        sink.log(name, "giving the run back to kfleetd to requeue: " + why);
        log::warn("agent", "run ", lease.run_id, ": giving it back: ", why);
        if (gave_back) *gave_back = why;
        return std::nullopt;
      }
      const auto wait = backoff.next();
      sink.log(name, "the fleet's failure, not the job's: " + r.reason + "; trying again in " +
                         std::to_string(wait.count()) + " ms");
      log::warn("agent", "run ", lease.run_id, ": ", name, ": ", r.reason, "; trying again in ",
                wait.count(), " ms");
      if (!sleep_unless_stopped(d.stop, wait)) return r;
    }
  };
  const std::string src_dir = (fs::path(d.run_dir) / "src").string();
  const std::string scratch = (fs::path(d.run_dir) / "work").string();
  std::error_code ec;
  fs::create_directories(scratch, ec);

  // What the correctness stage checked (the cases it ran, the reference check), for the verdict.
  nlohmann::json checked = nlohmann::json::object();
  auto finish = [&](Verdict v) -> std::optional<Verdict> {
    if (d.stop.requested()) return std::nullopt;
    for (const char* k : {"cases", "reference_check"})
      if (checked.contains(k)) v.metrics[k] = checked[k];
    v.simulated = d.backend.simulated();
    v.unsandboxed = !d.backend.sandboxed();
    v.self_reported = lease.spec.kernel.family == "custom";
    // A job on a problem of the library: which contract (and version) the verdict is about.
    if (!lease.spec.kernel.problem.empty()) {
      v.metrics["problem"] = lease.spec.kernel.problem;
      v.metrics["problem_version"] = lease.spec.kernel.problem_version;
    }
    nlohmann::json vj = to_json(v);
    sink.emit(event_type::stage_started, {{"stage", stage::verdict}});
    sink.emit(event_type::verdict, vj);
    sink.emit(event_type::stage_finished, {{"stage", stage::verdict}, {"ok", true}, {"seconds", 0.0}});
    return v;
  };

  // An interleaved comparison also needs the reference's sources: its build runs beside ours.
  const bool interleaved = lease.compare.interleave && lease.compare.interleave_error.empty();
  const std::string ref_dir = interleaved ? (fs::path(d.run_dir) / "reference-src").string() : "";
  std::optional<StageResult> fetched = run_stage(stage::fetch, [&] {
    StageResult r = fetch_bundle(lease.bundle_hash, d, src_dir);
    if (!r.ok || !interleaved) return r;
    StageResult ref = fetch_bundle(lease.compare.bundle_hash, d, ref_dir);
    if (!ref.ok) {
      ref.reason = "the reference " + lease.compare.label + ": " + ref.reason;
      return ref;
    }
    r.data["reference_files"] = ref.data["files"];
    return r;
  });
  if (!fetched || d.stop.requested()) return std::nullopt;
  if (!fetched->ok) return finish(verdict_for_failed_stage(stage::fetch, *fetched));

  GpuInfo gpu = d.gpu;
  if (lease.phase == "compile") {
    // A compile agent builds for the GPU the job targets, not for a GPU of its own.
    gpu.gpu_class = lease.spec.target.gpu;
    gpu.arch = lease.arch;
  }
  StageContext ctx{lease.spec, src_dir, scratch, gpu, lease.compare, sink, d.stop,
                   lease.bundle_hash, lease.attempt, ref_dir, d.run_dir};
  // The profile's data (metric values, advice, or why there are none) is the profile event,
  // whichever gate the verdict came from.
  auto run_profile = [&] {
    StageResult p = stages.run(stage::profile, [&] { return d.backend.profile(ctx); });
    if (p.ok && !p.data.empty()) sink.emit("profile", p.data);
  };
  using Step = StageResult (Backend::*)(StageContext&);
  const std::pair<const char*, Step> steps[] = {
      {stage::build, &Backend::build},
      {stage::resources, &Backend::resources},
      {stage::correctness, &Backend::correctness},
      {stage::benchmark, &Backend::benchmark},
  };
  StageResult bench;
  for (const auto& [name, step] : steps) {
    const std::string n = name;
    // Compile phase: build and the resources gate, then the job goes on to a GPU agent.
    if (lease.phase == "compile" && (n == stage::correctness || n == stage::benchmark)) break;
    // GPU phase: a compile agent already built the job and passed its resources gate. A real
    // backend builds again (cached) for the binary it runs; the simulator needs none.
    if (lease.phase == "gpu" && (n == stage::resources || (n == stage::build && d.backend.simulated())))
      continue;
    std::optional<StageResult> ran = run_stage(name, [&] {
      if (n != stage::correctness && n != stage::benchmark) return (d.backend.*step)(ctx);
      return with_settings_check(n, d.backend, [&] { return (d.backend.*step)(ctx); });
    });
    if (!ran || d.stop.requested()) return std::nullopt;
    StageResult& r = *ran;
    if (n == stage::correctness && r.data.is_object()) checked = r.data;
    emit_stage_data(sink, name, r);
    if (!r.ok) {
      Verdict v = verdict_for_failed_stage(name, r);
      auto out = finish(v);
      // A compile agent has no GPU to profile on.
      if (out && profile_wanted(lease.spec, *out) && lease.phase != "compile") run_profile();
      return out;  // a stop during the profile does not undo a verdict already reached
    }
    if (std::string(name) == stage::benchmark) bench = r;
  }

  if (lease.phase == "compile") {
    if (d.stop.requested()) return std::nullopt;
    const std::string why = "build and resources gate passed; correctness and benchmark go to a " +
                            lease.spec.target.gpu + " GPU agent";
    sink.emit(event_type::handoff, {{"to", "gpu"}, {"gpu", lease.spec.target.gpu}, {"reason", why}});
    Verdict v;
    v.outcome = RunOutcome::passed;
    v.reason = why;
    v.simulated = d.backend.simulated();
    return v;  // kfleetd hands the job on; the job's verdict comes from the GPU phase
  }
  // Why nothing was compared (a stored baseline of the other timing mode, none yet): the
  // verdict says so instead of a bare "no baseline to compare".
  if (lease.compare.kind.empty() && !lease.compare.note.empty() && bench.data.is_object())
    bench.data["compare_note"] = lease.compare.note;
  Verdict v = verdict_from_benchmark(bench.data);
  auto out = finish(v);
  if (out && profile_wanted(lease.spec, *out)) run_profile();
  return out;
}

}  // namespace kfleet::agent
