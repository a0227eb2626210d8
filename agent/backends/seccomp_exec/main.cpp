// kfleet-seccomp-exec: the last step of the job sandbox (docs/sandbox.md, "The syscall filter").
// bubblewrap runs setpriv, which drops to the job's uid and sets no_new_privs, and setpriv runs
// this: it installs the syscall filter (common/seccomp_filter.hpp), hands the filter's listener
// to the agent over the unix socket the agent passed in, and execs the job's program, which
// then runs, with everything it starts, under the filter.
//
//   kfleet-seccomp-exec [--notify-fd=N] [--allow-perf-events] -- PROGRAM [ARG...]
//   kfleet-seccomp-exec --check     (the sandbox probe's trial: prints what it finds)
//
// Without --notify-fd a denied call gets EPERM from the kernel and nothing is logged.
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/seccomp_filter.hpp"

namespace {

namespace sc = kfleet::backends::seccomp;

[[noreturn]] void fail(const std::string& what, int code = 126) {
  std::fprintf(stderr, "kfleet-seccomp-exec: %s\n", what.c_str());
  std::exit(code);
}

// Installs the filter; returns its listener (notify) or -1.
int install(bool notify, bool allow_perf_events) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    fail(std::string("cannot set no_new_privs: ") + std::strerror(errno));
  sc::FilterOptions o;
  o.notify = notify;
  o.allow_perf_events = allow_perf_events;
  std::vector<sock_filter> prog = sc::build_filter(o);
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  // SPEC_ALLOW: kernels before 5.16 would otherwise force the Speculative Store Bypass and
  // STIBP mitigations on every filtered process (spec_store_bypass_disable=seccomp), slowing
  // a benchmark's host code against an unfiltered run. They guard a process against itself
  // (a JavaScript engine's sandbox), not the host against the job.
  unsigned long flags = SECCOMP_FILTER_FLAG_SPEC_ALLOW;
  if (notify) flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
  const long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
  if (fd < 0)
    fail(std::string("cannot install the syscall filter: ") + std::strerror(errno) +
         (errno == EINVAL && notify ? " (seccomp user notification needs Linux 5.0 or later)" : ""));
  return notify ? static_cast<int>(fd) : -1;
}

// The listener goes to the agent, which alone answers the job's denied calls; this process
// keeps no copy, so the job's program cannot answer them itself.
void hand_over(int socket_fd, int listener) {
  kfleet::backends::seccomp::ListenerMessage m;
  m.byte = 'L';
  msghdr& msg = m.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &listener, sizeof(int));
  ssize_t n;
  do {
    n = ::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != 1) fail(std::string("cannot hand the filter's listener to the agent: ") + std::strerror(errno));
  ::close(listener);
  ::close(socket_fd);
}

const char* errno_name(int e) {
  switch (e) {
    case 0: return "ok";
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case EACCES: return "EACCES";
    default: return "other";
  }
}

// The sandbox probe's trial: who it runs as, whether a filter is in force, and that a denied
// call and clone3 get what they should.
int check() {
  std::printf("uid=%u\n", static_cast<unsigned>(::getuid()));
  std::printf("seccomp=%s\n", kfleet::backends::seccomp::own_seccomp_mode().c_str());
  int r = ::unshare(CLONE_NEWUSER);
  std::printf("unshare=%s\n", errno_name(r == 0 ? 0 : errno));
#ifdef SYS_clone3
  r = static_cast<int>(::syscall(SYS_clone3, nullptr, 0));
  std::printf("clone3=%s\n", errno_name(r == 0 ? 0 : errno));
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int notify_fd = -1;
  bool allow_perf = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--check") return check();
    if (a == "--allow-perf-events") {
      allow_perf = true;
    } else if (a.starts_with("--notify-fd=")) {
      char* end = nullptr;
      const long v = std::strtol(argv[i] + 12, &end, 10);
      if (!end || *end || v < 3 || v > 1 << 20) fail("bad --notify-fd: " + std::string(a), 2);
      notify_fd = static_cast<int>(v);
    } else {
      fail("unknown option '" + std::string(a) +
               "'; usage: kfleet-seccomp-exec [--notify-fd=N] [--allow-perf-events] -- PROGRAM [ARG...]",
           2);
    }
  }
  if (i >= argc) fail("no program to run", 2);
  if (notify_fd >= 0) {
    struct stat st {};
    if (::fstat(notify_fd, &st) != 0 || !S_ISSOCK(st.st_mode))
      fail("--notify-fd=" + std::to_string(notify_fd) + " is not an open socket");
  }
  const int listener = install(notify_fd >= 0, allow_perf);
  if (notify_fd >= 0) hand_over(notify_fd, listener);
  ::execvp(argv[i], argv + i);
  // As setpriv and a shell say it: 127 when not found, 126 when not runnable.
  const int e = errno;
  std::fprintf(stderr, "kfleet-seccomp-exec: cannot run '%s': %s\n", argv[i], std::strerror(e));
  return e == ENOENT ? 127 : 126;
}
