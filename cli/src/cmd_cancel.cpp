// `kfleet cancel`: stop jobs, running ones on their agents too.
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "kfleet/cli/exit_code.hpp"

namespace kfleet::cli {

Command add_cancel_command(CLI::App& app) {
  auto jobs = std::make_shared<std::vector<std::int64_t>>();
  auto* sub = app.add_subcommand("cancel", "cancel jobs (needs a token of scope submit)");
  sub->add_option("jobs", *jobs, "job ids")->required();
  sub->footer(R"(Examples:
  kfleet cancel 12
  KFLEET_TOKEN_FILE=~/.kfleet-token kfleet cancel 12 13 14)");
  return {sub, [jobs](Session& s) {
    int worst = exit_passed;
    for (auto id : *jobs) {
      auto reply = s.post("/api/v1/jobs/" + std::to_string(id) + "/cancel", nlohmann::json::object());
      if (!reply) {
        worst = worst_exit(worst, s.fail(reply.error(), "job " + std::to_string(id)));
        continue;
      }
      if (s.json()) {
        s.io().out << reply->body.dump(2) << "\n";
      } else {
        const auto& job = obj_field(reply->body, "job");
        s.io().out << "job " << id << " " << str_field(job, "name") << ": "
                   << (str_field(job, "state").empty() ? "cancel requested" : str_field(job, "state"))
                   << "\n";
      }
    }
    return worst;
  }};
}

}  // namespace kfleet::cli
