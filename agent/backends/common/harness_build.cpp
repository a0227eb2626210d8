// Build and resources stages: compile the job's sources (the resource report comes from this
// step alone, so harness kernels never count against the job's budget), link them with the
// harness, and cache the result by content hash.
#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include "common/harness_backend.hpp"
#include "common/harness_problem.hpp"
#include "common/harness_sources.hpp"
#include "common/resources.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/compile_flags.hpp"
#include "kfleet/common/event.hpp"
#include "kfleet/common/install_layout.hpp"
#include "kfleet/common/language.hpp"
#include "kfleet/common/sha256.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;
using agent::StageContext;
using agent::StageResult;

namespace {

// The first compiler error line, for a one-line reason.
std::string first_error(const std::string& log) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("error") != std::string::npos) return line;
  }
  return tail_lines(log, 1);
}

// The compiler's install prefix (/usr/local/cuda for .../bin/nvcc): its headers and libraries
// must be readable in the sandbox even when they are outside the system's trees.
std::string compiler_prefix(const std::string& compiler) {
  return fs::path(compiler).parent_path().parent_path().string();
}

// What a sandboxed build made becomes the cache's: taken over by the agent (take_job_files:
// no links, no special files, owned by the agent again, so no job's uid owns anything in the
// cache), then moved in.
std::error_code store_in_cache(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(from, ec))) {
    take_job_files(from.string());
  } else {
    struct stat st {};
    if (::lstat(from.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
      return std::make_error_code(std::errc::invalid_argument);
    if (::lchown(from.c_str(), ::geteuid(), ::getegid()) != 0) return std::error_code(errno, std::generic_category());
    ::chmod(from.c_str(), 0644);
  }
  ec.clear();
  fs::rename(from, to, ec);
  if (ec == std::errc::cross_device_link) {
    ec.clear();
    fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    std::error_code ignored;
    fs::remove_all(from, ignored);
  }
  return ec;
}

// The macro a -DNAME=VALUE flag defines.
std::string macro_of(const std::string& define) {
  auto eq = define.find('=');
  return define.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
}

}  // namespace

// The agent's run dirs are <agent work dir>/runs/<run id>/work and are removed after each run;
// a cache inside one would never be hit, so it goes beside "runs" when that layout is seen.
std::string build_cache_dir(const std::string& configured, const std::string& work_dir) {
  if (!configured.empty()) return configured;
  const fs::path run_dir = fs::path(work_dir).parent_path();
  if (run_dir.parent_path().filename() == "runs") return (run_dir.parent_path().parent_path() / "build-cache").string();
  return (run_dir / "build-cache").string();
}

HarnessBackend::HarnessBackend(HarnessBackendConfig cfg) : cfg_(std::move(cfg)) {
  if (cfg_.harness_dir.empty()) {
    // $KFLEET_HARNESS_DIR, else the install's (or the build tree's) share/kfleet/kernels/harness.
    const char* env = std::getenv("KFLEET_HARNESS_DIR");
    cfg_.harness_dir = env && *env ? env : installed_data("kernels/harness").string();
  }
  cfg_.problems_dir = agent_problems_dir(cfg_.problems_dir);
}

