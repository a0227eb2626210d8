#include "kfleet/agent/pipeline.hpp"

#include <filesystem>

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
// and names the GPU on every stage event, so each stage says which GPU ran it.
class MarkingSink final : public EventSink {
 public:
  MarkingSink(EventSink& inner, bool simulated, nlohmann::json gpu)
      : inner_(inner), simulated_(simulated), gpu_(std::move(gpu)) {}
  void emit(const std::string& type, nlohmann::json data) override {
    if (simulated_ && data.is_object()) data["simulated"] = true;
    if (data.is_object() && (type == event_type::stage_started ||
                             type == event_type::stage_finished || type == event_type::bench_result))
      data["gpu"] = gpu_;
    inner_.emit(type, std::move(data));
  }

 private:
  EventSink& inner_;
  bool simulated_;
  nlohmann::json gpu_;
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
    sink_.emit(event_type::stage_finished, fin);
    return r;
  }

 private:
  EventSink& sink_;
  const Clock& clock_;
};

StageResult fetch_bundle(const std::string& bundle_hash, PipelineDeps& d, const std::string& src_dir) {
  StageResult r;
  std::error_code ec;
  fs::remove_all(src_dir, ec);
  fs::create_directories(src_dir, ec);
  if (ec) {
    r.infra_error = true;
    r.reason = "cannot create " + src_dir + ": " + ec.message();
    return r;
  }
  if (bundle_hash.empty()) {
    r.ok = true;
    r.data["files"] = 0;
    return r;
  }
  auto b = d.transport.fetch_bundle(bundle_hash);
  if (!b) {
    r.infra_error = true;
    r.reason = "cannot fetch bundle " + bundle_hash + ": " + b.error().message;
    return r;
  }
  if (b->hash() != bundle_hash) {
    r.infra_error = true;
    r.reason = "bundle content hashes to " + b->hash() + ", lease says " + bundle_hash;
    return r;
  }
  if (auto u = unpack_bundle(*b, src_dir); !u) {
    r.infra_error = true;
    r.reason = "cannot unpack bundle: " + u.error().message;
    return r;
  }
  r.ok = true;
  r.data["files"] = b->files.size();
  r.data["bytes"] = b->total_bytes();
  return r;
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

}  // namespace

std::optional<Verdict> run_pipeline(const Lease& lease, PipelineDeps& d) {
  MarkingSink sink(d.sink, d.backend.simulated(), gpu_identity(d.gpu));
  StageRunner stages(sink, *d.clock);
  const std::string src_dir = (fs::path(d.run_dir) / "src").string();
  const std::string scratch = (fs::path(d.run_dir) / "work").string();
  std::error_code ec;
  fs::create_directories(scratch, ec);

  auto finish = [&](Verdict v) -> std::optional<Verdict> {
    if (d.stop.requested()) return std::nullopt;
    v.simulated = d.backend.simulated();
    nlohmann::json vj = to_json(v);
    sink.emit(event_type::stage_started, {{"stage", stage::verdict}});
    sink.emit(event_type::verdict, vj);
    sink.emit(event_type::stage_finished, {{"stage", stage::verdict}, {"ok", true}, {"seconds", 0.0}});
    return v;
  };

  // An interleaved comparison also needs the reference's sources: its build runs beside ours.
  const bool interleaved = lease.compare.interleave && lease.compare.interleave_error.empty();
  const std::string ref_dir = interleaved ? (fs::path(d.run_dir) / "reference-src").string() : "";
  StageResult fetched = stages.run(stage::fetch, [&] {
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
  if (d.stop.requested()) return std::nullopt;
  if (!fetched.ok) return finish(verdict_for_failed_stage(stage::fetch, fetched));

  GpuInfo gpu = d.gpu;
  if (lease.phase == "compile") {
    // A compile agent builds for the GPU the job targets, not for a GPU of its own.
    gpu.gpu_class = lease.spec.target.gpu;
    gpu.arch = lease.arch;
  }
  StageContext ctx{lease.spec, src_dir, scratch, gpu, lease.compare, sink, d.stop,
                   lease.bundle_hash, lease.attempt, ref_dir};
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
    StageResult r = stages.run(name, [&] { return (d.backend.*step)(ctx); });
    if (d.stop.requested()) return std::nullopt;
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
