#pragma once
// The job sandbox's syscall filter: a classic BPF program, written here by hand (no libseccomp:
// GPU hosts rarely have its headers), that kfleet-seccomp-exec installs as the last step inside
// the sandbox, after setpriv has set no_new_privs, before it execs the job's program. It denies
// what no compile, link, kernel launch or profiler needs and what widens the kernel's attack
// surface: tracing other processes, mounts, BPF, kexec, kernel modules, keyrings, userfaultfd,
// perf events (except in the profile stage), new namespaces, and a few administration calls.
// A denied call is handed to the agent (SECCOMP_RET_USER_NOTIF), which logs its name and
// answers EPERM; with no agent listening, the kernel answers ENOSYS: still denied.
// Dependency-free (the C++ standard library and the kernel's headers) so that the helper
// program links nothing of kfleet's. See docs/sandbox.md, "The syscall filter".
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace kfleet::backends::seccomp {

// One syscall the filter denies, by its number on this architecture.
struct DeniedCall {
  int nr;
  const char* name;
  const char* why;  // for the log line, "job processes may not ...": "trace or read other processes"
};

// Whether this architecture has a filter (x86_64 and aarch64): elsewhere the sandbox probe
// fails rather than run jobs without one.
bool supported();

// The syscalls the filter denies outright (clone, unshare and personality are denied only for
// some arguments; clone3 gets ENOSYS). perf_event_open is among them: allow_perf_events lifts it.
std::span<const DeniedCall> denied_calls();

struct FilterOptions {
  bool allow_perf_events = false;  // the profile stage's processes
  bool notify = true;  // denied calls go to a listener (USER_NOTIF); false: plain EPERM
};

// The program. Foreign architectures (i386 through int 0x80, x32) are killed: nothing a job
// runs is built for them, and their syscall numbers would slip past a table of native ones.
std::vector<sock_filter> build_filter(const FilterOptions& o);

// How a denied call reads in the log: "ptrace", "clone with CLONE_NEWUSER|CLONE_NEWNS",
// "personality(0x400000)". `why` is set to what the call is for.
std::string describe_call(const seccomp_data& d, std::string* why = nullptr);

// The clone flags that create namespaces. clone's low byte is its exit signal, so
// CLONE_NEWTIME (0x80) is a namespace flag only for unshare and clone3.
inline constexpr std::uint32_t kCloneNamespaceFlags = 0x7E020000u;
inline constexpr std::uint32_t kUnshareNamespaceFlags = kCloneNamespaceFlags | 0x80u;

// The message that carries the filter's listener from kfleet-seccomp-exec to the agent: one
// byte and room for one descriptor (SCM_RIGHTS). `msg` points into the object: not copyable.
struct ListenerMessage {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  ListenerMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  ListenerMessage(const ListenerMessage&) = delete;
  ListenerMessage& operator=(const ListenerMessage&) = delete;
};

// This process's seccomp mode as /proc/self/status says it ("0", "1", "2"; "?" when unread).
inline std::string own_seccomp_mode() {
  std::string mode = "?";
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "Seccomp:", 8) == 0) mode = std::to_string(std::atoi(line + 8));
    std::fclose(f);
  }
  return mode;
}

}  // namespace kfleet::backends::seccomp
