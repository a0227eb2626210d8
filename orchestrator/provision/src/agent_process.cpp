#include "agent_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kfleet/common/secret.hpp"


namespace kfleet::provision::detail {

Result<int> spawn_in_group(const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) std::abort();  // callers always name the program
  if (::access(argv[0].c_str(), X_OK) != 0) {
    return make_error(Errc::invalid_argument,
                      "cannot run agent binary '" + argv[0] + "': " + std::strerror(errno) +
                          " (set agent_binary in the simulated cloud config to kfleet-agent's path)");
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  // Its own group, so one kill(-pid) reaches the agent and everything it started.
  posix_spawnattr_setpgroup(&attr, 0);
  // The orchestrator may block or ignore signals; an agent must start with defaults.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  // The agent gets its enrolment token from a 0600 file; none of kfleetd's own secrets (its
  // admin token, the database password, cloud keys) go with it, since the agent runs the
  // submitters' code.
  const std::vector<std::string> env_kv = environment_without_secrets();
  std::vector<char*> env;
  for (const auto& kv : env_kv) env.push_back(const_cast<char*>(kv.c_str()));
  env.push_back(nullptr);
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return make_error(Errc::unavailable, "could not start agent '" + argv[0] + "' (log " +
                                             log_path + "): " + std::strerror(rc));
  }
  return static_cast<int>(pid);
}

bool has_exited(int pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return errno == ECHILD;  // not our child any more: gone
  return info.si_pid == pid;
}

void signal_group(int pgid, int sig) {
  if (pgid > 0) ::kill(-pgid, sig);
}

void reap(int pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace kfleet::provision::detail
