#include "common/subprocess.hpp"

#include <fcntl.h>

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "common/seccomp_supervisor.hpp"
#include "kfleet/common/secret.hpp"

namespace kfleet::backends {
namespace {

using Steady = std::chrono::steady_clock;

double seconds_since(Steady::time_point t0) {
  return std::chrono::duration<double>(Steady::now() - t0).count();
}

// Keeps the tail of a stream within a byte limit and hands complete lines to a callback.
class StreamCapture {
 public:
  StreamCapture(OutputStream which, std::size_t limit,
                const std::function<void(OutputStream, const std::string&)>& on_line)
      : which_(which), limit_(limit), on_line_(on_line) {}

  void append(const char* data, std::size_t n) {
    text_.append(data, n);
    if (text_.size() > 2 * limit_ + 4096) trim();
    if (!on_line_) return;
    pending_.append(data, n);
    std::size_t start = 0, nl;
    while ((nl = pending_.find('\n', start)) != std::string::npos) {
      on_line_(which_, pending_.substr(start, nl - start));
      start = nl + 1;
    }
    pending_.erase(0, start);
    // A child that never prints a newline must not grow this without bound.
    if (pending_.size() > limit_) pending_.erase(0, pending_.size() - limit_);
  }

  // A line of the agent's own about the process (the syscall filter's denials), kept in the
  // captured text on a line of its own; the caller hands it to a callback.
  void add_line(const std::string& line) {
    if (!text_.empty() && text_.back() != '\n') text_ += '\n';
    text_ += line + "\n";
    if (text_.size() > 2 * limit_ + 4096) trim();
  }

  void finish(std::string& text, bool& truncated) {
    if (on_line_ && !pending_.empty()) on_line_(which_, pending_);
    trim();
    text = std::move(text_);
    truncated = truncated_;
  }

 private:
  void trim() {
    if (text_.size() <= limit_) return;
    text_.erase(0, text_.size() - limit_);
    truncated_ = true;
  }
  OutputStream which_;
  std::size_t limit_;
  const std::function<void(OutputStream, const std::string&)>& on_line_;
  std::string text_, pending_;
  bool truncated_ = false;
};

std::vector<std::string> merged_environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  // The agent's own secrets (its enrolment token, from the systemd unit's 0600 agent.env, and
  // any password or cloud key its host put in its environment) stay with it: builds, the
  // harness and custom steps run the submitter's code, and a step that prints its environment
  // would put them in the job's log.
  std::map<std::string, std::string> env;
  for (const std::string& kv : kfleet::environment_without_secrets()) {
    const auto eq = kv.find('=');
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return "signal " + std::to_string(sig);
  }
}

std::string SubprocessResult::describe() const {
  std::ostringstream os;
  if (timed_out) {
    // A process the sandbox killed for memory, or a fork it refused, can leave the rest waiting
    // on it until the time limit: said, so the limit is not blamed on the time alone.
    os << "timed out after " << static_cast<long long>(duration_s + 0.5) << " s";
    if (memory_limit_hit) os << " (a process hit the sandbox's memory limit on the way)";
    else if (process_limit_hit) os << " (the sandbox's process limit refused a new process or thread on the way)";
  } else if (stopped) {
    os << "stopped";
  } else if (signal != 0) {
    os << "killed by " << signal_name(signal);
    if (memory_limit_hit) os << " (the sandbox's memory limit)";
    else if (process_limit_hit) os << " (after the sandbox's process limit refused a new process or thread)";
  } else if (memory_limit_hit) {
    os << "exit code " << exit_code << " (a process hit the sandbox's memory limit)";
  } else if (process_limit_hit) {
    os << "exit code " << exit_code << " (the sandbox's process limit refused a new process or thread)";
  } else {
    os << "exit code " << exit_code;
  }
  return os.str();
}

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  auto executable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (executable(p)) return p;
  }
  return "";
}

