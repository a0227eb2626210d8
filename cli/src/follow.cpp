// Watching a job to its end: a live SSE stream (--follow) or quiet polling (--wait).
#include <algorithm>
#include <ostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "kfleet/cli/exit_code.hpp"
#include "kfleet/cli/progress.hpp"

namespace kfleet::cli {

namespace {

// Consecutive failed connections before --follow/--wait give up with exit 5.
constexpr int kMaxFailures = 8;

std::string job_path(std::int64_t id) { return "/api/v1/jobs/" + std::to_string(id); }

// The job's exit status when it has ended, printing its verdict line if asked.
std::optional<int> finished_code(const nlohmann::json& job) {
  return exit_code_for_state_name(str_field(job, "state"));
}

std::string final_line(const nlohmann::json& job, bool color) {
  const auto& v = obj_field(job, "verdict");
  if (!v.empty()) return format_verdict_line(v, color);
  std::string line = str_field(job, "state");
  if (auto r = str_field(job, "state_reason"); !r.empty()) line += ": " + r;
  return line;
}

}  // namespace

int follow_job(Session& s, std::int64_t job_id, const std::string& gpu, const std::string& prefix) {
  ProgressFormatter formatter(ProgressStyle{s.color(), false}, gpu);
  JobOutcomeTracker tracker;
  std::string last_id;
  int failures = 0;
  int delay = s.io().backoff_initial_ms;
  auto on_event = [&](const std::string& id, const std::string& name, const std::string& data) {
    if (name == "end") return false;  // kfleetd's last frame: the job is over
    if (!id.empty()) last_id = id;
    auto j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return true;  // a comment or keep-alive we do not understand
    Event e = event_from_json(j);
    if (e.type.empty()) e.type = name;
    // A terminal job.state after the verdict would only repeat it.
    const bool repeat = e.type == event_type::job_state && tracker.saw_verdict() &&
                        exit_code_for_state_name(str_field(e.data, "state")).has_value() &&
                        str_field(e.data, "state") != "cancelled";
    tracker.observe(e);
    if (!repeat)
      if (auto line = formatter.line(e)) {
        // A profile is a line per kernel: each line gets the job's prefix.
        std::string text = *line;
        for (std::size_t p = 0; !prefix.empty() && (p = text.find('\n', p)) != std::string::npos;
             p += 1 + prefix.size())
          text.insert(p + 1, prefix);
        s.io().out << prefix << text << "\n" << std::flush;
      }
    return !tracker.finished();
  };

  while (true) {
    auto r = s.stream(job_path(job_id) + "/events", on_event, last_id);
    if (tracker.finished()) return *tracker.exit_code();
    if (r) {
      // The stream ended before the job's final state: ask for the job itself.
      auto job = s.get(job_path(job_id));
      if (job) {
        const auto& j = obj_field(job->body, "job");
        if (auto code = finished_code(j)) {
          if (!tracker.saw_verdict()) s.io().out << prefix << final_line(j, s.color()) << "\n";
          return *code;
        }
        failures = 0;
      } else if (job.error().code != Errc::unavailable) {
        return s.fail(job.error());
      }
    }
    if (++failures > kMaxFailures) {
      if (auto code = tracker.verdict_exit_code()) return *code;
      return r ? s.fail(make_error(Errc::unavailable, "the event stream of job " +
                                                          std::to_string(job_id) +
                                                          " kept ending before the job did"))
               : s.fail(r.error());
    }
    if (!r && failures == 1)
      s.io().err << "kfleet: " << r.error().message << "; reconnecting\n";
    s.backoff(delay);
  }
}

// --wait polls at most this far apart: a verdict is usually seconds away, and a 5 s reconnect
// backoff made every job look up to 5 s slower than it was (one GET a second is cheap).
constexpr int kWaitPollMaxMs = 1000;

int wait_job(Session& s, std::int64_t job_id, const std::string& prefix) {
  int failures = 0;
  int delay = std::min(s.io().backoff_initial_ms, kWaitPollMaxMs);
  while (true) {
    auto job = s.get(job_path(job_id));
    if (job) {
      failures = 0;
      const auto& j = obj_field(job->body, "job");
      if (auto code = finished_code(j)) {
        s.io().out << prefix << final_line(j, s.color()) << "\n";
        return *code;
      }
    } else if (job.error().code != Errc::unavailable || ++failures > kMaxFailures) {
      return s.fail(job.error());
    }
    s.backoff(delay);
    if (job) delay = std::min(delay, kWaitPollMaxMs);
  }
}

}  // namespace kfleet::cli
