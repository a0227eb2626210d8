// `kfleet results`: finished runs and their verdicts, newest first.
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "kfleet/cli/views.hpp"

namespace kfleet::cli {

Command add_results_command(CLI::App& app) {
  auto limit = std::make_shared<int>(50);
  auto* sub = app.add_subcommand("results", "finished runs with verdicts, deltas and CIs");
  sub->add_option("--limit", *limit, "at most this many runs")->check(CLI::Range(1, 1000));
  sub->footer(R"(Examples:
  kfleet results --limit 20
  kfleet results --json | jq '.results[].run.verdict')");
  return {sub, [limit](Session& s) {
    auto reply = s.get("/api/v1/results?limit=" + std::to_string(*limit));
    if (!reply) return s.fail(reply.error());
    if (s.json()) s.io().out << reply->body.dump(2) << "\n";
    else s.io().out << render_results(reply->body, s.now(), s.color());
    return 0;
  }};
}

}  // namespace kfleet::cli