std::string tail_lines(const std::string& text, std::size_t n) {
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r')) --end;
  std::size_t pos = end;
  for (std::size_t seen = 0; pos > 0; --pos) {
    if (text[pos - 1] == '\n' && ++seen == n) break;
  }
  return text.substr(pos, end - pos);
}

std::string crash_line(const std::string& err) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= err.size()) {
    std::size_t nl = err.find('\n', start);
    if (nl == std::string::npos) nl = err.size();
    std::string line = err.substr(start, nl - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    std::size_t b = line.find_first_not_of(" \t");
    if (b != std::string::npos) lines.push_back(line.substr(b));
    start = nl + 1;
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->rfind("what():", 0) == 0) {
      std::string what = it->substr(7);
      std::size_t b = what.find_first_not_of(" \t");
      if (b != std::string::npos) return what.substr(b);
    }
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->rfind("frame #", 0) == 0 || it->rfind("Exception raised from", 0) == 0) continue;
    return *it;
  }
  return "";
}

namespace {

// fork + exec for a sandboxed child: unlike posix_spawn it can put the child into its cgroup
// before exec, so bwrap and everything under it start inside the limits. Only async-signal-safe
// calls run between fork and exec.
pid_t spawn_in_cgroup(const std::string& program, std::vector<char*>& argv,
                      std::vector<char*>& envp, int out_fd, int err_fd,
                      const std::vector<std::string>& procs_files, std::vector<int> keep,
                      int& error) {
  std::sort(keep.begin(), keep.end());
  std::vector<const char*> procs;
  for (const auto& p : procs_files) procs.push_back(p.c_str());
  const pid_t pid = ::fork();
  if (pid < 0) {
    error = errno;
    return -1;
  }
  if (pid > 0) return pid;
  ::setpgid(0, 0);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  // None of the agent's descriptors (its connections to kfleetd, its spool) reach the job, but
  // for those the spec passes on purpose.
  unsigned next = 3;
  for (int fd : keep) {
    if (fd < 3) continue;
    if (static_cast<unsigned>(fd) > next) ::close_range(next, static_cast<unsigned>(fd) - 1, 0);
    ::fcntl(fd, F_SETFD, 0);
    next = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(next, ~0U, 0);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (const char* f : procs) {
    int fd = ::open(f, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) {
      static const char msg[] = "kfleet sandbox: cannot join the job's cgroup\n";
      (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
      ::_exit(126);
    }
    ::close(fd);
  }
  if (::chdir("/") != 0) ::_exit(126);
  ::execve(program.c_str(), argv.data(), envp.data());
  static const char msg[] = "kfleet sandbox: cannot run bwrap\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  ::_exit(127);
}

}  // namespace

Result<SubprocessResult> run_subprocess(const SubprocessSpec& spec) {
  if (spec.argv.empty()) return make_error(Errc::invalid_argument, "no command to run");
  const bool job = spec.trust == ProcessTrust::job;
  if (job && !spec.sandbox_policy) {
    return make_error(Errc::internal,
                      "refusing to start '" + spec.argv[0] +
                          "' for a job without its sandbox: a job's process needs a sandbox "
                          "policy (SubprocessSpec::sandbox_policy)");
  }
  const bool isolated = job && spec.sandbox_policy->isolated();
  if (isolated && spec.sandbox_policy->seccomp_exec.empty()) {
    return make_error(Errc::internal, "refusing to start '" + spec.argv[0] +
                                          "' for a job without its syscall filter: the sandbox "
                                          "policy names no kfleet-seccomp-exec");
  }
  std::unique_ptr<JobCgroup> cgroup;
  if (isolated) {
    // The job's uid owns its run dir, and nothing else of the host.
    const auto& pol = *spec.sandbox_policy;
    for (const auto& w : spec.sandbox.writable) {
      std::error_code ec;
      if (::lchown(w.c_str(), pol.uid, pol.gid) != 0)
        return make_error(Errc::unavailable, "sandbox: cannot give " + w + " to the job's uid " +
                                                 std::to_string(pol.uid) + ": " + std::strerror(errno));
      for (auto it = std::filesystem::recursive_directory_iterator(w, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        if (::lchown(it->path().c_str(), pol.uid, pol.gid) != 0)
          return make_error(Errc::unavailable, "sandbox: cannot give " + it->path().string() +
                                                   " to the job's uid " + std::to_string(pol.uid) +
                                                   ": " + std::strerror(errno));
    }
    auto cg = JobCgroup::create(pol, spec.sandbox.limits);
    if (!cg) return make_error(Errc::unavailable, "sandbox: " + cg.error().message);
    cgroup = std::move(*cg);
  }

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return make_error(Errc::unavailable, std::string("pipe: ") + std::strerror(errno));
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return make_error(Errc::unavailable, std::string("pipe: ") + std::strerror(errno));
  }

  // The syscall filter's listener comes back on this socket pair: the child's end goes to
  // kfleet-seccomp-exec (close-on-exec here, kept by that child alone, like pass_fds).
  std::unique_ptr<SeccompSupervisor> supervisor;
  int filter_fd = -1;
  if (isolated) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      const int e = errno;
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
      return make_error(Errc::unavailable, std::string("socketpair: ") + std::strerror(e));
    }
    supervisor = std::make_unique<SeccompSupervisor>(sv[0]);
    filter_fd = sv[1];
  }

  std::string home = spec.sandbox.writable.empty() ? spec.cwd : spec.sandbox.writable.front();
  std::vector<std::string> argv_s =
      isolated ? sandbox_argv(*spec.sandbox_policy, spec.sandbox, spec.cwd, spec.argv, filter_fd)
               : spec.argv;
  std::vector<std::string> env_s = job ? job_environment(spec.env, home) : merged_environment(spec.env);
  auto argv = c_strings(argv_s);
  auto envp = c_strings(env_s);
  // posix_spawnp searches the agent's PATH; honour a PATH given in spec.env as well.
  std::string program = argv_s[0];
  for (const auto& [k, v] : spec.env) {
    if (k == "PATH" && program.find('/') == std::string::npos) {
      std::stringstream ss(v);
      std::string dir;
      while (std::getline(ss, dir, ':')) {
        if (::access((dir + "/" + program).c_str(), X_OK) == 0) {
          program = dir + "/" + program;
          break;
        }
      }
    }
  }

  const auto t0 = Steady::now();
  pid_t pid = -1;
  int rc = 0;
  if (isolated) {
    std::vector<int> keep = spec.pass_fds;
    keep.push_back(filter_fd);
    pid = spawn_in_cgroup(program, argv, envp, out_pipe[1], err_pipe[1], cgroup->procs_files(), keep, rc);
    ::close(filter_fd);
  } else {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    // dup2 onto itself clears close-on-exec in the child alone (POSIX 2024, glibc >= 2.29).
    for (int fd : spec.pass_fds)
      if (fd > 2) posix_spawn_file_actions_adddup2(&fa, fd, fd);
    if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, spec.cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Own process group: a timeout kills the harness and everything it started. Default signal
    // dispositions: the agent may ignore SIGPIPE, a child must not inherit that.
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETSIGMASK);
    rc = ::posix_spawnp(&pid, program.c_str(), &fa, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0 || pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    std::string where = spec.cwd.empty() ? "" : " in " + spec.cwd;
    return make_error(Errc::unavailable, "cannot run '" + spec.argv[0] + "'" + where + ": " +
                                             std::strerror(rc) + " (is it installed and on PATH?)");
  }

  SubprocessResult res;
  StreamCapture cap_out(OutputStream::out, spec.capture_limit, spec.on_line);
  StreamCapture cap_err(OutputStream::err, spec.capture_limit, spec.on_line);
  pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {-1, POLLIN, 0}};
  int open_fds = 2;
  bool reaped = false;
  int status = 0;
  bool term_sent = false;
  Steady::time_point term_at{};
  Steady::time_point reaped_at{};
  char buf[65536];

