// kfleet-agent: one per GPU (--gpu N --host-id H on a multi-GPU host). See
// agent/include/kfleet/agent/agent.hpp.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "check.hpp"
#include "kfleet/agent/agent.hpp"
#ifdef KFLEET_HAVE_GPU_BACKENDS
#include "common/sandbox.hpp"
#endif
#include "kfleet/cli_support/parse.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/common/secret.hpp"

using namespace kfleet;
using namespace kfleet::agent;

namespace {

std::string hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "kfleet-agent";
  return buf;
}

// auto: a real GPU when one is there; otherwise say how to run the no-GPU demo.
// The build cache lives beside the run dirs, not inside one: each run dir is removed when its
// run ends, and a cache there would never be hit again.
// The sandbox: probed once; a host that cannot sandbox runs jobs only with --unsandboxed, and
// then every verdict says so.
struct SandboxChoice {
  bool unsandboxed = false;  // the operator chose to run jobs without it
  unsigned uid = 65534, gid = 65534;
  std::string cgroup_parent;
  std::string seccomp_exec;  // "" = kfleet-seccomp-exec beside this program
  std::uint64_t memory_mib = 0;
  unsigned max_processes = 0;
  std::vector<std::string> hidden;  // the agent's own files: work dir, token and key files
};

#ifdef KFLEET_HAVE_GPU_BACKENDS
backends::SandboxProbeOptions probe_options(const SandboxChoice& c) {
  backends::SandboxProbeOptions o;
  o.uid = c.uid;
  o.gid = c.gid;
  o.cgroup_parent = c.cgroup_parent;
  o.seccomp_exec = c.seccomp_exec;
  o.hidden = c.hidden;
  if (c.memory_mib) o.defaults.memory_bytes = c.memory_mib << 20;
  if (c.max_processes) o.defaults.max_processes = c.max_processes;
  return o;
}

Result<backends::SandboxPolicyPtr> pick_sandbox(const SandboxChoice& c) {
  if (c.unsandboxed) {
    for (int i = 0; i < 3; ++i)
      log::warn("agent", "*** --unsandboxed: jobs run WITHOUT the sandbox (no bubblewrap, uid, "
                         "cgroup or syscall filter), with this agent's uid, network and files; "
                         "every verdict says 'unsandboxed' ***");
    return backends::unsandboxed_policy("--unsandboxed");
  }
  auto p = backends::probe_sandbox(probe_options(c));
  if (p) {
    log::info("agent", "job sandbox: bwrap + uid ", c.uid, ", cgroup ", (*p)->cgroup_version,
              ", memory ", (*p)->defaults.memory_bytes >> 20, " MiB, ",
              (*p)->defaults.max_processes, " processes, syscall filter ", (*p)->seccomp_exec);
    return p;
  }
  return make_error(Errc::unavailable,
                    "this host cannot sandbox jobs: " + p.error().message +
                        ". Fix that, or pass --unsandboxed to run every job's code with this "
                        "agent's privileges (its verdicts then say 'unsandboxed')");
}
#endif

// What the real backends are given beyond the sandbox.
struct BackendChoice {
  std::string kind;
  SimulatedGpuOptions sim;
  bool arch_given = false;  // --arch named: the cuda/hip backend builds for it (no discovery)
  std::string work_dir;
  double busy_wait_s = 60;
  double throttle_pct = -1;
  unsigned gpu = 0;
  std::string problems_dir;
  int reference_timeout_s = 1800;
};