StageResult HarnessBackend::build(StageContext& c) {
  baseline_binary_.clear();
  python_jobs_.clear();
  drop_kept_recordings();  // a new job: its recordings are its own
  StageResult r = build_one(c);
  if (!r.ok || !c.compare.interleave) return r;
  if (!c.compare.interleave_error.empty()) return infra("interleaved comparison: " + c.compare.interleave_error);
  if (!c.compare.spec || c.baseline_bundle_dir.empty())
    return infra("interleaved comparison: the lease did not bring the reference's sources");
  if (c.compare.spec->kernel.family == "custom" || c.spec.kernel.family == "custom")
    return infra("interleaved comparison needs harness kernels; custom jobs time themselves");
  if (problem_ref(c.compare.spec->kernel) != problem_ref(c.spec.kernel) &&
      (is_generic_problem(c.spec.kernel) || is_generic_problem(c.compare.spec->kernel)))
    return infra("interleaved comparison: the reference is a kernel of " +
                 (c.compare.spec->kernel.problem.empty() ? c.compare.spec->kernel.family
                                                         : problem_ref(c.compare.spec->kernel)) +
                 ", this job's of " + problem_ref(c.spec.kernel) + ": both run the same cases");
  const std::string cand_spec = problem_spec_file_;
  const auto cand_cases = family_case_args_;
  // The reference goes through the same build (and cache) as any job; the candidate's binary
  // and compile log are kept, since the resources gate judges the candidate.
  const std::string cand_binary = harness_binary_, cand_log = compile_log_;
  StageContext ref{*c.compare.spec, c.baseline_bundle_dir, c.work_dir, c.gpu, {}, c.sink,
                   c.stop, c.compare.bundle_hash, c.attempt, "", c.run_dir};
  StageResult b = build_one(ref);
  baseline_binary_ = harness_binary_;
  harness_binary_ = cand_binary;
  compile_log_ = cand_log;
  problem_spec_file_ = cand_spec;
  family_case_args_ = cand_cases;
  if (!b.ok) return infra("the reference " + c.compare.label + " does not build here: " + b.reason);
  r.data["baseline_build"] = b.data;
  return r;
}

Result<HarnessBackend::Compiler> HarnessBackend::locked_compiler() {
  std::lock_guard<std::mutex> lock(compiler_mu_);
  return compiler();
}

