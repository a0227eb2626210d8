// The sandbox's syscall filter (docs/sandbox.md, "The syscall filter"), on real sandboxed
// processes: kfleet-seccomp-probe tries what the filter denies and what it must leave alone.
// A denied call gets EPERM and the job's log names it; perf_event_open passes in the profile
// stage only; compilers, threads and fork still work; clone3 gets ENOSYS; a foreign
// architecture's call kills the process (where this host's kernel runs such calls at all: the
// test asks it first). Where a try could succeed anyway, it is run once as the agent's own
// process too, to show that the probe can tell.
#include <linux/audit.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/seccomp_filter.hpp"
#include "common/subprocess.hpp"
#include "kfleet/agent/backend.hpp"
#include "kfleet/common/event.hpp"
#include "test_sandbox.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;
namespace kb = kfleet::backends;

namespace {

const std::string kProbe = KFLEET_SECCOMP_PROBE;

// A directory of this test's own, gone with it.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "kfleet_seccomp_XXXXXX").string();
    path = ::mkdtemp(t.data()) ? fs::path(t) : fs::path();
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct Run {
  kb::SubprocessResult result;
  std::vector<std::string> lines;  // both streams and the denials, in the order they came
  std::string text() const {
    std::string t;
    for (const auto& l : lines) t += l + "\n";
    return t;
  }
  bool has(const std::string& s) const { return text().find(s) != std::string::npos; }
  // Where the first line holding s is (lines.size() when none).
  std::size_t at(const std::string& s) const {
    for (std::size_t i = 0; i < lines.size(); ++i)
      if (lines[i].find(s) != std::string::npos) return i;
    return lines.size();
  }
};

// argv as a job's process in the sandbox (or, with policy null, as the agent's own process).
Run run(const kb::SandboxPolicyPtr& policy, const fs::path& dir, std::vector<std::string> argv,
        bool allow_perf = false, std::vector<std::string> readable = {kProbe}) {
  kb::SubprocessSpec s;
  if (policy) {
    s.sandbox_policy = policy;
    s.sandbox.writable = {dir.string()};
    s.sandbox.readable = std::move(readable);
    s.sandbox.allow_perf_events = allow_perf;
  } else {
    s.trust = kb::ProcessTrust::agent_tool;
  }
  s.cwd = dir.string();
  s.argv = std::move(argv);
  s.timeout_s = 120;
  Run r;
  s.on_line = [&](kb::OutputStream, const std::string& l) { r.lines.push_back(l); };
  auto res = kb::run_subprocess(s);
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().message);
  if (res.ok()) r.result = *res;
  return r;
}

std::vector<std::string> probe_args(std::initializer_list<const char*> tries) {
  std::vector<std::string> a = {kProbe};
  a.insert(a.end(), tries.begin(), tries.end());
  return a;
}

class LogLineSink : public EventSink {
 public:
  void emit(const std::string& type, nlohmann::json data) override {
    if (type == event_type::log_line) logs.push_back(data);
  }
  std::vector<nlohmann::json> logs;
};

}  // namespace

