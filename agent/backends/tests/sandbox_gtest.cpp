// A job's code, run the way a GPU agent runs it (a custom job's steps through the CUDA
// backend, a kernel's compile through the compile backend), tries to reach what belongs to the
// agent and the host. Each probe runs twice: sandboxed, where it must fail, and as the agent's
// own process, where it must succeed, so that a probe which could never succeed proves nothing.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/harness_backend.hpp"
#include "common/subprocess.hpp"
#include "kfleet/agent/backend.hpp"
#include "kfleet/common/compile_flags.hpp"
#include "test_sandbox.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;

namespace {

class SandboxLog : public EventSink {
 public:
  void emit(const std::string& type, nlohmann::json data) override {
    if (type == "log") lines += data.value("text", "") + "\n";
  }
  std::string lines;
};

void write_file(const fs::path& p, const std::string& text, fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  fs::permissions(p, perms);
}

// A listening TCP socket on every address, standing in for kfleetd's port.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 16);
    socklen_t n = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
};

// The host's first non-loopback IPv4 address ("" when it has none).
std::string host_address() {
  ifaddrs* list = nullptr;
  std::string out;
  if (::getifaddrs(&list) != 0) return out;
  for (auto* i = list; i && out.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    if (std::string(buf).rfind("127.", 0) != 0) out = buf;
  }
  ::freeifaddrs(list);
  return out;
}

// The pids of the processes whose command line holds `marker` (and not `unless`, when given).
std::vector<pid_t> marker_processes(const std::string& marker, const std::string& unless = "") {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    // read(2), not an ifstream: when a process exits while its cmdline is read, the read fails
    // with ESRCH and libstdc++'s filebuf throws; thrown from ~AgentHost, that was terminate and the
    // test's folder left behind, whenever another test's processes came and went meanwhile.
    std::string cmd;
    if (int fd = ::open((e.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) cmd.append(buf, static_cast<size_t>(n));
      ::close(fd);
    }
    if (cmd.find(marker) != std::string::npos && (unless.empty() || cmd.find(unless) == std::string::npos))
      out.push_back(std::atoi(e.path().filename().c_str()));
  }
  return out;
}

bool marker_process_alive(const std::string& marker) {
  return !marker_processes(marker, "kfleet-probe-wrapper").empty();
}

void kill_marker_processes(const std::string& marker) {
  for (pid_t pid : marker_processes(marker)) ::kill(pid, SIGKILL);
}

// An agent's layout: its work dir with two runs and a build cache, its token file, its env.
struct AgentHost {
  fs::path root = fs::temp_directory_path() / ("kfleet_sandbox_" + std::to_string(::getpid()));
  fs::path work = root / "agent-work";
  fs::path run = work / "runs" / "1";
  fs::path other_run = work / "runs" / "2";
  fs::path cache = work / "build-cache";
  fs::path token = root / "etc-kfleet" / "enrol.token";
  Listener kfleetd;
  std::string marker = "kfleet-probe-" + std::to_string(::getpid());
  SandboxLog sink;
  StopFlag stop;
  BackendPtr backend;