Result<std::optional<HarnessBackend::HarnessObjects>> HarnessBackend::harness_objects(
    const Compiler& cc, const std::vector<std::string>& defines, const std::string& cache_dir,
    const std::string& digest) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path hdir = cfg_.harness_dir;
  const std::vector<std::string> sources = harness_sources(hdir);
  // The measuring process's objects (kfleet's sources, kfleet's flags, compiled by the agent)
  // serve every source no entry rename applies to.
  auto measurer = measuring_process(cc, cache_dir, digest, sources);
  if (!measurer.ok()) return measurer.error();
  if (!*measurer) return std::optional<HarnessObjects>();
  const fs::path dir = fs::path(cache_dir) / "harness-objects";
  std::error_code ec;

  struct Item {
    std::string source, object;
    std::vector<std::string> argv;
    std::shared_ptr<std::promise<Result<std::string>>> promise;  // set when this call compiles it
    std::shared_future<Result<std::string>> done;
  };
  std::vector<Item> items;
  HarnessObjects out;
  out.measurer = **measurer;
  if ((*measurer)->built) out.compiled += static_cast<int>(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::string& src = sources[i];
    const std::string text = harness_source_text(hdir, src);
    std::vector<std::string> flags = {"-I" + (hdir / "include").string()};
    for (const auto& d : defines)
      if (text.find(macro_of(d)) != std::string::npos) flags.push_back(d);
    Item it;
    it.source = src;
    if (flags.size() == 1) {
      it.object = (*measurer)->objects[i];
      std::promise<Result<std::string>> p;
      p.set_value(it.object);
      it.done = p.get_future().share();
      ++out.from_measurer;
      if (!(*measurer)->built) ++out.reused;
      items.push_back(std::move(it));
      continue;
    }
    fs::create_directories(dir, ec);
    if (ec) return make_error(Errc::unavailable, "cannot create " + dir.string() + ": " + ec.message());
    std::string key_text = name() + "\n" + cc.version + "\n" + cfg_.arch + "\n" + digest + "\n" +
                           fs::path(src).filename().string() + "\n";
    for (const auto& f : flags) key_text += (f.rfind("-I", 0) == 0 ? "-I" : f) + "\n";
    it.object = (dir / (fs::path(src).filename().string() + "." + sha256_hex(key_text).substr(0, 24) + ".o")).string();
    auto argv = harness_compile_argv(cc, cfg_.arch, flags, src, it.object + ".tmp");
    if (!argv) return std::optional<HarnessObjects>();
    it.argv = *argv;
    items.push_back(std::move(it));
  }

  // Claim the objects nobody has: the rest exist or are being compiled by another thread.
  std::vector<Item*> mine;
  {
    std::lock_guard<std::mutex> lock(objects_mu_);
    for (auto& it : items) {
      if (it.done.valid()) {
        continue;  // the measuring process's object
      } else if (fs::exists(it.object)) {
        std::promise<Result<std::string>> p;
        p.set_value(it.object);
        it.done = p.get_future().share();
        ++out.reused;
      } else if (auto f = objects_in_flight_.find(it.object); f != objects_in_flight_.end()) {
        it.done = f->second;
        ++out.reused;
      } else {
        it.promise = std::make_shared<std::promise<Result<std::string>>>();
        it.done = it.promise->get_future().share();
        objects_in_flight_[it.object] = it.done;
        mine.push_back(&it);
      }
    }
  }
  out.compiled += static_cast<int>(mine.size());

  // Compile ours in parallel, a worker per core.
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < mine.size();) {
      Item& it = *mine[i];
      // A staging dir unique per process and thread (two agents may share a cache), the only
      // place the sandboxed compiler may write.
      const fs::path staging = fs::path(it.object).parent_path() /
                               ("." + fs::path(it.object).filename().string() + "." +
                                std::to_string(::getpid()) + "." +
                                std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())));
      std::error_code se;
      fs::remove_all(staging, se);
      fs::create_directories(staging, se);
      const std::string unique = (staging / "out.o").string();
      it.argv.back() = unique;
      SubprocessSpec sp = sandboxed_process({staging.string()}, {compiler_prefix(cc.path)}, false);
      sp.argv = it.argv;
      sp.timeout_s = 600;
      auto res = run_subprocess(sp);
      Result<std::string> r = it.object;
      if (!res.ok()) {
        r = res.error();
      } else if (!res->ok()) {
        r = make_error(Errc::internal, fs::path(it.source).filename().string() + ": " +
                                           res->describe() + ": " + first_error(res->err + res->out));
      } else {
        std::error_code e = store_in_cache(unique, it.object);
        if (e && !fs::exists(it.object)) r = make_error(Errc::unavailable, "cannot store " + it.object + ": " + e.message());
      }
      std::error_code e;
      fs::remove_all(staging, e);
      it.promise->set_value(r);
      std::lock_guard<std::mutex> lock(objects_mu_);
      objects_in_flight_.erase(it.object);
    }
  };
  const std::size_t n = std::min<std::size_t>(mine.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t i = 0; i < n; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();

  for (auto& it : items) {
    const auto& r = it.done.get();
    if (!r.ok()) return r.error();
    out.objects.push_back(*r);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::optional<HarnessObjects>(std::move(out));
}

void HarnessBackend::prepare(const std::function<void(const std::string&)>& log) {
  if (!cfg_.link_harness || cfg_.cache_dir.empty() || !fs::exists(fs::path(cfg_.harness_dir) / "include")) return;
  auto cc = locked_compiler();
  if (!cc.ok()) {
    log("harness not prepared: " + cc.error().message);
    return;
  }
  auto h = harness_objects(*cc, {}, cfg_.cache_dir, harness_digest(cfg_.harness_dir));
  if (!h.ok()) {
    log("harness objects for " + cfg_.arch + " failed to compile: " + h.error().message);
  } else if (*h) {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "harness objects for %s ready: %d compiled, %d cached, %.1f s; measuring process "
                  "%s (sha256 %.16s), built from kfleet's sources alone",
                  cfg_.arch.c_str(), (*h)->compiled, (*h)->reused, (*h)->seconds,
                  (*h)->measurer.binary.c_str(), (*h)->measurer.sha256.c_str());
    log(buf);
  }
}