#ifdef KFLEET_HAVE_GPU_BACKENDS
Result<BackendPtr> make_real_backend(const BackendChoice& b, backends::SandboxPolicyPtr policy) {
  std::error_code ec;
  const std::string cache = (std::filesystem::absolute(b.work_dir, ec) / "build-cache").string();
  // What either vendor's backend is told alike.
  auto options = [&](auto o) {
    o.cache_dir = cache;
    o.busy_wait_s = b.busy_wait_s;
    o.throttle_pct = b.throttle_pct;
    o.device = b.gpu;
    o.sandbox = policy;
    o.problems_dir = b.problems_dir;
    if (b.arch_given) o.arch = b.sim.arch;
    return o;
  };
  CudaBackendOptions cuda_opts = options(CudaBackendOptions{});
  cuda_opts.reference_timeout_s = b.reference_timeout_s;
  const HipBackendOptions hip_opts = options(HipBackendOptions{});
  if (b.kind == "compile") {
    CompileBackendOptions o;
    o.cache_dir = cache;
    o.sandbox = policy;
    o.problems_dir = b.problems_dir;
    return make_compile_backend(o);
  }
  if (b.kind == "cuda") return make_cuda_backend(cuda_opts);
  if (b.kind == "hip") return make_hip_backend(hip_opts);
  if (b.kind == "auto") {
    auto cuda = make_cuda_backend(cuda_opts);
    if (auto g = cuda->discover(); g && !g->empty()) return cuda;
    auto hip = make_hip_backend(hip_opts);
    if (auto g = hip->discover(); g && !g->empty()) return hip;
    return make_error(Errc::unavailable,
                      "--backend auto found no NVIDIA GPU (NVML) and no AMD GPU; pass "
                      "--backend simulated for the no-GPU demo");
  }
  return make_error(Errc::invalid_argument, "unknown --backend " + b.kind);
}
#endif

Result<BackendPtr> pick_backend(const BackendChoice& b, const SandboxChoice& sandbox) {
  if (b.kind == "simulated") return make_simulated_backend(b.sim);
#ifdef KFLEET_HAVE_GPU_BACKENDS
  auto policy = pick_sandbox(sandbox);
  if (!policy) return policy.error();
  return make_real_backend(b, *policy);
#else
  (void)sandbox;
  if (b.kind == "cuda" || b.kind == "hip" || b.kind == "auto" || b.kind == "compile")
    return make_error(Errc::unavailable,
                      "this kfleet-agent was built without the CUDA/HIP backends; pass "
                      "--backend simulated for the no-GPU demo");
  return make_error(Errc::invalid_argument, "unknown --backend " + b.kind);
#endif
}

