// kfleet-agent --check (check.hpp). Each line is one piece the agent needs: ok, "--" (missing,
// and only some jobs need it) or FAIL (the agent can take no job until it is fixed), with what
// it found or what to install.
#include "check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "kfleet/common/install_layout.hpp"
#include "kfleet/common/problem.hpp"
#include "kfleet/common/secret.hpp"
#ifdef KFLEET_HAVE_GPU_BACKENDS
#include "common/sandbox.hpp"
#include "common/subprocess.hpp"
#include "common/toolchain.hpp"
#include "discovery/python.hpp"
#endif

namespace kfleet::agent {
namespace fs = std::filesystem;

namespace {

enum class Mark { ok, missing, fail };

class Report {
 public:
  explicit Report(std::ostream& out) : out_(out) {}
  void line(Mark m, const std::string& what, const std::string& text) {
    const char* tag = m == Mark::ok ? "ok  " : m == Mark::missing ? "--  " : "FAIL";
    out_ << "  " << tag << "  " << what << std::string(what.size() < 11 ? 11 - what.size() : 1, ' ') << text << "\n";
    if (m == Mark::fail && first_fail_.empty()) first_fail_ = what + ": " + text;
  }
  bool failed() const { return !first_fail_.empty(); }
  const std::string& first_fail() const { return first_fail_; }

 private:
  std::ostream& out_;
  std::string first_fail_;
};

std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > 220) s = s.substr(0, 217) + "...";
  return s;
}

// The harness sources and the problem library, as the backends will find them.
void check_install(Report& r, const CheckOptions& o, bool needs_harness) {
  const char* env = std::getenv("KFLEET_HARNESS_DIR");
  const fs::path harness = env && *env ? fs::path(env) : installed_data("kernels/harness");
  std::error_code ec;
  if (!harness.empty() && fs::exists(harness / "include" / "kfleet_harness", ec) &&
      fs::exists(harness / "python" / "kfleet_record.py", ec)) {
    r.line(Mark::ok, "harness", harness.string() + " (sources and Python recorder)");
  } else {
    r.line(needs_harness ? Mark::fail : Mark::missing, "harness",
           (harness.empty() ? "none at " + installed_data_hint("kernels/harness")
                            : "no harness sources at " + harness.string()) +
               ": install the kfleet-kernels package (apt-get install kfleet-kernels) or set "
               "KFLEET_HARNESS_DIR");
  }
  const char* penv = std::getenv("KFLEET_PROBLEMS_DIR");
  const std::string dir = !o.problems_dir.empty() ? o.problems_dir
                                                  : problem_library_dir(penv, installed_data("kernels/problems").string());
  const ProblemLibrary lib = dir.empty() ? ProblemLibrary{} : load_problem_library(dir);
  if (!lib.problems.empty()) {
    r.line(Mark::ok, "problems", lib.root + " (" + std::to_string(lib.problems.size()) + " problems)");
  } else {
    r.line(Mark::missing, "problems",
           (dir.empty() ? "none at " + installed_data_hint("kernels/problems") : "no problem library at " + dir) +
               ": jobs naming a problem fail here; install kfleet-kernels or pass --problems-dir");
  }
}

void check_token(Report& r, const CheckOptions& o) {
  auto t = secret_from_file_or_env(o.enrol_token_file, "KFLEET_ENROL_TOKEN", "enrolment token");
  if (!t) {
    r.line(Mark::fail, "token", one_line(t.error().message));
  } else if (t->empty()) {
    r.line(Mark::fail, "token",
           "no enrolment token: write kfleetd's to /etc/kfleet/enrol.token (mode 0600) and pass "
           "--enrol-token-file (the units do)");
  } else {
    r.line(Mark::ok, "token", o.enrol_token_file.empty() ? "from $KFLEET_ENROL_TOKEN"
                                                         : o.enrol_token_file + " (owner-only)");
  }
}