  AgentHost() {
    fs::remove_all(root);
    fs::create_directories(run / "src");
    fs::create_directories(run / "work");
    write_file(other_run / "work" / "kernel.cu", "another user's kernel source\n",
               fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    write_file(cache / "0123abcd" / "kfleet-harness", "a cached binary\n",
               fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    write_file(token, "kfe_enrolment-secret-of-the-agent\n");
    ::setenv("KFLEET_ENROL_TOKEN", "kfe_env-secret-of-the-agent", 1);
    ::setenv("KFLEET_SERVER", ("http://127.0.0.1:" + std::to_string(kfleetd.port)).c_str(), 1);
    ::setenv("KFLEET_PROBE_AGENT_VAR", "agent-private-value", 1);
    CudaBackendOptions o;
    o.harness_dir = fs::path(KFLEET_BACKEND_TEST_KERNELS).parent_path() / "fake_harness";
    o.gpu_class = "L4";
    o.arch = "sm_89";
    o.cache_dir = cache.string();
    o.require_exclusive = false;
    o.sandbox = test_sandbox({work.string(), token.string(), token.parent_path().string()});
    backend = make_cuda_backend(o);
  }
  ~AgentHost() {
    ::unsetenv("KFLEET_ENROL_TOKEN");
    ::unsetenv("KFLEET_SERVER");
    ::unsetenv("KFLEET_PROBE_AGENT_VAR");
    kill_marker_processes(marker);
    fs::remove_all(root);
  }

  // The probe as a custom job's build step, through the backend, as a GPU agent runs it: a bash
  // script among the job's sources.
  StageResult probe(const std::string& script, JobSpec& spec) {
    write_file(run / "src" / "probe.sh", script + "\n",
               fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    return step("bash probe.sh", spec);
  }
  StageResult step(const std::string& command, JobSpec& spec) {
    spec.timeout_s = 30;
    spec.kernel.family = "custom";
    spec.kernel.language = "cuda";
    spec.kernel.steps = CustomSteps{command, "", "", ""};
    StageContext c{spec, (run / "src").string(), (run / "work").string(), GpuInfo{}, Comparison{},
                   sink, stop, "", 1, "", run.string()};
    return backend->build(c);
  }

  // The same probe as the agent's own process (no sandbox): the control.
  std::string unsandboxed(const std::string& command) {
    backends::SubprocessSpec s;
    s.trust = backends::ProcessTrust::agent_tool;
    s.argv = {"/bin/bash", "-c", command};
    s.cwd = (run / "src").string();
    s.timeout_s = 30;
    auto r = backends::run_subprocess(s);
    return r ? r->out + r->err : r.error().message;
  }
};

struct Probe {
  const char* what;
  std::string command;  // prints REACHED when it got what it wanted
};

}  // namespace

TEST(Sandbox, AJobProcessWithoutASandboxIsRefused) {
  backends::SubprocessSpec s;
  s.argv = {"/bin/true"};
  auto r = backends::run_subprocess(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("without its sandbox"), std::string::npos) << r.error().message;
}

TEST(Sandbox, ACustomStepCannotReachTheAgentOrTheHost) {
  AgentHost h;
  ASSERT_NE(h.backend, nullptr);
  const std::string port = std::to_string(h.kfleetd.port);
  const std::string ip = host_address();
  const std::string agent_pid = std::to_string(::getpid());
  const std::string planted = "kfleet-planted-" + agent_pid;
  std::vector<Probe> probes = {
      {"the agent's environment",
       "env | grep -q -e agent-private-value -e env-secret-of-the-agent && echo REACHED"},
      {"the agent's /proc environ",
       "tr '\\0' '\\n' < /proc/" + agent_pid + "/environ | grep -q '^PATH=' && echo REACHED"},
      {"the agent's token file", "grep -q enrolment-secret " + h.token.string() + " && echo REACHED"},
      {"another run's dir", "cat " + (h.other_run / "work" / "kernel.cu").string() + " && echo REACHED"},
      {"the build cache", "ls " + h.cache.string() + "/0123abcd && echo REACHED"},
      {"the build cache, writing", "touch " + h.cache.string() + "/planted && echo REACHED"},
      {"writing beside the run dir", "touch " + (h.work / "runs" / "planted").string() + " && echo REACHED"},
      {"writing under /etc", "touch /etc/" + planted + " && echo REACHED"},
      {"writing under /usr", "touch /usr/bin/" + planted + " && echo REACHED"},
      {"writing under /sys (a cgroup of its own)",
       "for d in /sys/fs/cgroup/pids$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup) "
       "/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup); do "
       "mkdir \"$d/" + planted + "\" 2>/dev/null && rmdir \"$d/" + planted + "\" && echo REACHED; done"},
      {"writing under /dev", "touch /dev/" + planted + " && echo REACHED"},
      {"kfleetd's port on loopback", "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo REACHED"},
      {"running as root", "[ \"$(id -u)\" = 0 ] && echo REACHED; "
                          "grep -q 'CapEff:.*[1-9a-f]' /proc/self/status && echo REACHED"},
  };
  if (!ip.empty())
    probes.push_back({"kfleetd's port on the host's address",
                      "exec 3<>/dev/tcp/" + ip + "/" + port + " && echo REACHED"});

  const std::vector<fs::path> plants = {h.cache / "planted", h.work / "runs" / "planted",
                                        "/etc/" + planted, "/usr/bin/" + planted, "/dev/" + planted};
  std::error_code ec;
  for (const auto& p : probes) {
    // The control: the agent itself reaches it, so the probe can tell.
    EXPECT_NE(h.unsandboxed(p.command).find("REACHED"), std::string::npos)
        << p.what << ": the probe does not work even outside the sandbox";
    for (const auto& f : plants) fs::remove(f, ec);
    JobSpec spec;
    h.sink.lines.clear();
    auto r = h.probe(p.command + "\ntrue", spec);
    EXPECT_TRUE(r.ok) << p.what << ": " << r.reason;
    EXPECT_EQ(h.sink.lines.find("REACHED"), std::string::npos) << "a job reached " << p.what;
    for (const auto& f : plants) {
      EXPECT_FALSE(fs::exists(f, ec)) << "a job wrote " << f;
      fs::remove(f, ec);
    }
  }
}

TEST(Sandbox, ItsRunDirIsWritableAndItsTmpIsGoneAfterTheStage) {
  AgentHost h;
  ASSERT_NE(h.backend, nullptr);
  JobSpec spec;
  auto w = h.step("echo made > out.txt && echo kept > /tmp/" + h.marker + " && cat /tmp/" + h.marker, spec);
  ASSERT_TRUE(w.ok) << w.reason << "\n" << h.sink.lines;
  EXPECT_NE(h.sink.lines.find("kept"), std::string::npos);
  EXPECT_TRUE(fs::exists(h.run / "src" / "out.txt"));
  EXPECT_FALSE(fs::exists("/tmp/" + h.marker)) << "the job's /tmp is private";
  h.sink.lines.clear();
  auto later = h.step("test -e /tmp/" + h.marker + " && echo REACHED; true", spec);
  ASSERT_TRUE(later.ok) << later.reason;
  EXPECT_EQ(h.sink.lines.find("REACHED"), std::string::npos) << "a /tmp file outlived its stage";
}

TEST(Sandbox, NoProcessOutlivesItsStage) {
  AgentHost h;
  ASSERT_NE(h.backend, nullptr);
  // A double fork, a setsid and a nohup, each leaving a process behind (their output elsewhere,
  // so that outside the sandbox the command returns while they live).
  const std::string escape =
      "( ( exec -a " + h.marker + "-a sleep 60 ) >/dev/null 2>&1 & )\n"
      "setsid bash -c 'exec -a " + h.marker + "-b sleep 60' >/dev/null 2>&1 &\n"
      "nohup bash -c 'exec -a " + h.marker + "-c sleep 60' >/dev/null 2>&1 &\n"
      "sleep 0.2; echo started";
  // The control: outside the sandbox these processes do outlive the command.
  h.unsandboxed(escape);
  EXPECT_TRUE(marker_process_alive(h.marker)) << "the escape does not work even unsandboxed";
  kill_marker_processes(h.marker);
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (marker_process_alive(h.marker) && std::chrono::steady_clock::now() < gone_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(marker_process_alive(h.marker));

  JobSpec spec;
  auto r = h.probe(escape, spec);
  ASSERT_TRUE(r.ok) << r.reason << "\n" << h.sink.lines;
  EXPECT_NE(h.sink.lines.find("started"), std::string::npos);
  // The stage has returned: its PID namespace is gone, and every process with it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (marker_process_alive(h.marker) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(marker_process_alive(h.marker)) << "a job's process outlived its stage";
}

TEST(Sandbox, MemoryAndProcessLimitsHold) {
  AgentHost h;
  ASSERT_NE(h.backend, nullptr);
  JobSpec spec;
  // 64 processes at most (test_sandbox's limit): a fork bomb stops there instead of taking the
  // host.
  write_file(h.run / "src" / "bomb.py",
             "import os, time\nn = 0\ntry:\n    for _ in range(100):\n        if os.fork() == 0:\n"
             "            time.sleep(3)\n            os._exit(0)\n        n += 1\nexcept OSError:\n"
             "    pass\nprint('forked', n)\n",
             fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  auto forks = h.step("python3 bomb.py", spec);
  ASSERT_TRUE(forks.ok) << forks.reason << h.sink.lines;
  auto at = h.sink.lines.find("forked ");
  ASSERT_NE(at, std::string::npos) << h.sink.lines;
  EXPECT_LT(std::stoi(h.sink.lines.substr(at + 7)), 64) << h.sink.lines;
  h.sink.lines.clear();
  // 1 GiB of memory at most (test_sandbox's limit): writing 1.5 GiB is killed.
  auto mem = h.step("python3 -c 'b = b\"x\" * (3 << 29); print(\"allocated\")'", spec);
  EXPECT_FALSE(mem.ok);
  EXPECT_EQ(h.sink.lines.find("allocated"), std::string::npos);
}

TEST(Sandbox, ACompileCannotReadTheAgentsFiles) {
  AgentHost h;
  ASSERT_NE(h.backend, nullptr);
  // The kernel's source includes the token file and another run's source: the compiler, in the
  // job's sandbox, cannot open them, so nothing of theirs reaches the compile log.
  write_file(h.run / "src" / "steal.cu",
             "#include \"" + h.token.string() + "\"\n#include \"" +
                 (h.other_run / "work" / "kernel.cu").string() + "\"\n__global__ void k() {}\n",
             fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  JobSpec spec;
  spec.timeout_s = 120;
  spec.kernel.family = "attention";
  spec.kernel.language = "cuda";
  spec.kernel.sources = {"steal.cu"};
  spec.kernel.entry = "k";
  StageContext c{spec, (h.run / "src").string(), (h.run / "work").string(), GpuInfo{}, Comparison{},
                 h.sink, h.stop, "", 1, "", h.run.string()};
  auto r = h.backend->build(c);
  EXPECT_FALSE(r.ok);
  const std::string log = r.reason + r.data.dump() + h.sink.lines;
  EXPECT_EQ(log.find("enrolment-secret"), std::string::npos) << log;
  EXPECT_NE(log.find("enrol.token"), std::string::npos) << "the compiler should name what it could not open: " << log;
}

TEST(Sandbox, KernelFlagsCannotPickTheHostCompilerOrRunFiles) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"-ccbin", "./evil.sh"}, {"--compiler-bindir=./evil"},
        {"-Xcompiler", "-fplugin=./evil.so"}, {"--run"}, {"-o", "/etc/x"}, {"@flags.txt"},
        {"-include", "/etc/kfleet/enrol.token"}, {"-I/etc/kfleet"}, {"-I../other-run"},
        {"-Xlinker", "--wrap=main"}, {"--dryrun"}, {"-Xptxas", "--help"}}) {
    auto r = check_compile_flags(bad);
    EXPECT_FALSE(r.ok()) << bad.front();
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("not allowed"), std::string::npos);
      EXPECT_NE(r.error().message.find("Allowed:"), std::string::npos);
    }
  }
  for (const std::vector<std::string>& good :
       {std::vector<std::string>{"-O3"}, {"-maxrregcount=16"}, {"-DTILE=64", "-UNDEBUG"},
        {"--use_fast_math", "-lineinfo"}, {"-Xptxas", "-v"}, {"-Iinclude"}, {"-std=c++17"}})
    EXPECT_TRUE(check_compile_flags(good).ok()) << good.front();

  // And the agent refuses them itself, whatever kfleetd let through.
  AgentHost h;
  ASSERT_NE(h.backend, nullptr);
  write_file(h.run / "src" / "evil.sh", "#!/bin/sh\ntouch /tmp/kfleet-evil-ran\n",
             fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  write_file(h.run / "src" / "k.cu", "__global__ void k() {}\n",
             fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  JobSpec spec;
  spec.timeout_s = 60;
  spec.kernel.family = "attention";
  spec.kernel.language = "cuda";
  spec.kernel.sources = {"k.cu"};
  spec.kernel.entry = "k";
  spec.kernel.flags = {"-ccbin", "./evil.sh"};
  StageContext c{spec, (h.run / "src").string(), (h.run / "work").string(), GpuInfo{}, Comparison{},
                 h.sink, h.stop, "", 1, "", h.run.string()};
  auto r = h.backend->build(c);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.infra_error) << "a bad flag is the job's fault";
  EXPECT_NE(r.reason.find("'-ccbin' is not allowed"), std::string::npos) << r.reason;
}
