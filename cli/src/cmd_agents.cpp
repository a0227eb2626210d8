// `kfleet agents`: the fleet and the regions the scheduler is avoiding. The live agents by
// default: retired ones stay in kfleetd's history (a fleet that scales to zero or loses spot
// instances leaves thousands), and --all or --state shows them.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "commands.hpp"
#include "kfleet/cli/views.hpp"

namespace kfleet::cli {

Command add_agents_command(CLI::App& app) {
  auto all = std::make_shared<bool>(false);
  auto state = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("agents", "list agents and region blocks (stockouts, quotas)");
  auto* all_opt = sub->add_flag("--all", *all, "every agent ever enrolled, the retired ones too");
  auto* state_opt = sub->add_option("--state", *state,
                  "only agents in these states, comma-separated (idle, busy, lost, retired)")
      ->check([](const std::string& v) -> std::string {
        std::size_t p = 0;
        while (p <= v.size()) {
          const auto q = std::min(v.find(',', p), v.size());
          const std::string one = v.substr(p, q - p);
          if (one != "idle" && one != "busy" && one != "lost" && one != "retired")
            return "unknown agent state '" + one + "' (use idle, busy, lost or retired)";
          p = q + 1;
        }
        return {};
      });
  state_opt->excludes(all_opt);
  // An admin takes an agent out (a stolen agent token, a host being decommissioned): kfleetd
  // retires it, refuses its token from then on and requeues the job it held at once.
  auto revoke_id = std::make_shared<std::int64_t>(0);
  auto* revoke = sub->add_subcommand(
      "revoke", "take an agent out of the fleet now: its token is refused, its job requeued "
                "(needs scope admin)");
  revoke->alias("retire");
  revoke->add_option("id", *revoke_id, "the agent's id (kfleet agents)")->required();
  sub->require_subcommand(0, 1);
  sub->footer(R"(Examples:
  kfleet agents                  # the live fleet (idle, busy, lost), with who enrolled each
  kfleet agents --state lost
  kfleet agents --all --json
  kfleet agents revoke 12        # its next call gets 401; the job it held is queued again)");
  return {sub, [all, state, revoke, revoke_id](Session& s) {
    if (revoke->parsed()) {
      auto reply = s.post("/api/v1/agents/" + std::to_string(*revoke_id) + "/retire",
                          nlohmann::json::object());
      if (!reply) return s.fail(reply.error(), "agents revoke");
      if (s.json()) {
        s.io().out << reply->body.dump(2) << "\n";
        return 0;
      }
      const auto& a = reply->body.contains("agent") ? reply->body["agent"] : reply->body;
      s.io().out << "agent " << *revoke_id << " (" << a.value("name", std::string()) << ") revoked: "
                 << "its token is refused from now on";
      const std::int64_t run = reply->body.value("requeued_run_id", std::int64_t{0});
      if (run) s.io().out << "; its run " << run << " was taken back (its job is queued again unless it ran out of attempts)";
      s.io().out << "\n";
      return 0;
    }
    std::string query = "?limit=1000";
    if (*all) query += "&state=all";
    else if (!state->empty()) query += "&state=" + *state;
    // The server hands out pages; gather them into one list.
    nlohmann::json out;
    for (std::int64_t after = 0;;) {
      auto reply = s.get("/api/v1/agents" + query + (after ? "&after=" + std::to_string(after) : ""));
      if (!reply) return s.fail(reply.error());
      if (out.is_null()) {
        out = reply->body;
      } else if (reply->body.contains("agents")) {
        for (auto& a : reply->body["agents"]) out["agents"].push_back(a);
      }
      if (!reply->body.contains("next_after") || !reply->body["next_after"].is_number_integer())
        break;
      const std::int64_t next = reply->body["next_after"].get<std::int64_t>();
      if (next <= after) break;  // a server that does not move on would loop forever
      after = next;
    }
    out.erase("next_after");
    if (s.json()) s.io().out << out.dump(2) << "\n";
    else s.io().out << render_agents(out, s.now(), s.color());
    return 0;
  }};
}

}  // namespace kfleet::cli