// kfleetd's health route, the one that needs no token: reachability, and the TLS CA.
void check_server(Report& r, const CheckOptions& o) {
  if (o.server.empty()) {
    r.line(Mark::fail, "server", "none configured: set KFLEET_SERVER in /etc/kfleet/agent.env (or --server URL)");
    return;
  }
  const bool https = o.server.find("https://") != std::string::npos;
  HttpOptions h = o.http;
  h.connect_timeout = std::chrono::milliseconds(5000);
  h.timeout = std::chrono::milliseconds(10000);
  HttpClient client(o.server, "", h);
  auto res = client.get("/api/v1/health");
  const std::string tls = !https ? " (plain HTTP: tokens travel in clear)"
                          : h.insecure ? " (TLS NOT verified: --insecure)"
                          : " (TLS verified against " + (h.ca_file.empty() ? std::string("the system's CAs") : h.ca_file) + ")";
  if (!res) {
    const std::string why = one_line(res.error().message);
    const bool cert = why.find("SSL") != std::string::npos || why.find("certificate") != std::string::npos;
    if (cert) {
      r.line(Mark::fail, "server",
             o.server + ": TLS: " + why + ": set KFLEET_CA_FILE (--ca-file) to the CA that signed kfleetd's certificate");
    } else {
      // Not fatal: the agent retries until kfleetd answers.
      r.line(Mark::missing, "server", o.server + " does not answer now (" + why + "); the agent keeps retrying");
    }
    return;
  }
  if (res->status / 100 != 2) {
    r.line(Mark::missing, "server", o.server + " answered " + std::to_string(res->status) + " on /api/v1/health" + tls);
    return;
  }
  r.line(Mark::ok, "server", client.base_url() + " answers" + tls);
}

#ifdef KFLEET_HAVE_GPU_BACKENDS
// A compiler asked about itself (the agent's own tool, no job input): its output, or why not.
Result<std::string> ask(const std::string& tool, const char* flag) {
  backends::SubprocessSpec s;
  s.argv = {tool, flag};
  s.timeout_s = 60;
  s.trust = backends::ProcessTrust::agent_tool;
  auto r = backends::run_subprocess(s);
  if (!r) return r.error();
  if (!r->ok()) return make_error(Errc::unavailable, r->describe());
  return r->out;
}

// The line of `--version` that names the release ("Cuda compilation tools, release 13.0, ...",
// "Debian clang version 19.1.7"), else its first.
std::string version_of(const std::string& compiler) {
  auto out = ask(compiler, "--version");
  if (!out) return "does not run: " + one_line(out.error().message);
  std::istringstream in(*out);
  std::string first, line;
  while (std::getline(in, line)) {
    if (first.empty()) first = line;
    if (line.find("release") != std::string::npos) return one_line(line);
  }
  return one_line(first);
}

// The real architectures nvcc builds for ("sm_75 ... sm_120"), from --list-gpu-code.
std::string nvcc_targets(const std::string& nvcc) {
  auto out = ask(nvcc, "--list-gpu-code");
  if (!out) return "sm_*";
  std::vector<std::string> sms;
  std::istringstream in(*out);
  for (std::string w; in >> w;)
    if (w.rfind("sm_", 0) == 0) sms.push_back(w);
  if (sms.empty()) return "sm_*";
  return sms.front() + " ... " + sms.back();
}

// Returns whether some compiler serves the backend.
bool check_compilers(Report& r, const std::string& backend) {
  const bool cuda_needed = backend == "cuda" || backend == "auto";
  const bool hip_needed = backend == "hip";
  bool any = false;
  if (auto nvcc = backends::find_nvcc(); nvcc) {
    any = true;
    r.line(Mark::ok, "nvcc", *nvcc + ": " + version_of(*nvcc) + "; builds " + nvcc_targets(*nvcc));
  } else {
    r.line(cuda_needed && backend == "cuda" ? Mark::fail : Mark::missing, "nvcc",
           "not found: CUDA jobs need the CUDA toolkit (NVIDIA's cuda-toolkit package, or "
           "/usr/local/cuda; KFLEET_NVCC names another)");
  }
  std::string hip_line;
  bool hip = false;
  if (auto hipcc = backends::find_hipcc(); hipcc) {
    hip = true;
    hip_line = *hipcc + ": " + version_of(*hipcc) + "; builds gfx*";
  } else if (auto clang = backends::find_hip_clang(); clang) {
    const std::string hip_path = backends::find_hip_path();
    hip = !hip_path.empty();
    hip_line = *clang + ": " + version_of(*clang) +
               (hip ? "; builds gfx* with the HIP headers in " + hip_path
                    : "; no HIP headers (apt-get install libamdhip64-dev): cannot build HIP jobs");
  } else {
    hip_line = "neither hipcc nor clang-19: HIP jobs need ROCm or apt-get install clang-19 lld-19 libamdhip64-dev";
  }
  any = any || hip;
  r.line(hip ? Mark::ok : hip_needed ? Mark::fail : Mark::missing, "hip", hip_line);
  if (backend == "compile" && !any)
    r.line(Mark::fail, "compilers", "a compile agent needs nvcc or clang-19: it has neither");
  return any;
}

