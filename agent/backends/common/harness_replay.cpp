// How a harness stage runs (kernels/harness/ABI.md, "Recorded replay"): by default the job's
// binary only records its launches (its output goes to the job's log, nothing it prints is a
// result) and the measuring process, the harness built without the job's host code, replays
// them and reports through a pipe the agent gives it. A job that asks for in-process timing
// runs as before, still reporting through the pipe, and never as root.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <sstream>
#include <thread>

#include "common/harness_backend.hpp"
#include "common/harness_protocol.hpp"
#include "common/python_stage.hpp"
#include "kfleet/common/event.hpp"
#include "kfleet/common/language.hpp"
#include "kfleet/common/log.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;
using agent::StageContext;

// The megabytes of the arena's python scratch buffer beyond eight times the case's own buffers
// (kfleet-measure --python-scratch-mib): room for torch's temporaries, cuBLAS's and cuDNN's
// workspaces.
constexpr int kPythonScratchMib = 256;

namespace {

// The read end stays with the agent; the write end goes to one child only: it stays
// close-on-exec here and run_subprocess passes it to that child alone (SubprocessSpec::pass_fds).
// Once the child is seen running (run_subprocess's first poll) the agent closes its copy, so the
// child and its descendants alone can write, and EOF comes when they are gone.
class ResultPipe {
 public:
  ResultPipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      read_ = fds[0];
      write_ = fds[1];
    }
  }
  ~ResultPipe() {
    close_write();
    if (reader_.joinable()) reader_.join();
    if (read_ >= 0) ::close(read_);
  }
  bool ok() const { return read_ >= 0 && write_ >= 0; }
  int write_fd() const { return write_; }
  void start() {
    reader_ = std::thread([this] {
      char buf[65536];
      for (;;) {
        pollfd p{read_, POLLIN, 0};
        const int n = ::poll(&p, 1, 100);
        if (n < 0 && errno != EINTR) return;
        if (n <= 0) {
          if (done_) return;
          continue;
        }
        const ssize_t r = ::read(read_, buf, sizeof buf);
        if (r <= 0) return;  // EOF: every writer is gone
        text_.append(buf, static_cast<std::size_t>(r));
      }
    });
  }
  void close_write() {
    if (write_ >= 0) ::close(write_);
    write_ = -1;
  }
  // After the child has ended: what it wrote.
  std::string finish() {
    close_write();
    // A descendant outside the killed group could hold the write end: stop after a bound.
    std::thread stopper([this] {
      for (int i = 0; i < 20 && !joined_; ++i) ::usleep(100 * 1000);
      done_ = true;
    });
    if (reader_.joinable()) reader_.join();
    joined_ = true;
    stopper.join();
    return text_;
  }

 private:
  int read_ = -1, write_ = -1;
  std::thread reader_;
  std::string text_;
  std::atomic<bool> done_{false}, joined_{false};
};

std::string join(const std::vector<std::string>& v, char sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : std::string(1, sep)) + x;
  return s;
}

// Copies `from` to `to` only if `from` is a regular file of its own (opened without following a
// link, then checked on the open descriptor, so it cannot be swapped in between): "" or why not.
std::string copy_own_file(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) return from + " cannot be read as a file of its own";
  struct stat st {};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    ::close(in);
    return from + " is not a regular file of its own";
  }
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    ::close(in);
    return "cannot create " + to;
  }
  char buf[1 << 16];
  bool ok = true;
  for (ssize_t n; ok && (n = ::read(in, buf, sizeof buf)) != 0;) {
    if (n < 0) { ok = false; break; }
    for (ssize_t done = 0; ok && done < n;) {
      const ssize_t w = ::write(out, buf + done, static_cast<std::size_t>(n - done));
      if (w <= 0) ok = false;
      else done += w;
    }
  }
  ::close(in);
  if (::close(out) != 0) ok = false;
  return ok ? "" : "cannot copy " + from + " to " + to;
}

}  // namespace