TEST(SyscallFilter, ADeniedCallGetsEpermAndTheJobsLogNamesIt) {
  // The control: as the agent's own process (root, no filter) ptrace works, so the probe can
  // tell a denial. (Alone: a process that asked to be traced stops at its next signal.)
  TempDir d;
  auto control = run(nullptr, d.path, probe_args({"ptrace"}));
  EXPECT_TRUE(control.has("ptrace: ok")) << control.text();

  // A custom job's step, through the CUDA backend, as a GPU agent runs it.
  TempDir t;
  const fs::path src = t.path / "run" / "src", work = t.path / "run" / "work";
  fs::create_directories(src);
  fs::create_directories(work);
  fs::copy_file(kProbe, src / "probe");
  LogLineSink sink;
  StopFlag stop;
  CudaBackendOptions o;
  o.harness_dir = (kBackendTestsDir / "fake_harness").string();
  o.gpu_class = "L4";
  o.arch = "sm_89";
  o.cache_dir = (t.path / "cache").string();
  o.require_exclusive = false;
  o.sandbox = test_sandbox();
  auto backend = make_cuda_backend(o);
  JobSpec spec;
  spec.timeout_s = 60;
  spec.kernel.family = "custom";
  spec.kernel.language = "cuda";
  spec.kernel.steps = CustomSteps{"./probe ptrace unshare-user clone-newuser mount bpf keyctl", "", "", ""};
  StageContext c{spec, src.string(), work.string(), GpuInfo{}, Comparison{}, sink, stop, "", 1, "",
                 (t.path / "run").string()};
  auto r = backend->build(c);
  ASSERT_TRUE(r.ok) << r.reason;

  std::vector<std::string> out, denials;
  for (const auto& e : sink.logs) {
    const std::string text = e.value("text", "");
    (e.value("stream", "") == "sandbox" ? denials : out).push_back(text);
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& l : v) s += l + "\n";
    return s;
  };
  for (const char* t : {"ptrace", "unshare-user", "clone-newuser", "mount", "bpf", "keyctl"})
    EXPECT_NE(joined(out).find(std::string(t) + ": EPERM"), std::string::npos) << t << "\n" << joined(out);
  for (const char* call : {"ptrace", "unshare with CLONE_NEWUSER", "clone with CLONE_NEWUSER", "mount",
                           "bpf", "keyctl"})
    EXPECT_NE(joined(denials).find(std::string("sandbox: denied ") + call + " (EPERM)"), std::string::npos)
        << call << "\n" << joined(denials);
  ASSERT_FALSE(denials.empty());
  EXPECT_NE(denials.front().find("in 'probe': job processes may not trace or read other processes"),
            std::string::npos)
      << denials.front();

  // The denial comes before what the process printed about it.
  auto order = [&](const std::string& first, const std::string& then) {
    std::size_t a = sink.logs.size(), b = sink.logs.size();
    for (std::size_t i = 0; i < sink.logs.size(); ++i) {
      const std::string text = sink.logs[i].value("text", "");
      if (a == sink.logs.size() && text.find(first) != std::string::npos) a = i;
      if (b == sink.logs.size() && text.find(then) != std::string::npos) b = i;
    }
    return a < b && b < sink.logs.size();
  };
  EXPECT_TRUE(order("sandbox: denied ptrace", "ptrace: EPERM"));
  EXPECT_TRUE(order("sandbox: denied mount", "mount: EPERM"));
}

TEST(SyscallFilter, RepeatedDenialsAreNamedOnceAndCounted) {
  auto policy = test_sandbox();
  ASSERT_NE(policy, nullptr);
  TempDir d;
  auto r = run(policy, d.path, probe_args({"ptrace-x100"}));
  EXPECT_TRUE(r.has("ptrace-x100: EPERM")) << r.text();
  EXPECT_EQ(r.result.denied, std::vector<std::string>{"ptrace"});
  std::size_t named = 0;
  for (const auto& l : r.lines) named += l.rfind("sandbox: denied ptrace (EPERM)", 0) == 0;
  EXPECT_EQ(named, 1u) << r.text();
  EXPECT_TRUE(r.has("sandbox: denied ptrace 99 more times")) << r.text();
  // Also in the captured stderr, for callers that only log that.
  EXPECT_NE(r.result.err.find("sandbox: denied ptrace (EPERM)"), std::string::npos) << r.result.err;
}

