// Tries what the sandbox's syscall filter denies, and what it must leave alone, and prints one
// line per try: "ptrace: EPERM", "threads: ok". seccomp_gtest runs it inside and outside the
// sandbox.
//   kfleet-seccomp-probe TRY...   (ptrace unshare-user clone-newuser perf clone3 threads fork
//                                  mount bpf keyctl seccomp ptrace-x100 int80 x32)
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/seccomp_filter.hpp"

namespace {

std::string result(long r) {
  if (r >= 0) return "ok";
  switch (errno) {
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EACCES: return "EACCES";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return "errno " + std::to_string(errno);
  }
}

// A raw fork-like syscall: the child leaves at once.
long forkish(long r) {
  if (r == 0) ::_exit(0);
  if (r > 0) ::waitpid(static_cast<pid_t>(r), nullptr, 0);
  return r;
}

std::string attempt(const std::string& what) {
  if (what == "ptrace") return result(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr));
  if (what == "ptrace-x100") {
    std::string r;
    for (int i = 0; i < 100; ++i) r = result(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr));
    return r;
  }
  if (what == "unshare-user") return result(::unshare(CLONE_NEWUSER));
  if (what == "clone-newuser")
    return result(forkish(::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)));
  if (what == "perf") {
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    const long fd = ::syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd >= 0) ::close(static_cast<int>(fd));
    return result(fd);
  }
  if (what == "clone3") {
#ifdef SYS_clone3
    struct {
      unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    } args{};
    args.exit_signal = SIGCHLD;
    return result(forkish(::syscall(SYS_clone3, &args, sizeof args)));
#else
    return "ENOSYS";
#endif
  }
  if (what == "threads") {
    std::vector<std::thread> ts;
    int done[4] = {};
    for (int i = 0; i < 4; ++i) ts.emplace_back([&done, i] { done[i] = 1; });
    for (auto& t : ts) t.join();
    return done[0] + done[1] + done[2] + done[3] == 4 ? "ok" : "lost a thread";
  }
  if (what == "fork") {
    const pid_t p = ::fork();
    if (p == 0) ::_exit(7);
    int st = 0;
    if (p < 0 || ::waitpid(p, &st, 0) != p) return result(-1);
    return WIFEXITED(st) && WEXITSTATUS(st) == 7 ? "ok" : "bad child status";
  }
  // Harmless where it is allowed (root outside the sandbox): no such mount point.
  if (what == "mount") return result(::mount("none", "/nonexistent-kfleet-probe", "tmpfs", 0, nullptr));
  if (what == "bpf") return result(::syscall(SYS_bpf, 0, nullptr, 0));
  if (what == "keyctl") return result(::syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
  if (what == "seccomp") return kfleet::backends::seccomp::own_seccomp_mode();
  if (what == "speculation") {  // the mitigations the kernel applies to this process
    std::string s;
    if (FILE* f = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "Speculation", 11) == 0) {
          line[std::strcspn(line, "\n")] = 0;
          s += std::string(s.empty() ? "" : "; ") + line;
        }
      std::fclose(f);
    }
    return s;
  }
#if defined(__x86_64__)
  if (what == "int80") {  // i386's getpid (20) through the 32-bit entry: a foreign arch
    long r = 20;
    asm volatile("int $0x80" : "+a"(r) : : "memory");
    return "returned " + std::to_string(r);
  }
  if (what == "x32") return result(::syscall(0x40000000L | SYS_getpid)) + " (returned)";
#endif
  return "unknown try";
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string r = attempt(argv[i]);
    std::printf("%s: %s\n", argv[i], r.c_str());
    std::fflush(stdout);
  }
  return 0;
}