// A token taken from the environment is wiped from it: the value's bytes in the block the agent
// started with (what /proc/<pid>/environ shows) are overwritten, and the variable is removed.
void scrub_environment(const char* name) {
  const std::string prefix = std::string(name) + "=";
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) == 0)
      std::memset(*e + prefix.size(), 0, std::strlen(*e + prefix.size()));
  }
  ::unsetenv(name);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kfleet-agent: runs kfleet jobs on one GPU of this host, leased from kfleetd. "
               "A host with several GPUs runs one agent per GPU (--gpu N, same --host-id), so a "
               "crash or hang on one GPU never stops another GPU's job"};
  std::string server, enrol_token_file, backend_kind = "auto";
  HttpOptions http;
  AgentConfig cfg;
  cfg.name = hostname();
  SimulatedGpuOptions sim;
  double busy_wait_s = 60;
  double throttle_pct = -1;
  std::string problems_dir;
  int reference_timeout_s = 1800;
  bool check = false;
  app.add_option("--server", server,
                 "kfleetd URL, e.g. http://127.0.0.1:8470; several, comma-separated, for a "
                 "leader and its standbys (the agent moves to the one that answers); required");
  app.add_flag("--check", check,
               "say what this agent can and cannot do on this host (GPUs, compilers, the "
               "measuring process, the sandbox, Python, kfleetd and its TLS CA) and what to "
               "install for each missing piece, then exit: 0 when it can take some job, 1 when "
               "none. Give it the flags the agent runs with (the units do, before the agent)");
  // The enrolment token comes from a file (0600) or the environment, never argv.
  app.add_option("--enrol-token-file", enrol_token_file,
                 "file (mode 0600) holding the fleet's enrolment token; $KFLEET_ENROL_TOKEN is "
                 "still read when this is not given, then wiped from the agent's environment");
  app.add_option("--ca-file", http.ca_file,
                 "PEM CA that signed kfleetd's certificate (https:// servers; else the system's)")
      ->envname("KFLEET_CA_FILE");
  app.add_option("--tls-cert", http.client_cert_file,
                 "PEM client certificate, for a kfleetd with --tls-client-ca (mTLS)");
  app.add_option("--tls-key", http.client_key_file, "PEM key of --tls-cert");
  app.add_flag("--insecure", http.insecure,
               "do NOT verify kfleetd's certificate (anyone on the path can read and forge "
               "everything; throwaway test servers only)");
  app.add_option("--name", cfg.name, "agent name")->capture_default_str();
  app.add_option("--region", cfg.region, "region this host is in")->capture_default_str();
  app.add_option("--backend", backend_kind,
                 "simulated | cuda | hip | auto | compile (no GPU: builds and resources gates "
                 "for real, then kfleetd hands each job to a GPU agent)")
      ->check(CLI::IsMember({"simulated", "cuda", "hip", "auto", "compile"}))
      ->capture_default_str();
  app.add_option("--gpu-class", sim.gpu_class, "GPU class of the simulated backend")
      ->capture_default_str();
  auto* arch_opt = app.add_option("--arch", sim.arch,
                                  "GPU arch of the simulated backend; for cuda and hip, the arch to "
                                  "build for instead of the discovered GPU's")
                       ->capture_default_str();
  app.add_option("--provider", cfg.provider, "static | simulated | terraform | gce")
      ->check(CLI::IsMember({"static", "simulated", "terraform", "gce"}))
      ->capture_default_str();
  app.add_option("--instance-id", cfg.instance_id,
                 "the cloud instance id, when provisioned (an enrolment token bound to an instance "
                 "lets in only the agent that names it)");
  app.add_option("--work-dir", cfg.work_dir, "holds the event spool and run dirs")
      ->capture_default_str();
  app.add_option("--max-jobs", cfg.max_jobs, "exit after N jobs (0 = run forever)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--heartbeat-ms", cfg.heartbeat_ms, "override the heartbeat period kfleetd sets")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--problems-dir", problems_dir,
                 "the problem library a job's kernel.problem (NAME@VERSION) is resolved in; "
                 "keep it kfleetd's (a problem missing here is the fleet's failure, not the "
                 "job's). Default: $KFLEET_PROBLEMS_DIR, else the source tree's kernels/problems");
  app.add_option("--gpu-busy-wait", busy_wait_s,
                 "seconds to wait for another process to leave the GPU before refusing to "
                 "benchmark beside it")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--reference-timeout", reference_timeout_s,
                 "seconds recording one of kfleet's PyTorch references (eager, torch.compile with "
                 "max-autotune-no-cudagraphs) may take; past it that comparison is a note in the "
                 "verdict, never the job's failure")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--throttle-pct", throttle_pct,
                 "benchmark throttle filter: drop samples whose SM clock is more than this % "
                 "below the best seen (the harness default is 2; 0 keeps every sample, for GPUs "
                 "whose clocks sag under long kernels)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--gpu", cfg.gpu,
                 "the GPU (index as the backend lists it) this agent serves; its harness and "
                 "profiler see only this GPU (CUDA_VISIBLE_DEVICES=<uuid> / HIP_VISIBLE_DEVICES)")
      ->check(CLI::Range(0, 255))
      ->capture_default_str();
  app.add_option("--host-id", cfg.host_id,
                 "the host this GPU belongs to, the same for every agent of the host; kfleetd "
                 "keeps one job per GPU and runs host-exclusive jobs alone on it (default: none, "
                 "this agent is a host of its own)");
  app.add_option("--sim-gpus", sim.gpus,
                 "GPUs of the simulated backend's host (a simulated 8-GPU host: 8, one agent "
                 "per --gpu)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  SandboxChoice sandbox;
  app.add_flag("--unsandboxed", sandbox.unsandboxed,
               "DANGEROUS: run jobs without the job sandbox (for hosts that cannot sandbox: not "
               "root, no bubblewrap, no cgroup): a job's code then runs with this agent's uid, "
               "network and files, and every verdict from this agent says 'unsandboxed'");
  app.add_option("--sandbox-uid", sandbox.uid,
                 "the unprivileged uid (and gid) a job's processes run as; not the agent's")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--sandbox-memory-mib", sandbox.memory_mib,
                 "memory limit of each job process's cgroup (default 8192)")
      ->check(CLI::PositiveNumber);
  app.add_option("--sandbox-max-processes", sandbox.max_processes,
                 "process limit of each job process's cgroup (default 512)")
      ->check(CLI::PositiveNumber);
  app.add_option("--sandbox-cgroup", sandbox.cgroup_parent,
                 "cgroup under which the job cgroups are made (default: beside this agent's own)");
  app.add_option("--sandbox-seccomp-exec", sandbox.seccomp_exec,
                 "kfleet-seccomp-exec, which installs the sandbox's syscall filter in each job "
                 "process (default: beside this kfleet-agent)");
  // An unknown option is answered with the nearest ones ("did you mean ...?"); exit 2.
  if (auto code = kfleet::cli_support::parse_or_explain(app, argc, argv, std::cout, std::cerr, 2))
    return *code;
  sandbox.gid = sandbox.uid;
  sim.host_id = cfg.host_id.empty() ? cfg.name : cfg.host_id;
  BackendChoice choice{backend_kind, sim, arch_opt->count() > 0, cfg.work_dir, busy_wait_s,
                       throttle_pct, cfg.gpu, problems_dir, reference_timeout_s};
  if (check) {
    CheckOptions co;
    co.backend = backend_kind;
    co.server = server;
    co.http = http;
    co.enrol_token_file = enrol_token_file;
    co.problems_dir = problems_dir;
    co.work_dir = cfg.work_dir;
    co.unsandboxed = sandbox.unsandboxed;
#ifdef KFLEET_HAVE_GPU_BACKENDS
    co.probe_sandbox = [&] { return backends::probe_sandbox(probe_options(sandbox)); };
    co.make_backend = [&](backends::SandboxPolicyPtr p) { return make_real_backend(choice, p); };
#endif
    return run_check(co, std::cout);
  }
  if (server.empty()) {
    std::cerr << "kfleet-agent: --server is required (kfleetd's URL, e.g. https://kfleetd:8470)\n";
    return 2;
  }

  auto enrol_token = secret_from_file_or_env(enrol_token_file, "KFLEET_ENROL_TOKEN",
                                             "enrolment token");
  if (!enrol_token) {
    std::cerr << "kfleet-agent: " << enrol_token.error().message << "\n";
    return 1;
  }
  if (enrol_token_file.empty() && !enrol_token->empty()) {
    scrub_environment("KFLEET_ENROL_TOKEN");
    log::warn("agent", "the enrolment token came from $KFLEET_ENROL_TOKEN: prefer "
                       "--enrol-token-file (a 0600 file); it has been wiped from this process's "
                       "environment");
  }
  if (enrol_token->empty()) {
    std::cerr << "kfleet-agent: the enrolment token is required: --enrol-token-file FILE (mode "
                 "0600) or KFLEET_ENROL_TOKEN\n";
    return 1;
  }
  if (http.insecure)
    log::warn("agent", "--insecure: kfleetd's certificate is NOT verified; anyone on the network "
                       "path can impersonate kfleetd and read this agent's token and jobs");
  if (server.rfind("http://", 0) == 0) {
    const std::string host = server.substr(7, server.find_first_of(":/", 7) - 7);
    if (host != "127.0.0.1" && host != "localhost" && host != "[::1]")
      log::warn("agent", "plain HTTP to ", host,
                ": the tokens and every result travel in clear; use an https:// kfleetd");
  }
  {
    std::error_code ec;
    sandbox.hidden = {std::filesystem::absolute(cfg.work_dir, ec).string()};
    for (const auto& f : {enrol_token_file, http.client_key_file, http.client_cert_file})
      if (!f.empty()) sandbox.hidden.push_back(std::filesystem::absolute(f, ec).string());
    if (!enrol_token_file.empty()) {
      // Its dir too (/etc/kfleet), with whatever else the operator keeps beside the token.
      auto dir = std::filesystem::absolute(enrol_token_file, ec).parent_path();
      if (dir != "/" && dir != "/etc" && dir != "/usr" && dir != "/opt") sandbox.hidden.push_back(dir.string());
    }
  }
  auto backend = pick_backend(choice, sandbox);
  if (!backend) {
    log::error("agent", backend.error().message);
    return 2;
  }

  // Signals are taken by one thread with sigwait, so no handler runs inside library code.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  Agent agent(cfg, make_http_transport(server, *enrol_token, http), std::move(*backend),
              std::make_shared<SystemClock>());
  std::thread signals([&] {
    int sig = 0;
    sigwait(&set, &sig);
    log::info("agent", "signal ", sig, ": stopping");
    agent.request_shutdown();
    if (!agent.busy()) {
      // Idle, most likely inside a lease long-poll: nothing to flush, so do not wait it out.
      log::info("agent", "idle: exiting");
      std::_Exit(0);
    }
    sigwait(&set, &sig);
    log::warn("agent", "second signal: exiting now; unacked events stay spooled");
    std::_Exit(130);
  });
  signals.detach();
  return agent.run();
}