TEST(SyscallFilter, PerfEventOpenIsDeniedButInTheProfileStage) {
  auto policy = test_sandbox();
  ASSERT_NE(policy, nullptr);
  TempDir d;
  // Any job process: denied, and named.
  auto denied = run(policy, d.path, probe_args({"perf"}));
  EXPECT_TRUE(denied.has("perf: EPERM")) << denied.text();
  EXPECT_TRUE(denied.has("sandbox: denied perf_event_open (EPERM)")) << denied.text();

  // With the option: the kernel decides (perf_event_paranoid); the filter stays out of it.
  auto allowed = run(policy, d.path, probe_args({"perf", "seccomp"}), true);
  EXPECT_TRUE(allowed.has("seccomp: 2")) << allowed.text();
  EXPECT_TRUE(allowed.result.denied.empty()) << allowed.text();
  EXPECT_FALSE(allowed.has("sandbox: denied")) << allowed.text();
  int paranoid = 3;
  std::ifstream("/proc/sys/kernel/perf_event_paranoid") >> paranoid;
  if (paranoid <= 2) {
    EXPECT_TRUE(allowed.has("perf: ok")) << "perf_event_paranoid " << paranoid << "\n" << allowed.text();
  }

  // And the profile stage sets the option: its profiler (a stand-in ncu that runs the probe)
  // may open performance events.
  TempDir t;
  fs::create_directories(t.path / "bin");
  fs::create_directories(t.path / "work");
  fs::copy_file(kProbe, t.path / "bin" / "kfleet-seccomp-probe");
  std::ofstream(t.path / "bin" / "ncu") << "#!/bin/sh\n"
                                           "dir=$(dirname \"$0\")\n"
                                           "\"$dir/kfleet-seccomp-probe\" perf seccomp > \"$dir/../work/probe.txt\" 2>&1\n"
                                           "exit 1\n";
  fs::permissions(t.path / "bin" / "ncu", fs::perms::owner_all | fs::perms::group_read |
                                              fs::perms::group_exec | fs::perms::others_read |
                                              fs::perms::others_exec);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", ((t.path / "bin").string() + ":" + old_path).c_str(), 1);
  auto backend = fake_h200_backend((t.path / "cache").string(), policy);
  JobSpec s = tile_job(64, {0}, 120);
  ProfileSpec ps;
  ps.tool = "ncu";
  s.profile = ps;
  LogLineSink sink;
  StopFlag stop;
  StageContext c{s, (kBackendTestsDir / "kernels").string(), (t.path / "work").string(), GpuInfo{}, Comparison{},
                 sink, stop};
  auto b = backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason << "\n" << b.data.dump();
  auto p = backend->profile(c);
  ::setenv("PATH", old_path.c_str(), 1);
  std::ifstream in(t.path / "work" / "probe.txt");
  const std::string seen((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(seen.find("seccomp: 2"), std::string::npos) << "the profiler ran unfiltered: " << seen;
  EXPECT_EQ(seen.find("perf: EPERM"), std::string::npos) << seen;
  if (paranoid <= 2) {
    EXPECT_NE(seen.find("perf: ok"), std::string::npos) << seen;
  }
  for (const auto& e : sink.logs) EXPECT_NE(e.value("stream", ""), "sandbox") << e.dump();
  EXPECT_EQ(p.data.dump().find("sandbox: denied"), std::string::npos) << p.data.dump();
}

TEST(SyscallFilter, Clone3GetsEnosysAndThreadsAndForkStillWork) {
  auto policy = test_sandbox();
  ASSERT_NE(policy, nullptr);
  TempDir d;
  auto r = run(policy, d.path, probe_args({"seccomp", "clone3", "threads", "fork", "clone-newuser"}));
  EXPECT_TRUE(r.result.ok()) << r.result.describe() << "\n" << r.text();
  EXPECT_TRUE(r.has("seccomp: 2")) << r.text();
  EXPECT_TRUE(r.has("clone3: ENOSYS")) << r.text();
  EXPECT_TRUE(r.has("threads: ok")) << r.text();
  EXPECT_TRUE(r.has("fork: ok")) << r.text();
  // clone with a namespace flag is a denial; clone3 is not (glibc falls back to clone).
  EXPECT_TRUE(r.has("clone-newuser: EPERM")) << r.text();
  EXPECT_EQ(r.result.denied, std::vector<std::string>{"clone with CLONE_NEWUSER"}) << r.text();
}

// The filter asks the kernel not to force speculation mitigations on the job (kernels before
// 5.16 did, for every filtered process): a benchmark runs as fast as it would unfiltered.
TEST(SyscallFilter, ItLeavesTheSpeculationMitigationsAsTheyAre) {
  auto policy = test_sandbox();
  ASSERT_NE(policy, nullptr);
  TempDir d;
  auto outside = run(nullptr, d.path, probe_args({"speculation"}));
  auto inside = run(policy, d.path, probe_args({"speculation", "seccomp"}));
  ASSERT_TRUE(inside.has("seccomp: 2")) << inside.text();
  ASSERT_FALSE(outside.lines.empty());
  EXPECT_EQ(inside.lines.front(), outside.lines.front());
}

TEST(SyscallFilter, CompilersAndTheirProgramsStillWork) {
  auto policy = test_sandbox();
  ASSERT_NE(policy, nullptr);
  TempDir d;
  std::ofstream(d.path / "t.cpp") << "#include <cstdio>\n#include <thread>\n#include <vector>\n"
                                     "int main() { std::vector<std::thread> v; int n[8] = {};\n"
                                     "  for (int i = 0; i < 8; ++i) v.emplace_back([&n, i] { n[i] = i; });\n"
                                     "  for (auto& t : v) t.join();\n"
                                     "  int s = 0; for (int x : n) s += x; std::printf(\"sum %d\\n\", s); }\n";
  // g++ runs cc1plus, as and collect2/ld through posix_spawn (clone3, then clone); the result
  // runs threads.
  auto cc = run(policy, d.path, {"/bin/sh", "-c", "g++ -O1 -pthread -o t t.cpp && ./t"});
  EXPECT_TRUE(cc.result.ok()) << cc.result.describe() << "\n" << cc.text();
  EXPECT_TRUE(cc.has("sum 28")) << cc.text();
  EXPECT_TRUE(cc.result.denied.empty()) << cc.text();

  // The GPU toolchains, where this host has them: nvcc's host pass and ptxas, Python with
  // threads and subprocesses (Triton's way to run its compilers).
  std::ofstream(d.path / "k.cu") << "__global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n";
  for (const auto& [tool, command] : std::vector<std::pair<std::string, std::string>>{
           {"/usr/local/cuda/bin/nvcc", "nvcc -c -arch=sm_89 -o k.o k.cu && echo built"},
           {"/usr/bin/clang++", "clang++ -O1 -pthread -o t2 t.cpp && ./t2 && echo built"},
           {"/usr/bin/python3",
            "python3 -c 'import subprocess, threading; t = threading.Thread(target=print, args=(1,)); "
            "t.start(); t.join(); subprocess.run([\"true\"], check=True); print(\"built\")'"}}) {
    if (!fs::exists(tool)) continue;
    auto r = run(policy, d.path, {"/bin/sh", "-c", command});
    EXPECT_TRUE(r.result.ok()) << tool << ": " << r.result.describe() << "\n" << r.text();
    EXPECT_TRUE(r.has("built")) << tool << "\n" << r.text();
    EXPECT_TRUE(r.result.denied.empty()) << tool << "\n" << r.text();
  }
}

#if defined(__x86_64__)
// The filter program run on one call as the kernel runs it (classic BPF, the instructions
// build_filter writes): its answer for a call of any architecture, whether or not this host's
// kernel runs that architecture's calls at all.
std::uint32_t filter_answer(const std::vector<sock_filter>& prog, const seccomp_data& d) {
  std::uint32_t a = 0;
  for (std::size_t pc = 0; pc < prog.size(); ++pc) {
    const sock_filter& i = prog[pc];
    switch (i.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (i.k + 4 > sizeof d) return ADD_FAILURE() << "load past seccomp_data at " << pc, 0;
        std::memcpy(&a, reinterpret_cast<const char*>(&d) + i.k, 4);
        break;
      case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i.k ? i.jt : i.jf; break;
      case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i.k ? i.jt : i.jf; break;
      case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i.k) ? i.jt : i.jf; break;
      case BPF_RET | BPF_K: return i.k;
      default: return ADD_FAILURE() << "instruction " << i.code << " at " << pc << " not understood", 0;
    }
  }
  return ADD_FAILURE() << "the program ran off its end", 0;
}

TEST(SyscallFilter, AForeignArchitecturesCallKillsTheProcess) {
  // What the filter answers, on any host: i386's getpid (int 0x80) and an x32 call are killed;
  // the native getpid passes (so the reading of the program can tell).
  const auto prog = kb::seccomp::build_filter({});
  seccomp_data i386{}, x32{}, native{};
  i386.arch = AUDIT_ARCH_I386;
  i386.nr = 20;
  x32.arch = native.arch = AUDIT_ARCH_X86_64;
  x32.nr = 0x40000000 | SYS_getpid;
  native.nr = SYS_getpid;
  EXPECT_EQ(filter_answer(prog, i386), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(filter_answer(prog, x32), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(filter_answer(prog, native), SECCOMP_RET_ALLOW);

  // On this host, in the real sandbox. The control, without the filter, shows what this kernel
  // does with i386's getpid through int 0x80: it runs it (IA32 emulation), or it kills the
  // process with SIGSEGV before any filter sees a call (a kernel built or booted without IA32
  // emulation, or a hypervisor that refuses it). Either way the call must not return in the
  // sandbox: the filter kills what the kernel would run (SIGSYS), and what it would not run
  // still dies the kernel's way.
  auto policy = test_sandbox();
  ASSERT_NE(policy, nullptr);
  TempDir d;
  auto control = run(nullptr, d.path, probe_args({"int80"}));
  const bool kernel_runs_i386 = control.has("int80: returned");
  if (!kernel_runs_i386) {
    ASSERT_EQ(control.result.signal, SIGSEGV)
        << "int 0x80 neither returned nor was refused by the kernel: " << control.result.describe()
        << "\n" << control.text();
  }
  RecordProperty("i386_syscalls", kernel_runs_i386 ? "run by this kernel" : "refused by this kernel");
  auto r = run(policy, d.path, probe_args({"int80"}));
  EXPECT_EQ(r.result.signal, kernel_runs_i386 ? SIGSYS : SIGSEGV)
      << "this kernel " << (kernel_runs_i386 ? "runs" : "refuses") << " i386 calls: "
      << r.result.describe() << "\n" << r.text();
  EXPECT_FALSE(r.has("returned")) << r.text();

  // x32 numbers reach the filter on any kernel (without x32 the kernel answers ENOSYS).
  auto x32_control = run(nullptr, d.path, probe_args({"x32"}));
  EXPECT_TRUE(x32_control.has("(returned)")) << x32_control.text();
  auto x = run(policy, d.path, probe_args({"x32"}));
  EXPECT_EQ(x.result.signal, SIGSYS) << x.result.describe() << "\n" << x.text();
  EXPECT_FALSE(x.has("returned")) << x.text();
}
#endif

TEST(SyscallFilter, TheProbeFailsWithoutItsHelper) {
  kb::SandboxProbeOptions o;
  o.seccomp_exec = "/nonexistent-kfleet/kfleet-seccomp-exec";
  auto p = kb::probe_sandbox(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("kfleet-seccomp-exec"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("--sandbox-seccomp-exec"), std::string::npos) << p.error().message;
}

TEST(SyscallFilter, AnUnsandboxedAgentRunsJobsWithoutIt) {
  TempDir d;
  kb::SubprocessSpec s;
  s.sandbox_policy = kb::unsandboxed_policy("--unsandboxed");
  s.argv = {"/bin/sh", "-c", "grep '^Seccomp:' /proc/self/status"};
  s.timeout_s = 30;
  auto r = kb::run_subprocess(s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->unsandboxed);
  EXPECT_NE(r->out.find("Seccomp:\t0"), std::string::npos) << r->out;
}
