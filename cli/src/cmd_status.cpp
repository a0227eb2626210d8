// `kfleet status`: the queue at a glance, or one job with its runs.
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "kfleet/cli/views.hpp"
#include "kfleet/common/model.hpp"

namespace kfleet::cli {

Command add_status_command(CLI::App& app) {
  struct Options {
    std::optional<std::int64_t> job;
    std::string state;
    int limit = 50;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("status", "list jobs, or show one job with its runs");
  sub->add_option("job", o->job, "a job id: show it with its runs");
  sub->add_option("--state", o->state, "only jobs in these states (comma-separated)")
      ->check([](const std::string& v) -> std::string {
        std::size_t start = 0;
        while (start <= v.size()) {
          auto end = v.find(',', start);
          auto word = v.substr(start, end == std::string::npos ? std::string::npos : end - start);
          if (!job_state_from_string(word))
            return "unknown state '" + word + "' (queued, waiting_capacity, leased, building, "
                   "gating, benchmarking, passed, rejected, error, cancelled)";
          if (end == std::string::npos) break;
          start = end + 1;
        }
        return "";
      });
  sub->add_option("--limit", o->limit, "at most this many jobs")->check(CLI::Range(1, 1000));
  sub->footer(R"(Examples:
  kfleet status
  kfleet status --state queued,waiting_capacity
  kfleet status 12)");
  return {sub, [o](Session& s) {
    const std::string path =
        o->job ? "/api/v1/jobs/" + std::to_string(*o->job)
               : "/api/v1/jobs?limit=" + std::to_string(o->limit) +
                     (o->state.empty() ? "" : "&state=" + o->state);
    auto reply = s.get(path);
    if (!reply) return s.fail(reply.error());
    if (s.json()) {
      s.io().out << reply->body.dump(2) << "\n";
    } else {
      s.io().out << (o->job ? render_job_detail(reply->body, s.now(), s.color())
                            : render_jobs(reply->body, s.now(), s.color()));
    }
    return 0;
  }};
}

}  // namespace kfleet::cli
