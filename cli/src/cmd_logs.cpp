// `kfleet logs`: a run's events as readable lines, optionally live.
#include <algorithm>
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "kfleet/cli/progress.hpp"

namespace kfleet::cli {

namespace {

void print_event(Session& s, const Event& e) {
  const ProgressStyle style{s.color(), true};
  if (s.json()) {
    s.io().out << to_json(e).dump() << "\n";
  } else if (auto line = format_event_line(e, style)) {
    s.io().out << *line << "\n";
  }
  s.io().out << std::flush;
}

}  // namespace

Command add_logs_command(CLI::App& app) {
  struct Options {
    std::int64_t run = 0;
    bool follow = false;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("logs", "a run's events and log lines");
  sub->add_option("run", o->run, "run id (see `kfleet status JOB`)")->required();
  sub->add_flag("--follow,-f", o->follow, "keep streaming until the run ends");
  sub->footer(R"(Examples:
  kfleet logs 42
  kfleet logs 42 --follow)");
  return {sub, [o](Session& s) {
    const std::string base = "/api/v1/runs/" + std::to_string(o->run) + "/events";
    if (!o->follow) {
      // Page through by seq: a long run has more events than one answer carries.
      constexpr std::size_t kPage = 1000;
      for (std::int64_t after = 0;;) {
        auto reply = s.get(base + "?after=" + std::to_string(after) + "&limit=" + std::to_string(kPage));
        if (!reply) return s.fail(reply.error(), "run " + std::to_string(o->run));
        const auto& events = arr_field(reply->body, "events");
        for (const auto& j : events) {
          Event e = event_from_json(j);
          after = std::max(after, e.seq);
          print_event(s, e);
        }
        if (events.size() < kPage) return 0;
      }
    }
    std::string last_id;
    int delay = s.io().backoff_initial_ms;
    for (int failures = 0;; ++failures) {
      auto r = s.stream(base,
                        [&](const std::string& id, const std::string& name, const std::string& data) {
                          if (name == "end") return false;  // the run is over
                          if (!id.empty()) last_id = id;
                          auto j = nlohmann::json::parse(data, nullptr, false);
                          if (j.is_discarded()) return true;
                          Event e = event_from_json(j);
                          if (e.type.empty()) e.type = name;
                          print_event(s, e);
                          return true;
                        },
                        last_id);
      if (r) return 0;  // the server ends the stream when the run ends
      if (failures >= 8) return s.fail(r.error());
      s.backoff(delay);
    }
  }};
}

}  // namespace kfleet::cli