// A Python kernel (kernels/harness/PYTHON.md): nothing of the job is compiled
// ahead of time (Triton's JIT and load_inline compile inside the recorder) and no cache entry is
// made; the recorder runs from the bundle. What the build gives its stages is kfleet's measuring
// process, and the check that this agent's Python can record the language at all.
StageResult HarnessBackend::build_python(StageContext& c, const Compiler& cc, const fs::path& hdir) {
  const auto& k = c.spec.kernel;
  StageResult r;
  r.data = {{"compiler", cc.version}, {"arch", cfg_.arch}, {"language", k.language},
            {"cache_hit", false}, {"recorder", "python"}};
  measurer_.reset();
  if (k.sources.empty()) {
    r.reason = "a " + k.language + " kernel needs its launch module as kernel.sources[0]";
    return r;
  }
  if (!cfg_.link_harness) {
    // A compile agent: there is nothing to compile; the GPU agent records it.
    r.ok = true;
    r.data["skipped"] = k.language + " kernels have nothing to build ahead of time";
    return r;
  }
  const auto& py = python_runtime();
  if (!py) return fleet("no Python to record " + k.language + " kernels with: " + py.error().message);
  if (std::find(py->languages.begin(), py->languages.end(), k.language) == py->languages.end()) {
    std::string why;
    for (const auto& m : py->missing) why += (why.empty() ? "" : "; ") + m;
    return fleet("this agent's Python (" + py->python + ") cannot record " + k.language +
                 " kernels" + (why.empty() ? std::string() : ": " + why));
  }
  fs::path cache = fs::path(build_cache_dir(cfg_.cache_dir, c.work_dir));
  auto m = measuring_process(cc, cache.string(), harness_digest(hdir), harness_sources(hdir));
  if (!m.ok()) return fleet("the measuring process could not be built: " + m.error().message);
  if (!*m) return fleet("no runnable measuring process on this host: " + k.language +
                        " kernels are replayed by it");
  measurer_ = **m;
  const std::string source = (fs::path(c.bundle_dir) / source_bundle_path(k.sources.front())).string();
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(source, ec))) {
    r.reason = "the launch module " + k.sources.front() + " is not a file of the job's bundle";
    return r;
  }
  harness_binary_ = source;
  compile_log_.clear();
  python_jobs_[source] = PythonJob{source, k.language, k.entry};
  r.ok = true;
  r.data["binary"] = source;
  r.data["measurer"] = measurer_->binary;
  r.data["measurer_sha256"] = measurer_->sha256;
  r.data["python"] = py->python;
  c.sink.log(stage::build, k.language + " kernel: nothing to compile; recorded by " + py->python +
                               ", replayed by kfleet-measure");
  return r;
}

