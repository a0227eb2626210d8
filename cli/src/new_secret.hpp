#pragma once
// A secret kfleetd made and shows once (an API token, an enrolment token).
#include <string>

#include <nlohmann/json.hpp>

#include "session.hpp"

namespace kfleet::cli {

// Shows the new token `t` of kfleetd's `reply`: written to `out_file`, a new 0600 file, when one
// is named ("<what>, written to <file>"); else the reply itself with --json; else the secret on
// stdout and "<what>: shown once" on stderr. When the file cannot be made the token is lost and
// the message names the command that revokes it (`revoke`, followed by the token's id).
int show_new_secret(Session& s, const nlohmann::json& reply, const nlohmann::json& t,
                    const std::string& what, const std::string& out_file, const std::string& revoke);

}  // namespace kfleet::cli
