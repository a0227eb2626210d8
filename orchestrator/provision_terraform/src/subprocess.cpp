#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace kfleet::provision {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Terraform handles SIGINT by stopping gracefully and releasing its state lock; SIGKILL after
// this grace period is the last resort (it may leave a lock behind).
constexpr double kInterruptGraceS = 20;

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> all;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) all[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) all[k] = v;
  std::vector<std::string> out;
  out.reserve(all.size());
  for (const auto& [k, v] : all) out.push_back(k + "=" + v);
  return out;
}

double since(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

}  // namespace

Result<std::string> find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    return make_error(Errc::not_found, name + " is not an executable file");
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t pos = 0;
  while (pos <= dirs.size()) {
    std::size_t colon = dirs.find(':', pos);
    std::string dir = dirs.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return make_error(Errc::not_found, name + " was not found in PATH; install it or give its full path");
}

Result<ProcessRun> run_process(const std::vector<std::string>& argv,
                               const std::filesystem::path& cwd,
                               const std::map<std::string, std::string>& env, double budget_s) {
  if (argv.empty()) return make_error(Errc::invalid_argument, "no command to run");
  auto exe = find_executable(argv[0]);
  if (!exe) return exe.error();

  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings = merged_environment(env);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  const std::string dir = cwd.string();

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return make_error(Errc::unavailable, std::string("pipe: ") + std::strerror(errno));
  }
  const auto t0 = SteadyClock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return make_error(Errc::unavailable, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (::chdir(dir.c_str()) != 0) _exit(126);
    ::execve(exe.value().c_str(), args.data(), envp.data());
    _exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so the group exists before any kill below
  ::close(fds[1]);

  ProcessRun run;
  bool interrupted = false, killed = false;
  SteadyClock::time_point interrupted_at;
  char buf[8192];
  for (;;) {
    double elapsed = since(t0);
    if (!interrupted && elapsed > budget_s) {
      ::kill(-pid, SIGINT);
      interrupted = true;
      run.timed_out = true;
      interrupted_at = SteadyClock::now();
    }
    if (interrupted && !killed && since(interrupted_at) > kInterruptGraceS) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = ::poll(&p, 1, 200);
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n > 0) {
        run.output.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) break;  // every writer closed: the child (and its children) are done
      if (errno != EINTR && errno != EAGAIN) break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.seconds = since(t0);
  if (run.exit_code == 127 && run.output.empty()) {
    return make_error(Errc::unavailable, "could not execute " + exe.value());
  }
  return run;
}

}  // namespace kfleet::provision
