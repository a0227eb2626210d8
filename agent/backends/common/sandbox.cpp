#include "common/sandbox.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "common/seccomp_filter.hpp"
#include "common/subprocess.hpp"
#include "kfleet/common/install_layout.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;
namespace {

std::string absolute(const std::string& p) {
  std::error_code ec;
  auto a = fs::absolute(p, ec);
  return (ec ? fs::path(p) : a).lexically_normal().string();
}

bool under(const std::string& path, const std::string& dir) {
  if (path == dir) return true;
  const std::string d = dir.ends_with('/') ? dir : dir + "/";
  return path.rfind(d, 0) == 0;
}

std::string read_text(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<void> write_text(const std::string& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  out.flush();
  if (!out) {
    return make_error(Errc::unavailable,
                      "cannot write '" + text + "' to " + p + ": " + std::strerror(errno));
  }
  return {};
}

// The system's programs and libraries, which a job sees read-only. /sys is read-only too (CUDA
// and the harness read the GPU's topology there); /proc is the sandbox's own.
const char* const kSystemTrees[] = {"/usr", "/etc", "/opt", "/sys"};
const char* const kSystemLinks[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

// This process's cgroup path in the hierarchy named `controller` ("" = v2).
std::string own_cgroup(const std::string& controller) {
  std::istringstream in(read_text("/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controller.empty() ? line.rfind("0::", 0) == 0 : ("," + ctls + ",").find("," + controller + ",") != std::string::npos)
      return path;
  }
  return "/";
}

Result<void> make_dir(const std::string& d) {
  std::error_code ec;
  fs::create_directories(d, ec);
  if (ec) return make_error(Errc::unavailable, "cannot create cgroup " + d + ": " + ec.message());
  return {};
}

bool has_words(const std::string& text, std::initializer_list<const char*> words) {
  std::string padded = " " + text + " ";
  for (char& c : padded)
    if (c == '\n') c = ' ';
  for (const char* w : words)
    if (padded.find(std::string(" ") + w + " ") == std::string::npos) return false;
  return true;
}

// cgroup v2: a parent whose children get the memory and pids controllers. First a cgroup of its
// own under the root (whose controllers every host enables for its children); failing that,
// one under the agent's own cgroup (a systemd service with Delegate=yes), which v2 allows only
// once the agent has moved itself into a leaf, since no process may sit beside controlled
// children.
Result<std::string> enable_controllers(const std::string& parent) {
  if (auto m = make_dir(parent); !m) return m.error();
  if (!has_words(read_text(parent + "/cgroup.controllers"), {"memory", "pids"}))
    return make_error(Errc::unavailable, parent + " has no memory and pids controllers (" +
                                             fs::path(parent).parent_path().string() +
                                             "/cgroup.subtree_control needs +memory +pids)");
  if (auto w = write_text(parent + "/cgroup.subtree_control", "+memory +pids"); !w) return w.error();
  return parent;
}

Result<std::string> setup_v2(const std::string& requested) {
  const std::string root = "/sys/fs/cgroup";
  if (!requested.empty())
    return enable_controllers(requested.front() == '/' && requested.rfind(root, 0) == 0 ? requested : root + "/" + requested);
  auto top = enable_controllers(root + "/kfleet-sandbox");
  if (top) return top;
  const std::string own = own_cgroup("");
  if (own == "/") return top.error();
  const std::string mine = root + own;
  if (!has_words(read_text(mine + "/cgroup.subtree_control"), {"memory", "pids"})) {
    if (auto m = make_dir(mine + "/kfleet-agent"); !m) return m.error();
    if (auto w = write_text(mine + "/kfleet-agent/cgroup.procs", std::to_string(::getpid())); !w)
      return w.error();
    if (auto w = write_text(mine + "/cgroup.subtree_control", "+memory +pids"); !w)
      return make_error(Errc::unavailable,
                        top.error().message + "; and under the agent's own cgroup: " +
                            w.error().message + " (run the agent with systemd's Delegate=yes)");
  }
  return enable_controllers(mine + "/kfleet-sandbox");
}

// The job cgroups an agent killed with -9 left behind (its processes died with it, through
// bwrap's --die-with-parent): emptied and removed when an agent next starts.
void remove_orphan_cgroups(const std::string& parent) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("job-", 0) != 0 || !e.is_directory(ec)) continue;
    const std::string pid = name.substr(4, name.find('-', 4) - 4);
    if (pid.empty() || fs::exists("/proc/" + pid, ec)) continue;  // its agent still runs
    std::istringstream in(read_text(e.path().string() + "/cgroup.procs"));
    for (pid_t p; in >> p;) ::kill(p, SIGKILL);
    ::rmdir(e.path().c_str());
  }
}

std::atomic<unsigned> cgroup_serial{0};

}  // namespace

