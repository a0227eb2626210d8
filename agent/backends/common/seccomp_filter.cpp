#include "common/seccomp_filter.hpp"

#include <errno.h>
#include <linux/audit.h>
#include <sys/syscall.h>

#include <cstddef>
#include <cstdio>

namespace kfleet::backends::seccomp {
namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kArch = AUDIT_ARCH_X86_64;
constexpr bool kSupported = true;
#elif defined(__aarch64__)
constexpr std::uint32_t kArch = AUDIT_ARCH_AARCH64;
constexpr bool kSupported = true;
#else
constexpr std::uint32_t kArch = 0;
constexpr bool kSupported = false;
#endif

// What each group of denied calls would do, as the log line says it: "job processes may not ...".
constexpr const char* kTrace = "trace or read other processes";
constexpr const char* kMount = "mount file systems";
constexpr const char* kBpf = "load BPF programs";
constexpr const char* kKernel = "load kernels or kernel modules";
constexpr const char* kKeys = "use the kernel's keyrings";
constexpr const char* kUffd = "use userfaultfd";
constexpr const char* kPerf = "open performance events (the profile stage's may)";
constexpr const char* kNamespaces = "create or enter namespaces";
constexpr const char* kAdmin = "administer the host";
constexpr const char* kPersonality = "change their execution domain";

#define KFLEET_DENY(call, why) DeniedCall{__NR_##call, #call, why}

// By their __NR_ numbers, so the table is right for the architecture it is built for. Calls
// newer than the oldest kernel headers kfleet builds with are guarded.
const DeniedCall kDenied[] = {
    KFLEET_DENY(ptrace, kTrace),
    KFLEET_DENY(process_vm_readv, kTrace),
    KFLEET_DENY(process_vm_writev, kTrace),
    KFLEET_DENY(mount, kMount),
    KFLEET_DENY(umount2, kMount),
    KFLEET_DENY(pivot_root, kMount),
#ifdef __NR_move_mount
    KFLEET_DENY(open_tree, kMount),
    KFLEET_DENY(move_mount, kMount),
    KFLEET_DENY(fsopen, kMount),
    KFLEET_DENY(fsconfig, kMount),
    KFLEET_DENY(fsmount, kMount),
    KFLEET_DENY(fspick, kMount),
#endif
#ifdef __NR_mount_setattr
    KFLEET_DENY(mount_setattr, kMount),
#endif
    KFLEET_DENY(bpf, kBpf),
    KFLEET_DENY(kexec_load, kKernel),
#ifdef __NR_kexec_file_load
    KFLEET_DENY(kexec_file_load, kKernel),
#endif
    KFLEET_DENY(init_module, kKernel),
    KFLEET_DENY(finit_module, kKernel),
    KFLEET_DENY(delete_module, kKernel),
    KFLEET_DENY(keyctl, kKeys),
    KFLEET_DENY(add_key, kKeys),
    KFLEET_DENY(request_key, kKeys),
    KFLEET_DENY(userfaultfd, kUffd),
    KFLEET_DENY(perf_event_open, kPerf),
    KFLEET_DENY(setns, kNamespaces),
    KFLEET_DENY(swapon, kAdmin),
    KFLEET_DENY(swapoff, kAdmin),
    KFLEET_DENY(reboot, kAdmin),
    KFLEET_DENY(acct, kAdmin),
    KFLEET_DENY(quotactl, kAdmin),
#ifdef __NR_quotactl_fd
    KFLEET_DENY(quotactl_fd, kAdmin),
#endif
    KFLEET_DENY(open_by_handle_at, kAdmin),
    KFLEET_DENY(settimeofday, kAdmin),
    KFLEET_DENY(clock_settime, kAdmin),
    KFLEET_DENY(lookup_dcookie, kAdmin),
#ifdef __NR_iopl
    KFLEET_DENY(iopl, kAdmin),
#endif
#ifdef __NR_ioperm
    KFLEET_DENY(ioperm, kAdmin),
#endif
};
#undef KFLEET_DENY

// The personality values Docker's default profile allows: Linux (0), PER_LINUX32 (8), UNAME26
// (0x20000), both (0x20008), and the query (0xffffffff).
constexpr std::uint32_t kPersonalities[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffffu};

constexpr std::uint32_t kX32Bit = 0x40000000u;

sock_filter stmt(std::uint16_t code, std::uint32_t k) { return BPF_STMT(code, k); }
sock_filter jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

// The low 32 bits of argument i (both architectures are little-endian).
constexpr std::uint32_t arg_low(int i) {
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * i);
}

