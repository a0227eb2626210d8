#pragma once
// Runs compilers and the harness as children in their own process group, so that a kernel that
// hangs or crashes (and anything it forked) is killed as a whole and never takes the agent down.
// Every process started for a job runs in its sandbox (sandbox.hpp): a SubprocessSpec is a
// job's unless it says it is the agent's own tool, and a job's without a sandbox policy is
// refused, so a new kind of job process cannot be started outside the sandbox by omission.
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/sandbox.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::backends {

enum class OutputStream { out, err };

// Whom a process works for.
enum class ProcessTrust {
  job,         // runs anything of a job's (its sources, flags, binary, steps): sandboxed
  agent_tool,  // the agent's own probe with no job input (compiler --version, rocm-smi)
};

struct SubprocessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH when it has no '/'
  std::string cwd;                // "" = the agent's own
  // A job's process: the fixed job environment (job_environment) plus these. The agent's own
  // tools: the agent's environment without its secrets, plus these.
  std::vector<std::pair<std::string, std::string>> env;
  ProcessTrust trust = ProcessTrust::job;
  SandboxPolicyPtr sandbox_policy;  // required for a job's process
  SandboxSpec sandbox;              // what this process may reach
  double timeout_s = 0;           // wall clock; 0 = none
  double kill_grace_s = 2;        // SIGTERM, then SIGKILL after this long
  std::size_t capture_limit = 1 << 20;  // the last this many bytes of each stream are kept
  std::function<bool()> should_stop;    // polled; true = kill the group (cancel, lease lost)
  std::function<void(OutputStream, const std::string&)> on_line;  // each complete line
  // A sandboxed process's call that the syscall filter denied, named ("sandbox: denied ptrace
  // (EPERM) in 'gdb': ..."), once per kind of call, before the call returns. Unset: on_line
  // gets it as a stderr line. Either way it is in the result's err as well.
  std::function<void(const std::string&)> on_denial;
  // Descriptors the child keeps, at the same numbers (the measuring process's result pipe).
  // They may be close-on-exec here: only the child clears that, so no other spawn inherits them.
  std::vector<int> pass_fds;
};

struct SubprocessResult {
  int exit_code = -1;      // valid when signal == 0
  int signal = 0;          // the signal that ended the child (0 = it exited)
  bool timed_out = false;  // we killed it for running past timeout_s
  bool stopped = false;    // we killed it because should_stop said so
  double duration_s = 0;
  std::string out, err;    // captured tails
  bool out_truncated = false, err_truncated = false;
  bool memory_limit_hit = false;  // the sandbox's memory limit ended a process
  bool process_limit_hit = false;  // the sandbox's process limit refused a fork or a thread
  bool unsandboxed = false;       // a job's process run without the sandbox (--unsandboxed)
  std::vector<std::string> denied;  // calls the syscall filter denied ("ptrace"), each once

  bool ok() const { return signal == 0 && exit_code == 0 && !timed_out && !stopped; }
  // "exit code 2" | "killed by SIGSEGV" | "timed out after 30 s" | "stopped"
  std::string describe() const;
};

// Runs spec.argv to completion (or timeout / stop). Fails only when the child cannot be started
// (program missing, bad cwd); every way the child itself ends is reported in the result.
Result<SubprocessResult> run_subprocess(const SubprocessSpec& spec);

// "SIGSEGV" for 11, "signal 77" for unknown numbers.
std::string signal_name(int sig);


// Looks a program up on PATH (or checks it when it has a '/'); "" when it is not there.
std::string find_program(const std::string& name);

// The last `n` lines of text, for short error messages.
std::string tail_lines(const std::string& text, std::size_t n);

// Why a process that died said it died, from its stderr: a C++ exception's message (the text
// after "what():", as std::terminate prints it before SIGABRT), else its last line that is not a
// stack frame (torch prints "frame #N: ..." lines after its errors' messages).
std::string crash_line(const std::string& err);

}  // namespace kfleet::backends
