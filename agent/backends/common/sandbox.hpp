#pragma once
// The sandbox every process the agent starts for a job runs in: compiles of its sources, the
// harness, the profiler, custom steps. A job's code is a stranger on the agent's host, so what
// it can reach is decided here, by construction, not by rules against known tricks:
//   - bubblewrap (run by the root agent, no user namespace) gives it its own PID, mount, IPC,
//     UTS and network namespaces: no network at all (not even the host's loopback, where
//     kfleetd may listen), and every process it starts dies with the stage, because the end of
//     the PID namespace's first process kills the rest (a double fork or setsid stays inside);
//   - setpriv then drops it to an unprivileged uid that is not the agent's, with no
//     capabilities (bounding set empty) and no_new_privs;
//   - its file system is the system's programs and libraries read-only, its GPU slot's device
//     nodes, its inputs read-only, its run dir writable, and a private /tmp that disappears
//     with it. The agent's work dir, config, token files, caches and other runs are not there;
//   - a cgroup (v2, or the v1 memory and pids hierarchies) limits its memory and processes;
//   - last, kfleet-seccomp-exec installs a syscall filter (seccomp_filter.hpp) and execs the
//     job's program: no ptrace, mounts, BPF, kexec, modules, keyrings, userfaultfd, perf events
//     (but in the profiler) or new namespaces. The agent names each denied call in the log.
// See docs/sandbox.md for the threat model.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet::backends {

struct SandboxLimits {
  std::uint64_t memory_bytes = 0;  // 0 = the policy's default
  unsigned max_processes = 0;      // 0 = the policy's default
};

// What one job process may reach. Paths are absolute (made so when not) and appear at the same
// path inside the sandbox.
struct SandboxSpec {
  std::vector<std::string> writable;  // its run dir: everything it may write outside /tmp
  std::vector<std::string> readable;  // its inputs: harness sources, its binary, the objects
  std::vector<std::string> devices;   // its GPU slot's device nodes (/dev/nvidia0, ...)
  SandboxLimits limits;
  // perf_event_open passes the syscall filter: the profiler's process (ncu, rocprofv3).
  bool allow_perf_events = false;
};

enum class SandboxMode {
  isolated,     // bubblewrap + an unprivileged uid + a cgroup
  unsandboxed,  // the host cannot sandbox and the operator said run anyway: verdicts say so
};

// The agent's sandbox, decided once at startup (probe_sandbox) and shared by every backend.
struct SandboxPolicy {
  SandboxMode mode = SandboxMode::isolated;
  std::string bwrap, setpriv;  // absolute paths
  std::string seccomp_exec;    // kfleet-seccomp-exec, absolute: installs the syscall filter
  unsigned uid = 65534, gid = 65534;
  // The agent's own paths (work dir, token files, config dir): hidden wherever they would
  // otherwise show through the read-only system view.
  std::vector<std::string> hidden;
  // cgroup: "v2" (dir = the parent of the per-process cgroups) or "v1" (memory and pids dirs).
  std::string cgroup_version;
  std::string cgroup_v2_dir, cgroup_v1_memory_dir, cgroup_v1_pids_dir;
  SandboxLimits defaults{8ull << 30, 512};
  std::string why_unsandboxed;  // mode == unsandboxed: what the probe found

  bool isolated() const { return mode == SandboxMode::isolated; }
};
using SandboxPolicyPtr = std::shared_ptr<const SandboxPolicy>;

struct SandboxProbeOptions {
  std::string bwrap;   // "" = bwrap on PATH
  std::string seccomp_exec;  // "" = kfleet-seccomp-exec beside this program (/proc/self/exe)
  unsigned uid = 65534, gid = 65534;
  std::vector<std::string> hidden;
  std::string cgroup_parent;  // "" = /sys/fs/cgroup/kfleet-sandbox (v2) or .../<ctl>/kfleet-sandbox
  SandboxLimits defaults{8ull << 30, 512};
};

// Checks that this host can sandbox (root, bwrap, setpriv, kfleet-seccomp-exec, a writable
// cgroup with memory and pids, and a trial run that comes out as the unprivileged uid under the
// syscall filter, a denied call getting EPERM and its name reaching the agent) and returns the
// policy, or an error that says what is missing and how to fix it.
Result<SandboxPolicyPtr> probe_sandbox(const SandboxProbeOptions& o);

// The policy of an agent whose operator chose to run without a sandbox: `why` is the probe's
// error, repeated in the agent's log and on every verdict ("unsandboxed").
SandboxPolicyPtr unsandboxed_policy(const std::string& why);

// bwrap's command line for argv under `policy` and `spec`, with `cwd` as the working directory:
// bwrap -- setpriv -- kfleet-seccomp-exec -- argv. `notify_fd` is the socket (kept open in the
// child) on which kfleet-seccomp-exec sends the filter's listener; -1: denied calls get EPERM
// with nothing logged.
std::vector<std::string> sandbox_argv(const SandboxPolicy& policy, const SandboxSpec& spec,
                                      const std::string& cwd, const std::vector<std::string>& argv,
                                      int notify_fd = -1);

// A job's environment is this fixed list, never the agent's: the agent's variables (its tokens,
// its server's URL, a cloud's credentials) do not reach it. `extra` is what the backend sets
// (the GPU pin, KFLEET_GPU_ARCH); `home` its HOME (its run dir).
std::vector<std::string> job_environment(const std::vector<std::pair<std::string, std::string>>& extra,
                                         const std::string& home);

// One process's cgroup: made with the limits before the process starts, and on destruction
// every process still in it is killed and the cgroup removed.
class JobCgroup {
 public:
  static Result<std::unique_ptr<JobCgroup>> create(const SandboxPolicy& policy,
                                                   const SandboxLimits& limits);
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;
  // The cgroup.procs files a child writes "0" to before exec, so that it and everything it
  // starts are inside from the first instruction.
  const std::vector<std::string>& procs_files() const { return procs_; }
  // Whether the memory limit was hit (the kernel's OOM killer ended a process).
  bool memory_limit_hit() const;
  // Whether the process limit refused a fork or a thread (pids.events' "max" count): the
  // process that asked then failed or aborted on its own, and its reason should say why.
  bool process_limit_hit() const;

 private:
  JobCgroup() = default;
  std::vector<std::string> dirs_, procs_;
  std::string oom_events_, v1_failcnt_, pids_events_;
};

// The GPU device nodes of one slot that exist on this host: NVIDIA's /dev/nvidia<minor>,
// /dev/nvidiactl and the UVM nodes, or AMD's /dev/kfd and /dev/dri/renderD<minor> (the render
// minor, 128 + n).
std::vector<std::string> gpu_slot_devices(const std::string& vendor, unsigned minor);

}  // namespace kfleet::backends
