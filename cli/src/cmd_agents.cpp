// `kfleet agents`: the fleet and the regions the scheduler is avoiding.
#include <ostream>

#include "commands.hpp"
#include "kfleet/cli/views.hpp"

namespace kfleet::cli {

Command add_agents_command(CLI::App& app) {
  auto* sub = app.add_subcommand("agents", "list agents and region blocks (stockouts, quotas)");
  sub->footer(R"(Examples:
  kfleet agents
  kfleet agents --json)");
  return {sub, [](Session& s) {
    auto reply = s.get("/api/v1/agents");
    if (!reply) return s.fail(reply.error());
    if (s.json()) s.io().out << reply->body.dump(2) << "\n";
    else s.io().out << render_agents(reply->body, s.now(), s.color());
    return 0;
  }};
}

}  // namespace kfleet::cli
