#include "common/subprocess.hpp"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kfleet/common/secret.hpp"

namespace kb = kfleet::backends;

namespace {

kb::SubprocessResult run_sh(const std::string& script, double timeout_s = 10) {
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {"/bin/sh", "-c", script};
  s.timeout_s = timeout_s;
  auto r = kb::run_subprocess(s);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : kb::SubprocessResult{};
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0; }

}  // namespace

TEST(Subprocess, ReportsExitCodes) {
  auto ok = run_sh("exit 0");
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.exit_code, 0);
  auto bad = run_sh("exit 3");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.signal, 0);
  EXPECT_EQ(bad.describe(), "exit code 3");
}

TEST(Subprocess, ReportsACrashBySignal) {
  auto r = run_sh("kill -SEGV $$");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.describe(), "killed by SIGSEGV");
}

TEST(Subprocess, CapturesBothStreamsSeparately) {
  auto r = run_sh("echo hello; echo oops >&2; printf 'no newline'");
  EXPECT_EQ(r.out, "hello\nno newline");
  EXPECT_EQ(r.err, "oops\n");
  EXPECT_FALSE(r.out_truncated);
}

TEST(Subprocess, KeepsOnlyTheTailOfLargeOutput) {
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {"/bin/sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done"};
  s.capture_limit = 100;
  auto r = kb::run_subprocess(s);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->out_truncated);
  EXPECT_LE(r->out.size(), 100u);
  EXPECT_NE(r->out.find("line1999\n"), std::string::npos);
  EXPECT_EQ(r->out.find("line0\n"), std::string::npos);
}