StageResult HarnessBackend::build_one(StageContext& c) {
  const auto& k = c.spec.kernel;
  if (k.family == "custom") {
    if (!k.steps || k.steps->build.empty()) {
      StageResult r;
      r.ok = true;
      r.data["skipped"] = "no build step";
      return r;
    }
    return run_custom_step(c, stage::build, k.steps->build, false);
  }
  if (auto f = check_kernel_compile_inputs(k); !f) {
    StageResult bad;
    bad.reason = f.error().message;
    return bad;
  }
  problem_spec_file_.clear();
  family_case_args_.clear();
  if (!k.problem.empty() && !is_generic_problem(k)) {
    // A family's problem: its cases' shapes, scalars, checks and draws from this agent's library.
    auto args = family_problem_case_args(cfg_.problems_dir, k);
    if (!args) return fleet("problem " + problem_ref(k) + ": " + args.error().message);
    family_case_args_ = std::move(*args);
  }
  if (is_generic_problem(k)) {
    // The contract comes from this agent's library, never from the job: resolved into a file of
    // the agent's that the job's processes may only read. A problem missing here is the fleet's
    // failure (this agent's library lags kfleetd's), not the job's.
    const fs::path cache_root = fs::path(build_cache_dir(cfg_.cache_dir, c.work_dir));
    auto spec_file = problem_spec_file(cfg_.problems_dir, k, (cache_root / "problem-specs").string());
    if (!spec_file) return fleet("problem " + problem_ref(k) + ": " + spec_file.error().message);
    problem_spec_file_ = *spec_file;
  }
  auto cc = locked_compiler();
  if (!cc.ok()) return fleet(cc.error().message);
  fs::path hdir = cfg_.harness_dir;
  if (!fs::exists(hdir / "include")) {
    return fleet("harness sources not found " +
                 (hdir.empty() ? "(none at " + installed_data_hint("kernels/harness") + ")"
                               : "at " + hdir.string()) +
                 ": install the kfleet-kernels package or set KFLEET_HARNESS_DIR to kernels/harness");
  }

  if (is_python_language(k.language)) return build_python(c, *cc, hdir);

  // Job flags: defines, the entry rename (ABI.md) when the entry is a launch function, flags.
  std::vector<std::string> flags = {"-I" + (hdir / "include").string()};
  for (const auto& [name, value] : k.defines) flags.push_back("-D" + name + "=" + value);
  std::string sources_text;
  for (const auto& s : k.sources) sources_text += read_whole_file(fs::path(c.bundle_dir) / source_bundle_path(s));
  if (!k.entry.empty()) {
    // A generic problem's kernel is kfleet_problem_launch(const kfleet_problem_args*, ...):
    // renamed as the families' are (PROBLEM-ABI.md), by KFLEET_PROBLEM_ENTRY.
    std::regex launch("\\b" + k.entry + "\\s*\\(\\s*const\\s+kfleet_(attention|scaled_mm|problem)_args");
    std::smatch m;
    if (std::regex_search(sources_text, m, launch)) {
      flags.push_back(std::string("-DKFLEET_") +
                      (m[1] == "attention" ? "ATTENTION" : m[1] == "problem" ? "PROBLEM" : "SCALED_MM") +
                      "_ENTRY=" + k.entry);
    }
  }
  for (const auto& f : k.flags) flags.push_back(f);

  // Cache key: everything that decides the binary.
  std::string key_text = k.family + "\n" + k.language + "\n" + k.entry + "\n" + k.params.dump() +
                         "\n" + cc->version + "\n" + cfg_.arch + "\n" + name() + "\n";
  if (!k.problem.empty()) key_text += "problem " + problem_ref(k) + "\n";  // none for family jobs: their keys stay
  for (const auto& f : flags) key_text += f + "\n";
  for (const auto& s : k.sources) key_text += s + "\n";
  const std::string digest = harness_digest(hdir);
  key_text += sources_text + digest;
  if (!cfg_.link_harness) key_text += "\nnot linked";
  const std::string key = sha256_hex(key_text);
  fs::path cache = fs::path(build_cache_dir(cfg_.cache_dir, c.work_dir));
  fs::path entry = cache / key;
  fs::path binary = entry / "kfleet-harness";
  fs::path log_file = entry / "compile.log";

  StageResult r;
  r.data = {{"cache_key", key}, {"compiler", cc->version}, {"arch", cfg_.arch}};
  if (!problem_spec_file_.empty()) {
    r.data["problem"] = problem_ref(k);
    r.data["problem_spec"] = problem_spec_file_;
  }
  // The measuring process: kfleet's, never built from this job (harness_measurer.cpp).
  measurer_.reset();
  bool measurer_built = false;
  if (cfg_.link_harness) {
    auto m = measuring_process(*cc, cache.string(), digest, harness_sources(hdir));
    if (!m.ok()) return fleet("the measuring process could not be built: " + m.error().message);
    if (*m) {
      measurer_built = (*m)->built;
      measurer_ = **m;
      r.data["measurer"] = measurer_->binary;
      r.data["measurer_sha256"] = measurer_->sha256;
    }
  }
  if (fs::exists(entry / "done")) {
    compile_log_ = read_whole_file(log_file);
    harness_binary_ = fs::exists(binary) ? binary.string() : "";
    r.ok = true;
    r.data["cache_hit"] = true;
    r.data["binary"] = harness_binary_;
    c.sink.log(stage::build, "build cache hit " + key.substr(0, 12));
    return r;
  }
  std::error_code ec;
  // Built in the run's own dir (the sandbox's only writable place), then moved into the cache.
  fs::path tmp = fs::path(c.work_dir) / ("build-" + key.substr(0, 16));
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return infra("cannot create build dir " + tmp.string() + ": " + ec.message());

  compile_log_.clear();
  std::vector<std::string> objects;
  for (const auto& s : k.sources) {
    std::string obj = (tmp / (fs::path(s).filename().string() + ".o")).string();
    SubprocessSpec sp = job_process(c, {compiler_prefix(cc->path)}, false);
    sp.argv = compile_argv(*cc, cfg_.arch, flags, (fs::path(c.bundle_dir) / source_bundle_path(s)).string(),
                           obj);
    sp.cwd = c.bundle_dir;
    auto res = run_subprocess(sp);
    if (!res.ok()) return infra(res.error().message);
    compile_log_ += res->err + res->out;
    if (!res->ok()) {
      c.sink.log(stage::build, res->err);
      r.reason = res->timed_out || res->stopped ? "compile " + res->describe()
                                                : "compile failed: " + first_error(res->err);
      r.data["log"] = tail_lines(res->err, 40);
      if (auto lds = compiler_lds_refusal(res->err, cfg_.arch); lds && !res->timed_out && !res->stopped) {
        // More LDS than the target has: the resources gate's refusal, not a broken build.
        r.reason = lds->reason;
        r.data["gate"] = "resources";
        r.data["violations"] = nlohmann::json::array(
            {{{"kernel", lds->kernel}, {"field", lds->field}, {"value", lds->value}, {"limit", lds->limit}, {"reason", lds->reason}}});
      }
      fs::remove_all(tmp, ec);
      return r;
    }
    objects.push_back(obj);
  }

  // The harness half of the binary: objects shared by every job of this arch, usually already
  // in the cache (prepare() compiles them when the agent starts).
  std::vector<std::string> entry_defines;
  for (const auto& f : flags)
    if (f.rfind("-DKFLEET_", 0) == 0 && f.find("_ENTRY=") != std::string::npos) entry_defines.push_back(f);
  auto hobj = cfg_.link_harness
                  ? harness_objects(*cc, entry_defines, cache.string(), digest)
                  : Result<std::optional<HarnessObjects>>(std::optional<HarnessObjects>());
  if (!hobj.ok()) {
    fs::remove_all(tmp, ec);
    return infra("harness build failed: " + hobj.error().message);
  }
  if (*hobj) {
    if (measurer_built) {  // built by this build, just above: its objects were compiled now
      (*hobj)->compiled += (*hobj)->from_measurer;
      (*hobj)->reused -= (*hobj)->from_measurer;
    }
    r.data["harness_objects"] = {{"compiled", (*hobj)->compiled}, {"reused", (*hobj)->reused},
                                 {"seconds", (*hobj)->seconds}};
    auto all_objects = (*hobj)->objects;
    all_objects.insert(all_objects.end(), objects.begin(), objects.end());
    std::vector<std::string> inputs = (*hobj)->objects;
    inputs.push_back(compiler_prefix(cc->path));
    SubprocessSpec sp = job_process(c, inputs, false);
    sp.argv = link_argv(*cc, cfg_.arch, flags, all_objects, (tmp / "kfleet-harness").string());
    sp.cwd = c.bundle_dir;
    auto res = run_subprocess(sp);
    if (!res.ok()) return infra(res.error().message);
    if (!res->ok()) {
      c.sink.log(stage::build, res->err);
      r.reason = "link with the harness failed: " + first_error(res->err);
      r.data["log"] = tail_lines(res->err, 40);
      fs::remove_all(tmp, ec);
      return r;
    }
    // Nothing more is built here: the measuring process is kfleet's own (measuring_process()),
    // and it reads only the job's device code out of the objects kept in this entry.
  } else if (!cfg_.link_harness) {
    c.sink.log(stage::build, "compiled for " + cfg_.arch + " (" + cc->version +
                                 "); the GPU agent links it with the harness");
    r.data["linked"] = false;
  } else {
    c.sink.log(stage::build, "no GPU runtime to link against: built for the resources gate only");
  }
  // The job's processes have all ended: what they left is the job's data, taken over by the
  // agent before it writes a file of its own beside them.
  if (const std::string removed = take_job_files(tmp.string()); removed == ".") {
    r.reason = "the build folder " + tmp.string() + " was replaced by something other than a folder during the build";
    return r;
  } else if (!removed.empty()) {
    c.sink.log(stage::build, "removed from the build folder (links and special files are not kept): " + removed);
  }
  if (auto w = write_new_file((tmp / "compile.log").string(), compile_log_); !w) {
    fs::remove_all(tmp, ec);
    return infra(w.error().message);
  }
  if (auto w = write_new_file((tmp / "done").string(), key + "\n"); !w) {
    fs::remove_all(tmp, ec);
    return infra(w.error().message);
  }
  ec = store_in_cache(tmp, entry);
  if (ec) fs::remove_all(tmp, ec);  // another run finished the same build first: use it
  harness_binary_ = *hobj && fs::exists(binary) ? binary.string() : "";
  r.ok = true;
  r.data["cache_hit"] = false;
  r.data["binary"] = harness_binary_;
  return r;
}