std::string recorder_failure(const SubprocessResult& r, const std::vector<nlohmann::json>& said) {
  const std::string recorder = "the recorder (the job's launch function under capture)";
  if (r.signal != 0) {
    // Killed (an abort in the launch function, a fault): what it printed last says why; its
    // lines are not read, a process that died mid-way says nothing reliable on stdout.
    std::string why = recorder + " was " + r.describe();
    if (const std::string t = crash_line(r.err); !t.empty()) why += ": " + t;
    return why;
  }
  std::string why = r.describe();
  for (const auto& m : said)
    if (string_at(m, "type", "") == "error") why = string_at(m, "message", why);
  if (why.rfind("replay mode refused", 0) != 0) why = recorder + " failed: " + why;
  return why;
}

bool in_process_timing(const JobSpec& spec) {
  const auto& p = spec.kernel.params;
  return p.is_object() && p.contains("timing") && p["timing"].is_string() &&
         p["timing"].get<std::string>() == "in_process";
}

std::string in_process_refusal(const JobSpec& spec) {
  if (!in_process_timing(spec) || ::geteuid() != 0) return "";
  return "in-process timing refuses to run as root: the kernel's host code runs in the measuring "
         "process; run the agent as an unprivileged user, or drop kernel.params.timing to replay";
}

Result<SubprocessResult> HarnessBackend::run_child(StageContext& c, const std::string& stage,
                                                   std::vector<std::string> argv,
                                                   std::vector<nlohmann::json>& messages,
                                                   bool result_pipe,
                                                   const std::vector<std::string>& readable,
                                                   Child who,
                                                   const std::vector<std::pair<std::string, std::string>>& env,
                                                   const std::string& folder) {
  SubprocessSpec sp;
  if (who == Child::measure) {
    // The measuring process: kfleet's binary, in a sandbox of its own that writes nowhere (its
    // /tmp is private and gone with it), started in its own read-only folder, HOME there too,
    // with no compute cache: it reads no file a job's process wrote but those in `readable`,
    // the launch list and the job's objects, which it parses as data.
    std::vector<std::string> r = readable;
    r.push_back(fs::path(argv.front()).parent_path().string());
    sp = sandboxed_process({}, std::move(r), true);
    sp.cwd = fs::path(argv.front()).parent_path().string();
    sp.env.insert(sp.env.end(), {{"HOME", "/tmp"}, {"CUDA_CACHE_DISABLE", "1"}});
    sp.timeout_s = c.spec.timeout_s;
    sp.should_stop = [&c] { return c.stop.requested(); };
  } else if (who == Child::reference) {
    // kfleet's PyTorch reference: the job's sandbox (torch.compile and Triton compile and write
    // caches there), but none of the job's files: it writes only its own fresh folder.
    std::vector<std::string> r = readable;
    r.push_back(fs::path(argv.front()).parent_path().string());
    sp = sandboxed_process({folder}, std::move(r), true);
    sp.cwd = folder;
    sp.timeout_s = cfg_.reference_timeout_s;
    sp.on_denial = [&c](const std::string& line) {
      c.sink.emit(event_type::log_line, {{"stream", "sandbox"}, {"text", line}});
    };
    sp.env.insert(sp.env.end(), env.begin(), env.end());
  } else {
    // The job's sandbox, reading the build's cache entry (the job's binary and objects) and
    // writing only the run's dir.
    std::vector<std::string> r = readable;
    r.push_back(fs::path(argv.front()).parent_path().string());
    sp = job_process(c, std::move(r), true);
    sp.env.insert(sp.env.end(), env.begin(), env.end());
  }
  const bool probe = argv.size() > 1 && argv[1] == "probe";
  if (!probe) argv.insert(argv.end(), {"--device", std::to_string(child_device())});
  if (argv.size() > 1 && argv[1] == "benchmark" && cfg_.throttle_pct >= 0) {
    std::ostringstream t;
    t << cfg_.throttle_pct;
    argv.insert(argv.end(), {"--throttle-pct", t.str()});
  }
  ResultPipe pipe;
  if (result_pipe) {
    if (!pipe.ok()) return make_error(Errc::unavailable, "cannot create the result pipe");
    argv.insert(argv.end(), {"--result-fd", std::to_string(pipe.write_fd())});
  }
  sp.argv = std::move(argv);
  if (result_pipe) sp.pass_fds = {pipe.write_fd()};
  sp.should_stop = [&] {
    pipe.close_write();  // the child runs: it holds its own copy
    return c.stop.requested();
  };
  sp.on_line = [&](OutputStream s, const std::string& line) {
    if (s == OutputStream::err || result_pipe) {
      // With a result pipe, whatever the child prints is the job's log, never a result.
      c.sink.emit(event_type::log_line,
                  {{"stage", stage}, {"stream", s == OutputStream::err ? "stderr" : "stdout"},
                   {"text", line}});
      return;
    }
    if (auto m = parse_harness_line(line)) messages.push_back(std::move(*m));
  };
  if (result_pipe) pipe.start();
  auto res = run_subprocess(sp);
  if (result_pipe) {
    std::istringstream in(pipe.finish());
    std::string line;
    while (std::getline(in, line))
      if (auto m = parse_harness_line(line)) messages.push_back(std::move(*m));
  }
  return res;
}

