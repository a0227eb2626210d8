#pragma once
// One change at a time, shown: a job submitted as parent + change carries the change kfleetd
// recorded (job.change: summary, defines, flags, files with unified diffs). `kfleet status JOB`
// and `kfleet report` print it with these.
#include <string>

#include <nlohmann/json.hpp>

namespace kfleet::cli {

// Plain text, indented by `indent`: the summary line, then defines, flags and each file's
// diff. "" when `change` is not an object.
std::string render_change_text(const nlohmann::json& change, const std::string& indent);
// A Markdown section "## Change against the parent" with ```diff blocks; "" when none.
std::string render_change_markdown(const nlohmann::json& change);

}  // namespace kfleet::cli