std::vector<std::string> sandbox_argv(const SandboxPolicy& policy, const SandboxSpec& spec,
                                      const std::string& cwd, const std::vector<std::string>& argv,
                                      int notify_fd) {
  std::vector<std::string> a = {policy.bwrap,        "--die-with-parent", "--new-session",
                                "--unshare-pid",     "--unshare-ipc",     "--unshare-net",
                                "--unshare-uts",     "--unshare-cgroup-try", "--hostname",
                                "kfleet-job"};
  std::vector<std::string> ro_roots;
  std::error_code ec;
  for (const char* d : kSystemTrees) {
    if (!fs::is_directory(d, ec)) continue;
    a.insert(a.end(), {"--ro-bind", d, d});
    ro_roots.push_back(d);
  }
  for (const char* d : kSystemLinks) {
    if (fs::is_symlink(d, ec)) {
      a.insert(a.end(), {"--symlink", fs::read_symlink(d, ec).string(), d});
    } else if (fs::is_directory(d, ec)) {
      a.insert(a.end(), {"--ro-bind", d, d});
      ro_roots.push_back(d);
    }
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"});

  // The agent's own paths, where the read-only system view would show them: an empty tmpfs
  // over a dir, /dev/null over a file. Elsewhere (/var, /root, /home, /srv, /tmp) they are not
  // mounted at all.
  std::vector<std::string> masked;
  for (const auto& h0 : policy.hidden) {
    const std::string h = absolute(h0);
    bool visible = false;
    for (const auto& r : ro_roots) visible = visible || under(h, r);
    if (!visible || !fs::exists(fs::symlink_status(h, ec))) continue;
    if (fs::is_directory(h, ec)) {
      a.insert(a.end(), {"--tmpfs", h});
      masked.push_back(h);
    } else {
      a.insert(a.end(), {"--ro-bind", "/dev/null", h});
    }
  }
  // Mount points outside the read-only trees are made 0755, so the unprivileged uid can reach
  // the paths given to it (bwrap would make them 0700 for root).
  std::vector<std::string> made;
  auto parents = [&](const std::string& p) {
    std::vector<std::string> chain;
    for (fs::path q = fs::path(p).parent_path(); q != q.root_path() && !q.empty(); q = q.parent_path())
      chain.push_back(q.string());
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      bool in_ro = false;
      for (const auto& r : ro_roots) in_ro = in_ro || under(*it, r);
      bool in_mask = false;
      for (const auto& m : masked) in_mask = in_mask || under(*it, m);
      if ((in_ro && !in_mask) || *it == "/tmp") continue;
      if (std::find(made.begin(), made.end(), *it) != made.end()) continue;
      made.push_back(*it);
      a.insert(a.end(), {"--perms", "0755", "--dir", *it});
    }
  };
  // Inputs first, then the writable dirs: a run dir inside an input's tree (a profiler
  // installed beside the work dir) stays writable; an input inside the run dir needs no bind.
  std::vector<std::string> writable;
  for (const auto& w0 : spec.writable) {
    const std::string w = absolute(w0);
    if (fs::is_directory(w, ec)) writable.push_back(w);
  }
  // The filter's helper is kfleet's, not the job's: read-only, like the job's inputs.
  std::vector<std::string> readable = spec.readable;
  if (!policy.seccomp_exec.empty()) readable.push_back(policy.seccomp_exec);
  for (const auto& r0 : readable) {
    const std::string r = absolute(r0);
    // Already there: inside its writable dir, or in the read-only system view (where it may
    // be a symlink, /usr/local/cuda, that cannot be mounted over).
    bool inside = false;
    for (const auto& w : writable) inside = inside || under(r, w);
    bool in_ro = false, in_mask = false;
    for (const auto& root : ro_roots) in_ro = in_ro || under(r, root);
    for (const auto& m : masked) in_mask = in_mask || under(r, m);
    if (inside || (in_ro && !in_mask) || !fs::exists(r, ec)) continue;
    parents(r);
    a.insert(a.end(), {"--ro-bind", r, r});
  }
  for (const auto& w : writable) {
    parents(w);
    a.insert(a.end(), {"--bind", w, w});
  }
  for (const auto& d : spec.devices) {
    if (!fs::exists(d, ec)) continue;
    parents(d);
    a.insert(a.end(), {"--dev-bind", d, d});
  }
  a.insert(a.end(), {"--chdir", cwd.empty() ? (writable.empty() ? "/tmp" : writable.front()) : absolute(cwd)});
  // The device nodes' groups (AMD's /dev/kfd and renderD are 0660 root:render) as its only
  // supplementary groups, so it can open its GPU and nothing more; never root's group.
  std::string groups;
  for (const auto& d : spec.devices) {
    struct stat st {};
    if (::stat(d.c_str(), &st) != 0 || st.st_gid == 0 || !(st.st_mode & S_IRGRP)) continue;
    const std::string g = std::to_string(st.st_gid);
    if (("," + groups + ",").find("," + g + ",") == std::string::npos) groups += (groups.empty() ? "" : ",") + g;
  }
  a.insert(a.end(), {"--", policy.setpriv, "--reuid=" + std::to_string(policy.uid),
                     "--regid=" + std::to_string(policy.gid),
                     groups.empty() ? "--clear-groups" : "--groups=" + groups,
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"});
  // Last, under no_new_privs, the syscall filter; then the job's program.
  a.push_back(policy.seccomp_exec);
  if (notify_fd >= 0) a.push_back("--notify-fd=" + std::to_string(notify_fd));
  if (spec.allow_perf_events) a.push_back("--allow-perf-events");
  a.push_back("--");
  a.insert(a.end(), argv.begin(), argv.end());
  return a;
}

std::vector<std::string> job_environment(const std::vector<std::pair<std::string, std::string>>& extra,
                                         const std::string& home) {
  // What compilers, runtimes and profilers need to find themselves; nothing else of the agent's.
  static const char* const kInherited[] = {"PATH",      "LD_LIBRARY_PATH", "LANG",     "LC_ALL",
                                           "TZ",        "CUDA_HOME",       "CUDA_PATH", "ROCM_PATH",
                                           "HIP_PATH",  "HIP_PLATFORM",    "HIP_CLANG_PATH"};
  std::map<std::string, std::string> env;
  env["PATH"] = "/usr/local/cuda/bin:/opt/rocm/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const char* name : kInherited)
    if (const char* v = std::getenv(name); v && *v) env[name] = v;
  env["HOME"] = home.empty() ? "/tmp" : home;
  env["TMPDIR"] = "/tmp";
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

Result<std::unique_ptr<JobCgroup>> JobCgroup::create(const SandboxPolicy& policy,
                                                     const SandboxLimits& limits) {
  std::unique_ptr<JobCgroup> cg(new JobCgroup());
  const std::string name = "job-" + std::to_string(::getpid()) + "-" + std::to_string(++cgroup_serial);
  const std::uint64_t mem = limits.memory_bytes ? limits.memory_bytes : policy.defaults.memory_bytes;
  const unsigned pids = limits.max_processes ? limits.max_processes : policy.defaults.max_processes;
  auto dir = [&](const std::string& parent) -> Result<std::string> {
    std::string d = parent + "/" + name;
    if (::mkdir(d.c_str(), 0755) != 0)
      return make_error(Errc::unavailable, "cannot create cgroup " + d + ": " + std::strerror(errno));
    cg->dirs_.push_back(d);
    cg->procs_.push_back(d + "/cgroup.procs");
    return d;
  };
  if (policy.cgroup_version == "v2") {
    auto d = dir(policy.cgroup_v2_dir);
    if (!d) return d.error();
    if (auto w = write_text(*d + "/memory.max", std::to_string(mem)); !w) return w.error();
    (void)write_text(*d + "/memory.swap.max", "0");  // absent without swap accounting
    if (auto w = write_text(*d + "/pids.max", std::to_string(pids)); !w) return w.error();
    cg->oom_events_ = *d + "/memory.events";
    cg->pids_events_ = *d + "/pids.events";
  } else if (policy.cgroup_version == "v1") {
    auto m = dir(policy.cgroup_v1_memory_dir);
    if (!m) return m.error();
    if (auto w = write_text(*m + "/memory.limit_in_bytes", std::to_string(mem)); !w) return w.error();
    // Memory plus swap, where swap is accounted: a job over its limit is killed, not swapped.
    if (fs::exists(*m + "/memory.memsw.limit_in_bytes"))
      (void)write_text(*m + "/memory.memsw.limit_in_bytes", std::to_string(mem));
    cg->oom_events_ = *m + "/memory.oom_control";
    auto p = dir(policy.cgroup_v1_pids_dir);
    if (!p) return p.error();
    if (auto w = write_text(*p + "/pids.max", std::to_string(pids)); !w) return w.error();
    cg->pids_events_ = *p + "/pids.events";
  } else {
    return make_error(Errc::unavailable, "no cgroup hierarchy for the sandbox's limits");
  }
  return cg;
}

bool JobCgroup::memory_limit_hit() const {
  if (oom_events_.empty()) return false;
  std::istringstream in(read_text(oom_events_));
  std::string key;
  long long value = 0;
  while (in >> key >> value)
    if (key == "oom_kill" && value > 0) return true;
  return false;
}

bool JobCgroup::process_limit_hit() const {
  if (pids_events_.empty()) return false;
  std::istringstream in(read_text(pids_events_));
  std::string key;
  long long value = 0;
  while (in >> key >> value)
    if (key == "max" && value > 0) return true;
  return false;
}

JobCgroup::~JobCgroup() {
  // The PID namespace has ended with its first process; anything still here (a process caught
  // between fork and the namespace's end) is killed, then the cgroup goes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (const auto& d : dirs_) {
    while (::rmdir(d.c_str()) != 0 && errno == EBUSY &&
           std::chrono::steady_clock::now() < deadline) {
      if (fs::exists(d + "/cgroup.kill")) {
        (void)write_text(d + "/cgroup.kill", "1");
      } else {
        std::istringstream in(read_text(d + "/cgroup.procs"));
        for (pid_t p; in >> p;) ::kill(p, SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

std::vector<std::string> gpu_slot_devices(const std::string& vendor, unsigned minor) {
  std::vector<std::string> want;
  if (vendor == "amd") {
    want = {"/dev/kfd", "/dev/dri/renderD" + std::to_string(minor)};
  } else {
    want = {"/dev/nvidia" + std::to_string(minor), "/dev/nvidiactl", "/dev/nvidia-uvm",
            "/dev/nvidia-uvm-tools"};
  }
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& d : want)
    if (fs::exists(d, ec)) out.push_back(d);
  return out;
}

SandboxPolicyPtr unsandboxed_policy(const std::string& why) {
  auto p = std::make_shared<SandboxPolicy>();
  p->mode = SandboxMode::unsandboxed;
  p->why_unsandboxed = why;
  return p;
}

Result<SandboxPolicyPtr> probe_sandbox(const SandboxProbeOptions& o) {
  auto p = std::make_shared<SandboxPolicy>();
  p->uid = o.uid;
  p->gid = o.gid;
  p->defaults = o.defaults;
  for (const auto& h : o.hidden) p->hidden.push_back(absolute(h));
  if (::geteuid() != 0) {
    return make_error(Errc::unavailable,
                      "the job sandbox needs the agent to run as root: it starts each job's "
                      "processes as uid " + std::to_string(o.uid) +
                          ", which only root can do (run kfleet-agent as root, as its systemd "
                          "unit does)");
  }
  if (o.uid == 0 || o.gid == 0)
    return make_error(Errc::invalid_argument, "the sandbox uid and gid must not be root's (0)");
  p->bwrap = find_program(o.bwrap.empty() ? "bwrap" : o.bwrap);
  if (p->bwrap.empty())
    return make_error(Errc::unavailable,
                      "bubblewrap (bwrap) not found: install it (apt-get install bubblewrap; "
                      "scripts/install-deps.sh does)");
  p->setpriv = find_program("setpriv");
  if (p->setpriv.empty())
    return make_error(Errc::unavailable, "setpriv not found: install util-linux");
  if (!seccomp::supported())
    return make_error(Errc::unavailable,
                      "the sandbox's syscall filter has no program for this architecture "
                      "(x86_64 and aarch64 only)");
  {
    // Beside the agent (a build tree), else lib/kfleet/ of its prefix (the packages).
    std::string helper = o.seccomp_exec;
    if (helper.empty()) helper = installed_helper("kfleet-seccomp-exec").string();
    if (!helper.empty()) helper = absolute(helper);
    if (!helper.empty()) p->seccomp_exec = find_program(helper);
    if (p->seccomp_exec.empty())
      return make_error(Errc::unavailable,
                        "kfleet-seccomp-exec, which installs the sandbox's syscall filter, is not " +
                            (helper.empty() ? "beside this kfleet-agent nor in lib/kfleet/ of its prefix"
                                            : "at " + helper) +
                            ": install the kfleet-agent package (it puts it in /usr/lib/kfleet), keep "
                            "it beside kfleet-agent, or name it with --sandbox-seccomp-exec PATH");
  }
  std::error_code ec;
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers", ec) && !fs::exists("/sys/fs/cgroup/memory", ec)) {
    auto d = setup_v2(o.cgroup_parent);
    if (!d) return make_error(Errc::unavailable, "cgroup v2: " + d.error().message);
    p->cgroup_version = "v2";
    p->cgroup_v2_dir = *d;
    remove_orphan_cgroups(*d);
  } else if (fs::exists("/sys/fs/cgroup/memory/cgroup.procs", ec) &&
             fs::exists("/sys/fs/cgroup/pids/cgroup.procs", ec)) {
    // Nested under the agent's own cgroups, so the jobs count against whatever limits the agent.
    auto parent = [&](const char* ctl) {
      return o.cgroup_parent.empty()
                 ? "/sys/fs/cgroup/" + std::string(ctl) + own_cgroup(ctl) + "/kfleet-sandbox"
                 : "/sys/fs/cgroup/" + std::string(ctl) + "/" + o.cgroup_parent;
    };
    p->cgroup_v1_memory_dir = fs::path(parent("memory")).lexically_normal().string();
    p->cgroup_v1_pids_dir = fs::path(parent("pids")).lexically_normal().string();
    for (const auto& d : {p->cgroup_v1_memory_dir, p->cgroup_v1_pids_dir})
      if (auto m = make_dir(d); !m) return make_error(Errc::unavailable, "cgroup v1: " + m.error().message);
    p->cgroup_version = "v1";
    remove_orphan_cgroups(p->cgroup_v1_memory_dir);
    remove_orphan_cgroups(p->cgroup_v1_pids_dir);
  } else {
    return make_error(Errc::unavailable,
                      "no cgroup hierarchy with memory and pids controllers under /sys/fs/cgroup: "
                      "the sandbox cannot limit a job's memory and processes");
  }

  // A trial run: the real path, as a job's process would take it. kfleet-seccomp-exec --check,
  // under the filter it installed, says who it runs as, the Seccomp mode of /proc/self/status,
  // and what unshare(CLONE_NEWUSER) and clone3 got: EPERM, from the agent that must have
  // named the call, and ENOSYS.
  char tmpl[] = "/tmp/kfleet-sandbox-probe-XXXXXX";
  if (!::mkdtemp(tmpl))
    return make_error(Errc::unavailable, std::string("mkdtemp: ") + std::strerror(errno));
  SubprocessSpec sp;
  sp.argv = {p->seccomp_exec, "--check"};
  sp.timeout_s = 30;
  sp.sandbox_policy = p;
  sp.sandbox.writable = {tmpl};
  auto r = run_subprocess(sp);
  fs::remove_all(tmpl, ec);
  if (!r) return make_error(Errc::unavailable, "a trial sandboxed run failed: " + r.error().message);
  const std::string trial = "a trial sandboxed run (bwrap + setpriv + kfleet-seccomp-exec) ";
  if (!r->ok())
    return make_error(Errc::unavailable, trial + r->describe() + ": " + tail_lines(r->err + r->out, 3));
  std::map<std::string, std::string> got;
  {
    std::istringstream in(r->out);
    for (std::string line; std::getline(in, line);)
      if (auto eq = line.find('='); eq != std::string::npos) got[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (got["uid"] != std::to_string(o.uid))
    return make_error(Errc::unavailable, trial + "ran as uid '" + got["uid"] + "', not " +
                                             std::to_string(o.uid) + ": " + tail_lines(r->err + r->out, 4));
  if (got["seccomp"] != "2")
    return make_error(Errc::unavailable, trial + "ran without the syscall filter (Seccomp: " +
                                             got["seccomp"] + " in /proc/self/status, not 2)");
  if (got["unshare"] != "EPERM")
    return make_error(Errc::unavailable, trial + "got " + got["unshare"] +
                                             " from unshare(CLONE_NEWUSER), which the filter denies with EPERM");
  if (std::find(r->denied.begin(), r->denied.end(), "unshare with CLONE_NEWUSER") == r->denied.end())
    return make_error(Errc::unavailable,
                      trial + "denied unshare(CLONE_NEWUSER) but the agent was not told (seccomp user "
                              "notification needs Linux 5.0 or later): " + tail_lines(r->err, 3));
  if (got.count("clone3") && got["clone3"] != "ENOSYS")
    return make_error(Errc::unavailable, trial + "got " + got["clone3"] + " from clone3, not ENOSYS");
  return SandboxPolicyPtr(p);
}

}  // namespace kfleet::backends