std::string flag_names(std::uint64_t flags, std::uint32_t mask) {
  static const struct {
    std::uint32_t bit;
    const char* name;
  } kFlags[] = {{0x00020000u, "CLONE_NEWNS"},   {0x02000000u, "CLONE_NEWCGROUP"},
                {0x04000000u, "CLONE_NEWUTS"},  {0x08000000u, "CLONE_NEWIPC"},
                {0x10000000u, "CLONE_NEWUSER"}, {0x20000000u, "CLONE_NEWPID"},
                {0x40000000u, "CLONE_NEWNET"},  {0x00000080u, "CLONE_NEWTIME"}};
  std::string out;
  for (const auto& f : kFlags)
    if ((mask & f.bit) && (flags & f.bit)) out += (out.empty() ? "" : "|") + std::string(f.name);
  return out;
}

}  // namespace

bool supported() { return kSupported; }

std::span<const DeniedCall> denied_calls() { return kDenied; }

std::vector<sock_filter> build_filter(const FilterOptions& o) {
  const std::uint32_t deny = o.notify ? SECCOMP_RET_USER_NOTIF : (SECCOMP_RET_ERRNO | EPERM);
  const std::uint32_t kill = SECCOMP_RET_KILL_PROCESS;
  std::vector<sock_filter> p;
  // The architecture first: a syscall number means nothing without it.
  p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  p.push_back(stmt(BPF_RET | BPF_K, kill));
  p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  // The x32 ABI shares AUDIT_ARCH_X86_64 and sets bit 30 of the number: killed whether or not
  // the kernel has x32. -1 (a syscall a tracer skipped) is not x32.
  p.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 0, 2));
  p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 1, 0));
  p.push_back(stmt(BPF_RET | BPF_K, kill));
#endif
  // clone3 passes its flags in memory, where a filter cannot look: ENOSYS, so that glibc falls
  // back to clone, whose flags it can (as Docker and podman do).
#ifdef __NR_clone3
  p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1));
  p.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
#endif
  // clone and unshare: denied with a namespace flag, allowed without (threads, fork, vfork).
  const std::pair<std::uint32_t, std::uint32_t> by_flags[] = {
      {__NR_clone, kCloneNamespaceFlags}, {__NR_unshare, kUnshareNamespaceFlags}};
  for (const auto& [nr, mask] : by_flags) {
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4));
    p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(0)));
    p.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
    p.push_back(stmt(BPF_RET | BPF_K, deny));
    p.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  // personality: only the values Docker allows.
  const std::uint8_t n = std::size(kPersonalities);
  p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, n + 3));
  p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(0)));
  for (std::uint8_t i = 0; i < n; ++i)
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kPersonalities[i], n - i, 0));
  p.push_back(stmt(BPF_RET | BPF_K, deny));
  p.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  for (const auto& d : kDenied) {
    if (o.allow_perf_events && d.nr == __NR_perf_event_open) continue;
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(d.nr), 0, 1));
    p.push_back(stmt(BPF_RET | BPF_K, deny));
  }
  p.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return p;
}

std::string describe_call(const seccomp_data& d, std::string* why) {
  auto set_why = [&](const char* w) {
    if (why) *why = w;
  };
  if (d.nr == __NR_clone || d.nr == __NR_unshare) {
    set_why(kNamespaces);
    const bool clone = d.nr == __NR_clone;
    const std::string flags = flag_names(d.args[0], clone ? kCloneNamespaceFlags : kUnshareNamespaceFlags);
    return std::string(clone ? "clone" : "unshare") + (flags.empty() ? "" : " with " + flags);
  }
  if (d.nr == __NR_personality) {
    set_why(kPersonality);
    char buf[48];
    std::snprintf(buf, sizeof buf, "personality(0x%x)", static_cast<unsigned>(d.args[0]));
    return buf;
  }
  for (const auto& c : kDenied) {
    if (c.nr == d.nr) {
      set_why(c.why);
      return c.name;
    }
  }
  set_why("");
  return "syscall " + std::to_string(d.nr);
}

}  // namespace kfleet::backends::seccomp