TEST(Subprocess, StreamsLinesToTheCallback) {
  std::vector<std::string> out_lines, err_lines;
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {"/bin/sh", "-c", "echo a; echo b >&2; echo c; printf d"};
  s.on_line = [&](kb::OutputStream w, const std::string& l) {
    (w == kb::OutputStream::out ? out_lines : err_lines).push_back(l);
  };
  auto r = kb::run_subprocess(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(out_lines, (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(err_lines, (std::vector<std::string>{"b"}));
}

TEST(Subprocess, KillsAHangingGroupAtTheTimeout) {
  // The shell forks a grandchild that would outlive a kill of the shell alone.
  auto dir = std::filesystem::temp_directory_path() / ("kfleet_sp_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto pidfile = dir / "grandchild.pid";
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {"/bin/sh", "-c", "sleep 60 & echo $! > " + pidfile.string() + "; wait"};
  s.timeout_s = 0.5;
  s.kill_grace_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  auto r = kb::run_subprocess(s);
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->ok());
  EXPECT_LT(took, 10.0);
  std::ifstream in(pidfile);
  pid_t grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  // The grandchild is killed with the group; wait for the kernel to reap it (init adopts it).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (process_alive(grandchild) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_FALSE(process_alive(grandchild));
  std::filesystem::remove_all(dir);
}

TEST(Subprocess, EscalatesToSigkillWhenTermIsIgnored) {
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"};
  s.timeout_s = 0.3;
  s.kill_grace_s = 0.3;
  auto r = kb::run_subprocess(s);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, SIGKILL);
}

TEST(Subprocess, StopPredicateKillsTheChild) {
  std::atomic<bool> stop{false};
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {"/bin/sh", "-c", "echo started; exec sleep 60"};
  s.on_line = [&](kb::OutputStream, const std::string& l) {
    if (l == "started") stop = true;
  };
  s.should_stop = [&] { return stop.load(); };
  auto r = kb::run_subprocess(s);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->stopped);
  EXPECT_FALSE(r->timed_out);
  EXPECT_LT(r->duration_s, 10.0);
}

TEST(Subprocess, EnvironmentAndWorkingDirectoryReachTheChild) {
  auto dir = std::filesystem::temp_directory_path();
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {"/bin/sh", "-c", "echo \"$KFLEET_TEST_VAR\"; pwd -P"};
  s.env = {{"KFLEET_TEST_VAR", "forty-two"}};
  s.cwd = dir.string();
  auto r = kb::run_subprocess(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "forty-two\n" + std::filesystem::canonical(dir).string() + "\n");
}

// The agent's enrolment token (KFLEET_ENROL_TOKEN from the unit's agent.env) never reaches a
// child: builds and custom steps run the job submitter's code.
TEST(Subprocess, TheAgentsTokensStayOutOfTheChildsEnvironment) {
  ::setenv("KFLEET_ENROL_TOKEN", "kfe_secret-for-the-agent-only", 1);
  ::setenv("KFLEET_TOKEN", "kft_secret-of-a-user", 1);
  ::setenv("KFLEET_CA_FILE", "/etc/kfleet/ca.pem", 1);
  auto r = run_sh("env");
  ::unsetenv("KFLEET_ENROL_TOKEN");
  ::unsetenv("KFLEET_TOKEN");
  ::unsetenv("KFLEET_CA_FILE");
  EXPECT_EQ(r.out.find("kfe_secret"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("kft_secret"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KFLEET_CA_FILE=/etc/kfleet/ca.pem"), std::string::npos) << "others pass";
  EXPECT_TRUE(kfleet::secret_variable("KFLEET_ENROL_TOKEN"));
  EXPECT_FALSE(kfleet::secret_variable("KFLEET_SERVER"));
  for (const char* name : {"PGPASSWORD", "PGPASSFILE", "KFLEET_ADMIN_TOKEN", "AWS_SECRET_ACCESS_KEY",
                           "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "GOOGLE_APPLICATION_CREDENTIALS",
                           "gh_token", "DB_PASSWD"})
    EXPECT_TRUE(kfleet::secret_variable(name)) << name;
  for (const char* name : {"PATH", "HOME", "CUDA_VISIBLE_DEVICES", "KFLEET_CA_FILE", "PGHOST"})
    EXPECT_FALSE(kfleet::secret_variable(name)) << name;
  ::setenv("PGPASSWORD", "pg-secret-of-kfleetd", 1);
  auto pg = run_sh("env");
  ::unsetenv("PGPASSWORD");
  EXPECT_EQ(pg.out.find("pg-secret-of-kfleetd"), std::string::npos) << pg.out;
}

// A time limit reached after the sandbox killed a process for memory (a compile worker, whose
// pool then waits for it forever) or refused a fork says so: the limit is what to look at.
TEST(Subprocess, ATimeoutSaysWhichSandboxLimitWasHitOnTheWay) {
  kb::SubprocessResult r;
  r.timed_out = true;
  r.duration_s = 120.2;
  EXPECT_EQ(r.describe(), "timed out after 120 s");
  r.memory_limit_hit = true;
  EXPECT_EQ(r.describe(), "timed out after 120 s (a process hit the sandbox's memory limit on the way)");
  r.memory_limit_hit = false;
  r.process_limit_hit = true;
  EXPECT_NE(r.describe().find("process limit refused"), std::string::npos) << r.describe();
}

TEST(Subprocess, AMissingProgramIsAnErrorNamingIt) {
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {"kfleet-no-such-compiler", "--version"};
  auto r = kb::run_subprocess(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kfleet-no-such-compiler"), std::string::npos);
  EXPECT_EQ(kb::find_program("kfleet-no-such-compiler"), "");
  EXPECT_NE(kb::find_program("sh"), "");
}

TEST(Subprocess, TailLines) {
  EXPECT_EQ(kb::tail_lines("a\nb\nc\n", 2), "b\nc");
  EXPECT_EQ(kb::tail_lines("a\nb\nc", 5), "a\nb\nc");
  EXPECT_EQ(kb::tail_lines("", 3), "");
}

// What torch prints when an error ends the process: the message, then its stack. The reason
// names the message, not the stack's last frame (the recorder's abort on the H200 read
// "frame #27: _start + 0x25").
TEST(Subprocess, CrashLineIsTheExceptionsMessageNotTheLastFrame) {
  const std::string torch_abort =
      "warnings.warn(\n"
      "terminate called after throwing an instance of 'c10::Error'\n"
      "  what():  Trying to free a pointer not allocated here\n"
      "Exception raised from raw_delete at CUDAPluggableAllocator.cpp:130 (most recent call first):\n"
      "frame #0: c10::Error::Error(...) + 0x9b (0x7f in libc10.so)\n"
      "frame #27: _start + 0x25 (0x657a05 in /opt/torch/.venv/bin/python)\n\n";
  EXPECT_EQ(kb::crash_line(torch_abort), "Trying to free a pointer not allocated here");
  EXPECT_EQ(kb::crash_line("Segmentation fault at 0x0\nframe #0: f()\n"), "Segmentation fault at 0x0");
  EXPECT_EQ(kb::crash_line("last words\r\n"), "last words");
  EXPECT_EQ(kb::crash_line("frame #0: f()\n"), "");
  EXPECT_EQ(kb::crash_line(""), "");
}