StageResult HarnessBackend::resources(StageContext& c) {
  StageResult r;
  if (c.spec.kernel.family == "custom") {
    r.ok = true;
    r.data["skipped"] = "custom jobs report no compiler resources";
    return r;
  }
  if (is_python_language(c.spec.kernel.language)) {
    // Compiled by Triton or torch inside the recorder, not by the agent: no report to gate (the
    // spec refuses gates.resources for these languages).
    r.ok = true;
    r.data["skipped"] = c.spec.kernel.language + " kernels are compiled in the recorder: no compiler resources";
    return r;
  }
  auto all = parse_resources(compile_log_, cfg_.arch);
  if (all.empty()) {
    return infra("the compiler reported no kernel resources (was the build stage run?)");
  }
  auto kernels = select_entry(all, c.spec.kernel.entry);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& u : kernels) list.push_back(to_json(u));
  r.data["kernels"] = list;
  // What the target holds first (whatever the budget), then the job's own budget.
  std::vector<ResourceViolation> viol = evaluate_target(kernels, cfg_.arch);
  if (c.spec.gates.resources) {
    auto more = evaluate_budget(kernels, *c.spec.gates.resources);
    viol.insert(viol.end(), more.begin(), more.end());
  }
  nlohmann::json vj = nlohmann::json::array();
  for (const auto& v : viol) {
    vj.push_back({{"kernel", v.kernel}, {"field", v.field}, {"value", v.value},
                  {"limit", v.limit}, {"reason", v.reason}});
  }
  r.data["violations"] = vj;
  r.ok = viol.empty();
  if (!r.ok) {
    r.reason = viol.front().reason;
    if (viol.size() > 1) r.reason += " (and " + std::to_string(viol.size() - 1) + " more)";
  }
  r.data["ok"] = r.ok;  // the pipeline publishes this as the resources event
  return r;
}

}  // namespace kfleet::backends