Result<SubprocessResult> HarnessBackend::run_reference_check(StageContext& c, const std::string& case_name,
                                                             std::uint64_t seed,
                                                             std::vector<nlohmann::json>& messages) {
  // kfleet's measuring process when the job is replayed (the usual case); a job timed in
  // process has none, and its harness checks the reference the same way.
  if (measurer_)
    if (auto ok = check_measurer(*measurer_); !ok) return ok.error();
  const std::string binary = measurer_ ? measurer_->binary : harness_binary_;
  std::vector<std::string> argv = {binary, "correctness", "--case", case_name, "--problem-spec",
                                   problem_spec_file_, "--seeds", std::to_string(seed), "--reference-check"};
  return run_child(c, stage::correctness, argv, messages, /*result_pipe=*/true, problem_reads(),
                   measurer_ ? Child::measure : Child::job);
}

void HarnessBackend::drop_kept_recordings() {
  std::lock_guard<std::mutex> lock(kept_mu_);
  for (const auto& [key, k] : kept_) {
    std::error_code ec;
    fs::remove_all(k.folder, ec);
  }
  kept_.clear();
}

Result<SubprocessResult> HarnessBackend::run_stage(StageContext& c, const std::string& stage,
                                                   const std::vector<std::string>& args_in,
                                                   std::vector<nlohmann::json>& messages,
                                                   const std::string& binary_in) {
  const std::string binary = binary_in.empty() ? harness_binary_ : binary_in;
  // A Python kernel (triton, torch): its "binary" is its launch module, recorded by the agent's
  // Python; it is always replayed (the spec refuses in-process timing for it).
  const auto py_job = python_jobs_.find(binary);
  const bool python = py_job != python_jobs_.end();
  const bool reference = python && py_job->second.reference;
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args_in.begin(), args_in.end());
  // A Python kernel's torch allocates during its launch: from a buffer of the arena that the plan
  // and the replay both map (PYTHON.md, "torch programs"), so those addresses replay.
  std::vector<std::string> args = args_in;
  recorded_kernels_.reset();
  if (python) args.insert(args.end(), {"--python-scratch-mib", std::to_string(kPythonScratchMib)});
  if (!python && in_process_timing(c.spec)) {
    if (const std::string no = in_process_refusal(c.spec); !no.empty())
      return make_error(Errc::forbidden, no);
    return run_child(c, stage, argv, messages, /*result_pipe=*/true, problem_reads());
  }
  // The measuring process is kfleet's, and still the one the agent built: checked before the
  // job's code runs at all.
  if (!measurer_) return make_error(Errc::unavailable, "no measuring process on this agent (was the build stage run?)");
  if (auto ok = check_measurer(*measurer_); !ok) return ok.error();
  // The measuring process on a launch list and the device code it names: all the job's data.
  auto measure_with = [&](const std::string& list, const std::vector<std::string>& device_code) {
    std::vector<std::string> measure = {measurer_->binary};
    measure.insert(measure.end(), args.begin(), args.end());
    measure.insert(measure.end(), {"--replay", list, "--device-code", join(device_code, ',')});
    std::vector<std::string> readable = device_code;
    readable.push_back(list);
    for (const auto& f : problem_reads()) readable.push_back(f);  // the resolved problem, agent-owned
    return run_child(c, stage, measure, messages, /*result_pipe=*/true, readable, Child::measure);
  };
  // A Python job's later rounds replay the recording its first round took (kept_).
  const bool keep = python && !reference && stage == stage::benchmark;
  const std::string key = keep ? binary + '\n' + join(args, '\n') : "";
  if (keep) {
    std::optional<KeptRecording> k;
    {
      std::lock_guard<std::mutex> lock(kept_mu_);
      if (auto it = kept_.find(key); it != kept_.end()) k = it->second;
    }
    if (k) {
      c.sink.emit(event_type::log_line,
                  {{"stage", stage}, {"stream", "stdout"},
                   {"text", "replaying this job's recording of the same launch from its first round (the "
                            "agent's copy; PYTHON.md, \"Rounds\")"}});
      return measure_with(k->list, k->device_code);
    }
  }
  // 1. Record: the job's code, whose output is its log; only its error line explains a refusal.
  const std::string n = std::to_string(++recordings_);
  // kfleet's PyTorch reference records into a fresh folder of the agent's, outside the run's
  // (which the job's processes could write), removed once it has been replayed.
  std::string folder = c.work_dir;
  if (reference) {
    folder = (fs::path(build_cache_dir(cfg_.cache_dir, c.work_dir)) / "torch-references" / "work" /
              (std::to_string(::getpid()) + "-" + n)).string();
    std::error_code ec;
    fs::remove_all(folder, ec);
    fs::create_directories(folder, ec);
    if (ec) return make_error(Errc::unavailable, "cannot create " + folder + ": " + ec.message());
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{reference ? folder : ""};
  const std::string list = (fs::path(folder) / ("launches-" + n + ".txt")).string();
  const std::string device_code_dir = (fs::path(folder) / ("device-code-" + n)).string();
  std::vector<nlohmann::json> said;
  Result<SubprocessResult> r = make_error(Errc::unavailable, "not recorded");
  if (python) {
    // The recorder is kfleet_record.py run by the agent's Python, in the job's sandbox: it asks
    // the measuring process for the plan (its folder is read), imports the launch module and
    // writes the launch list and the device code it captured into the run's folder.
    const auto& py = python_runtime();
    if (!py) return make_error(Errc::unavailable, "no Python to record " + py_job->second.language +
                                                      " kernels with: " + py.error().message);
    std::error_code ec;
    fs::remove_all(device_code_dir, ec);
    fs::create_directories(device_code_dir, ec);
    if (ec) return make_error(Errc::unavailable, "cannot create " + device_code_dir + ": " + ec.message());
    const fs::path work = folder;
    const std::string cache = (work / "py-cache").string(), home = (work / "py-home").string(),
                      tmp = (work / "py-tmp").string();
    for (const auto& d : {cache, home, tmp}) fs::create_directories(d, ec);
    const auto rec = python_recorder_argv(
        PythonRecorderCall{py->python, cfg_.harness_dir, measurer_->binary, py_job->second.source,
                           py_job->second.language, py_job->second.entry, device_code_dir, cache, list,
                           py_job->second.torch_compile},
        args);
    std::vector<std::string> readable = python_recorder_read_paths(*py, cfg_.harness_dir);
    readable.push_back(fs::path(measurer_->binary).parent_path().string());
    // A problem of the library: kfleet-measure --plan, run by the recorder, reads its spec.
    for (const auto& f : problem_reads()) readable.push_back(f);
    // kfleet's PyTorch reference: its source's folder in the agent's library; the job's bundle
    // is not there at all.
    if (reference) readable.push_back(fs::path(py_job->second.source).parent_path().string());
    const std::string cuda_home = py->cuda_home.empty() ? "/usr/local/cuda" : py->cuda_home;
    std::vector<std::pair<std::string, std::string>> env = {
        {"CUDA_HOME", cuda_home}, {"PATH", python_recorder_path_env(*py, cuda_home)}, {"TMPDIR", tmp}, {"HOME", home}};
    if (!py->cc.empty()) env.push_back({"CC", py->cc});
    if (const unsigned w = recorder_compile_workers(sandboxed() ? cfg_.sandbox->defaults.memory_bytes : 0))
      env.push_back({"TORCHINDUCTOR_COMPILE_THREADS", std::to_string(w)});
    // A recorder still running 15 s before its time limit writes every thread's Python stack to
    // its stderr (the run's log): where a hung compile or launch waits, before it is killed.
    if (const int limit = reference ? cfg_.reference_timeout_s : static_cast<int>(c.spec.timeout_s); limit > 30)
      env.push_back({"KFLEET_STACKS_AFTER_S", std::to_string(limit - 15)});
    r = run_child(c, stage, rec, said, /*result_pipe=*/false, readable,
                  reference ? Child::reference : Child::job, env, folder);
  } else {
    std::vector<std::string> rec = argv;
    rec.insert(rec.end(), {"--record", list});
    r = run_child(c, stage, rec, said, /*result_pipe=*/false, problem_reads());
  }
  for (const auto& m : said)
    c.sink.emit(event_type::log_line, {{"stage", stage}, {"stream", "stdout"}, {"text", m.dump()}});
  if (!r.ok() || !r->ok() || r->stopped) {
    if (!r.ok() || r->stopped || r->timed_out) return r;
    if (python && r->signal == 0) {
      // A recorder that could not start (exit 3 before the job's code ran: torch or triton
      // missing, no GPU, an old driver) is this host's setup: a setup error, so the job is
      // retried on another agent and never judged by it.
      if (const std::string why = python_recorder_setup_failure(r->exit_code, said); !why.empty())
        return make_error(Errc::unavailable,
                          "setup: the agent's Python (" + python_runtime()->python +
                              ") cannot record " + py_job->second.language + " kernels here: " +
                              why + " (the fleet's failure, not the kernel's; PYTHON.md)");
    }
    // Otherwise the recorder is the job's process: however it ended (a refusal, a fault its
    // launch left behind, an abort, a setup error printed after the job's code started), that
    // is the kernel's doing, not the host's.
    messages.push_back({{"type", "error"}, {"phase", "record"}, {"message", recorder_failure(*r, said)}});
    SubprocessResult failed = *r;
    failed.signal = 0;
    failed.exit_code = 4;
    return failed;
  }
  // What the recorder said it launched, and where each kernel came from: its report, kept for the
  // verdict as such (recorded_kernels), apart from the lines any process here writes.
  if (python)
    if (auto k = recorded_kernels(said); !k.is_null()) recorded_kernels_ = std::move(k);
  // The launch list is the recorder's file, in a folder the recorder could write: it is read
  // only as the regular file it must be (a link the recorder left there, to a host file the
  // sandbox would bind for the measuring process, is refused, and so is anything else).
  {
    struct stat st {};
    if (::lstat(list.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
      messages.push_back({{"type", "error"}, {"phase", "record"},
                          {"message", "replay mode refused the launch list: the recorder left " + list +
                                          " as something other than a regular file of its own"}});
      SubprocessResult failed = *r;
      failed.exit_code = 4;
      return failed;
    }
  }
  // 2. Measure: kfleet's measuring process, on the job's device code (the objects the recorder
  // was linked from; for a Python kernel, the images its recorder wrote) and the launch list
  // the recorder wrote: all the job's data.
  std::vector<std::string> device_code;
  if (python) {
    // The recorder's files: each must be a plain file of its own (a hard link to a host file
    // would have the measuring process's sandbox bind that file), named as the recorder names
    // them.
    auto refuse = [&](const std::string& why) {
      messages.push_back({{"type", "error"}, {"phase", "record"}, {"message", why}});
      SubprocessResult failed = *r;
      failed.exit_code = 4;
      return failed;
    };
    if (const std::string removed = take_job_files(device_code_dir); removed == ".")
      return refuse("replay mode refused the recorder's device code: its folder " + device_code_dir +
                    " was replaced by something other than a folder");
    else if (!removed.empty())
      return refuse("replay mode refused the recorder's device code: it left " + removed +
                    " (links and special files are not device code)");
    auto files = python_device_code(device_code_dir);
    if (!files) {
      std::error_code ec;
      const std::string declined =
          fs::is_empty(device_code_dir, ec) ? python_launches_declined(list) : "";
      return refuse(declined.empty() ? files.error().message : declined);
    }
    std::stringstream in(*files);
    for (std::string f; std::getline(in, f, ',');) {
      struct stat st {};
      if (::lstat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
        return refuse("replay mode refused the recorder's device code: " + f +
                      " is not a regular file of its own");
      device_code.push_back(f);
    }
  } else {
    device_code = job_device_code(binary);
  }
  if (keep) {
    // Taken into the agent's folder now, and replayed from there, this round and the later ones.
    KeptRecording k;
    k.folder = (fs::path(build_cache_dir(cfg_.cache_dir, c.work_dir)) / "recordings" /
                (std::to_string(::getpid()) + "-" + n)).string();
    std::error_code ec;
    fs::remove_all(k.folder, ec);
    fs::create_directories(k.folder, ec);
    std::string why = ec ? "cannot create " + k.folder + ": " + ec.message() : "";
    if (why.empty()) {
      k.list = (fs::path(k.folder) / "launches.txt").string();
      why = copy_own_file(list, k.list);
    }
    for (std::size_t i = 0; why.empty() && i < device_code.size(); ++i) {
      k.device_code.push_back((fs::path(k.folder) / ("code-" + std::to_string(i) + "-" +
                                                     fs::path(device_code[i]).filename().string())).string());
      why = copy_own_file(device_code[i], k.device_code.back());
    }
    if (!why.empty()) {
      fs::remove_all(k.folder, ec);
      messages.push_back({{"type", "error"}, {"phase", "record"},
                          {"message", "replay mode refused the recorder's files: " + why}});
      SubprocessResult failed = *r;
      failed.exit_code = 4;
      return failed;
    }
    KeptRecording use = k;
    {
      std::lock_guard<std::mutex> lock(kept_mu_);
      if (auto [it, fresh] = kept_.emplace(key, k); !fresh) {  // a pooled process recorded it first
        fs::remove_all(k.folder, ec);
        use = it->second;
      }
    }
    return measure_with(use.list, use.device_code);
  }
  return measure_with(list, device_code);
}

const Result<PythonRuntime>& HarnessBackend::python_runtime() {
  std::lock_guard<std::mutex> lock(python_mu_);
  if (!python_) python_ = discover_python(cfg_.python);
  return *python_;
}

void HarnessBackend::report_python(std::vector<GpuInfo>& gpus) {
  const auto& py = python_runtime();
  nlohmann::json j;
  if (!py) {
    j = {{"error", py.error().message}};
    log::warn("agent", "setup: no Python for triton and torch kernels: ", py.error().message);
  } else {
    j = py->to_json();
    for (const auto& m : py->missing)
      log::warn("agent", "setup: Python kernels: ", m, " (", py->python, ")");
  }
  for (auto& g : gpus) g.extra["python"] = j;
}

}  // namespace kfleet::backends
