#pragma once
// Reading terraform's machine-readable output: the `-json` log of plan/apply/destroy and the
// `terraform output -json` document.
#include <map>
#include <string>
#include <string_view>

#include "kfleet/common/result.hpp"

namespace kfleet::provision {

// The error diagnostics of a `-json` log ("summary: detail" per line). When the log holds no
// JSON (terraform failed before it started logging) the raw text's tail is returned instead.
std::string error_text_from_json_log(std::string_view log);

struct AgentInstance {
  std::string slot;
  std::string id;
  std::string private_ip;
  std::string public_ip;
  std::string availability_zone;
  std::string instance_type;
};

// Slot -> instance from `terraform output -json` of terraform/fleet (its `instances` output).
// An empty document (no state yet) is an empty map.
Result<std::map<std::string, AgentInstance>> parse_instances_output(std::string_view json_text);

}  // namespace kfleet::provision
