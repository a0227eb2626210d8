#pragma once
// Turns what terraform and the AWS provider print on failure into the provisioner's outcome.
// Pure: the text in, the decision out, so it is tested on the cloud's real error texts.
#include <string>
#include <string_view>

#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision {

struct AwsFailure {
  Outcome outcome = Outcome::fatal;
  std::string code;     // the AWS error code when one was found, e.g. "InsufficientInstanceCapacity"
  std::string message;  // the cloud's own words, shortened for an event
  // The connection to the cloud failed mid-call (reset, closed, timed out): the cloud's answer
  // was never read, so the same apply, run again at once, is the remedy (transient as well).
  bool transport = false;
};

// Classifies a failed terraform run from its error text (diagnostics or raw output). Unknown
// failures are fatal: provisioning stops and a person looks, rather than buying GPUs in a loop.
AwsFailure classify_aws_error(std::string_view error_text);

// A stable lower-case name for logs and tests ("stockout", "quota", ...).
const char* outcome_name(Outcome o);

}  // namespace kfleet::provision
