#pragma once
// kfleet-agent --check: one screen of what this agent can and cannot do on this host, and what
// to install for each missing piece. Its systemd units run it before the agent (ExecStartPre),
// so the answer is in the journal; it exits non-zero when the agent could take no job at all.
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "kfleet/agent/backend.hpp"
#include "kfleet/common/http_client.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::agent {

struct CheckOptions {
  std::string backend;             // as --backend: simulated | cuda | hip | auto | compile
  std::string server;              // as --server ("" = not configured)
  HttpOptions http;                // its CA, client certificate, --insecure
  std::string enrol_token_file;    // "" = $KFLEET_ENROL_TOKEN
  std::string problems_dir;        // as --problems-dir ("" = the default)
  std::string work_dir;            // holds the build cache the measuring process goes to
  bool unsandboxed = false;        // the operator runs jobs without the sandbox
  // The sandbox probe (the agent's own): its policy, or why this host cannot sandbox.
  std::function<Result<std::shared_ptr<const backends::SandboxPolicy>>()> probe_sandbox;
  // The backend the agent would run, made with `policy` (the probe's, or an unsandboxed one
  // standing in for it so that the rest can still be looked at).
  std::function<Result<BackendPtr>(std::shared_ptr<const backends::SandboxPolicy> policy)> make_backend;
};

// Prints the report to `out`; returns 0 when the agent can take some job, 1 when none.
int run_check(const CheckOptions& o, std::ostream& out);

}  // namespace kfleet::agent
