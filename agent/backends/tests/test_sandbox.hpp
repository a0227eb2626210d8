#pragma once
// The job sandbox the backend tests run their job processes in: the real one (bwrap, setpriv,
// a cgroup, the syscall filter), as an agent has it. A host that cannot sandbox fails these
// tests, it does not skip.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/sandbox.hpp"

inline kfleet::backends::SandboxPolicyPtr test_sandbox(std::vector<std::string> hidden = {}) {
  kfleet::backends::SandboxProbeOptions o;
  o.hidden = std::move(hidden);
  o.seccomp_exec = KFLEET_SECCOMP_EXEC;  // the build's, beside kfleet-agent
  o.defaults.memory_bytes = 1ull << 30;
  o.defaults.max_processes = 64;  // tasks (threads too): ample for nvcc and the stand-in harness
  auto p = kfleet::backends::probe_sandbox(o);
  if (!p) {
    ADD_FAILURE() << "the job sandbox is unavailable on this host: " << p.error().message;
    return nullptr;
  }
  return *p;
}