  // One read from pipe i, which poll said is ready.
  auto read_pipe = [&](int i) {
    ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
    if (r > 0) {
      (i == 0 ? cap_out : cap_err).append(buf, static_cast<std::size_t>(r));
    } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
      ::close(fds[i].fd);
      fds[i].fd = -1;
      --open_fds;
    }
  };
  // A denied call, named: after what the process printed before it, before what it prints
  // about it (the call waits for our answer meanwhile).
  auto denied = [&](const std::string& line) {
    for (int rounds = 0; open_fds > 0 && rounds < 64; ++rounds) {
      pollfd now[2] = {{fds[0].fd, POLLIN, 0}, {fds[1].fd, POLLIN, 0}};
      if (::poll(now, 2, 0) <= 0) break;
      for (int i = 0; i < 2; ++i)
        if (fds[i].fd >= 0 && (now[i].revents & (POLLIN | POLLHUP | POLLERR))) read_pipe(i);
    }
    if (spec.on_denial) spec.on_denial(line);
    else if (spec.on_line) spec.on_line(OutputStream::err, line);
    cap_err.add_line(line);
  };

  while (open_fds > 0 || !reaped) {
    fds[2].fd = supervisor ? supervisor->fd() : -1;
    if (open_fds > 0 || fds[2].fd >= 0) {
      int n = ::poll(fds, 3, 50);
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        read_pipe(i);
      }
      if (n > 0 && fds[2].fd >= 0 && fds[2].revents) supervisor->handle(fds[2].revents, denied);
    } else {
      ::usleep(10 * 1000);  // pipes closed (child closed them); wait for its exit
    }
    if (!reaped) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        reaped = true;
        reaped_at = Steady::now();
        // Descendants left in the group would hold our pipes open forever.
        ::kill(-pid, SIGKILL);
      }
    } else if (open_fds > 0 && seconds_since(reaped_at) > 5) {
      break;  // something outside the group holds the pipes: stop reading
    }
    if (reaped) continue;
    if (!term_sent) {
      bool stop = spec.should_stop && spec.should_stop();
      bool late = spec.timeout_s > 0 && seconds_since(t0) > spec.timeout_s;
      if (stop || late) {
        res.timed_out = late && !stop;
        res.stopped = stop;
        ::kill(-pid, SIGTERM);
        term_sent = true;
        term_at = Steady::now();
      }
    } else if (seconds_since(term_at) > spec.kill_grace_s) {
      ::kill(-pid, SIGKILL);
    }
  }
  for (int i = 0; i < 2; ++i) {  // fds[2] is the supervisor's
    if (fds[i].fd >= 0) ::close(fds[i].fd);
  }
  if (!reaped) ::waitpid(pid, &status, 0);
  res.duration_s = seconds_since(t0);
  if (WIFSIGNALED(status)) {
    res.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    res.exit_code = WEXITSTATUS(status);
    // bwrap reports a child killed by signal N as exit code 128 + N, as a shell does.
    if (isolated && res.exit_code > 128 && res.exit_code < 128 + NSIG) {
      res.signal = res.exit_code - 128;
      res.exit_code = -1;
    }
  }
  if (supervisor) {
    for (const auto& line : supervisor->finish()) denied(line);
    res.denied = supervisor->denied();
    supervisor.reset();
  }
  cap_out.finish(res.out, res.out_truncated);
  cap_err.finish(res.err, res.err_truncated);
  res.unsandboxed = job && !isolated;
  if (cgroup) {
    res.memory_limit_hit = cgroup->memory_limit_hit();
    res.process_limit_hit = cgroup->process_limit_hit();
  }
  return res;
}

}  // namespace kfleet::backends