void check_python(Report& r) {
  auto py = backends::discover_python("", 60);
  if (!py) {
    r.line(Mark::missing, "python",
           one_line(py.error().message) + ": Triton and torch jobs need a Python with torch and triton (KFLEET_PYTHON)");
    return;
  }
  std::string text = py->python + " " + py->python_version;
  if (!py->torch_version.empty()) text += ", torch " + py->torch_version;
  if (!py->triton_version.empty()) text += ", triton " + py->triton_version;
  if (py->languages.empty()) {
    std::string why;
    for (const auto& m : py->missing) why += (why.empty() ? "" : "; ") + m;
    r.line(Mark::missing, "python",
           one_line(text + ": records no Python kernel (" + why +
                    "); pip install torch triton into a venv and set KFLEET_PYTHON to its python3"));
    return;
  }
  std::string langs;
  for (const auto& l : py->languages) langs += (langs.empty() ? "" : ", ") + l;
  r.line(Mark::ok, "python", one_line(text + "; records " + langs + " kernels"));
}
#endif

}  // namespace

int run_check(const CheckOptions& o, std::ostream& out) {
  Report r(out);
  const fs::path self = self_executable();
  out << "kfleet-agent --check: " << (self.empty() ? "kfleet-agent" : self.string()) << ", backend "
      << o.backend << "\n";
  const bool real = o.backend != "simulated";
  check_install(r, o, real);
  std::vector<std::string> can;
  if (!real) {
    r.line(Mark::ok, "backend", "simulated: no GPU and no compiler; every result it makes is marked simulated");
    can.push_back("simulated jobs");
  }
#ifdef KFLEET_HAVE_GPU_BACKENDS
  else {
    std::shared_ptr<const backends::SandboxPolicy> policy;
    if (auto p = o.probe_sandbox(); p) {
      policy = *p;
      r.line(Mark::ok, "sandbox",
             "bubblewrap " + policy->bwrap + ", uid " + std::to_string(policy->uid) + ", cgroup " +
                 policy->cgroup_version + ", syscall filter " + policy->seccomp_exec + ": a trial run passed");
    } else {
      const std::string why = one_line(p.error().message);
      r.line(o.unsandboxed ? Mark::missing : Mark::fail, "sandbox",
             why + (o.unsandboxed ? " (--unsandboxed: jobs run without it, and their verdicts say so)" : ""));
      policy = backends::unsandboxed_policy(why);
    }
    const bool compilers = check_compilers(r, o.backend);
    auto backend = o.make_backend(policy);
    if (!backend) {
      r.line(Mark::fail, "backend", one_line(backend.error().message));
    } else if (o.backend == "compile") {
      r.line(Mark::ok, "backend", "compile: no GPU; builds jobs and gates their resources, then kfleetd hands them to GPU agents");
      r.line(Mark::ok, "measuring", "not needed on a compile agent (GPU agents build and run kfleet-measure)");
      if (compilers) can.push_back("builds of CUDA and HIP jobs");
    } else {
      auto gpus = (*backend)->discover();
      const bool have_gpu = gpus && !gpus->empty();
      if (have_gpu) {
        const GpuInfo& g = gpus->front();
        r.line(Mark::ok, "backend",
               (*backend)->name() + ": " + std::to_string(gpus->size()) + " GPU(s): " + g.name + " (" + g.gpu_class +
                   ", " + g.arch + ")" + (g.driver.empty() ? "" : ", driver " + g.driver));
      } else {
        r.line(Mark::fail, "backend",
               (*backend)->name() + ": no GPU: " + (gpus ? std::string("none listed") : one_line(gpus.error().message)));
      }
      // The measuring process: built now into the agent's build cache (the agent adopts it),
      // for the GPU found or the arch named with --arch.
      std::vector<std::string> said;
      (*backend)->prepare([&](const std::string& s) { said.push_back(s); });
      bool built = false;
      for (const auto& s : said) built = built || s.find("ready") != std::string::npos;
      if (built) {
        std::string m = said.back();
        if (auto cut = m.find(", built from"); cut != std::string::npos) m.resize(cut);
        r.line(Mark::ok, "measuring", one_line(m));
      } else {
        r.line(have_gpu ? Mark::fail : Mark::missing, "measuring",
               said.empty() ? "kfleet-measure not built: no GPU arch known and no harness (name one with --arch)"
                            : one_line(said.back()));
      }
      if (have_gpu) check_python(r);
      if (have_gpu && built) can.push_back(o.backend + " jobs on " + gpus->front().gpu_class);
    }
  }
#else
  else {
    r.line(Mark::fail, "backend", "this kfleet-agent was built without the CUDA/HIP backends");
  }
#endif
  check_server(r, o);
  check_token(r, o);
  if (r.failed() || can.empty()) {
    out << "verdict: this agent can take NO job: " << (r.failed() ? r.first_fail() : "nothing it can run") << "\n";
    return 1;
  }
  std::string list;
  for (const auto& c : can) list += (list.empty() ? "" : ", ") + c;
  out << "verdict: this agent can take " << list << "\n";
  return 0;
}

}  // namespace kfleet::agent
