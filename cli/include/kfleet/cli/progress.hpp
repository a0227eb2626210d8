#pragma once
// Turns a job's or run's events into the live progress lines of `submit --follow` and
// `logs`. Pure functions of the event JSON, so the wording is tested without a server.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/common/event.hpp"

namespace kfleet::cli {

struct ProgressStyle {
  bool color = false;
  bool show_logs = false;  // `logs` shows agent log lines; `--follow` keeps to milestones
};

// One readable line for an event, or nullopt for events not worth a line (raw samples, ...).
std::optional<std::string> format_event_line(const Event& e, const ProgressStyle& style);

// "REJECTED performance: do not merge: +6.1% (696 µs vs 656 µs)" / "PASSED ..." with
// " [simulated]" when the verdict came from the simulated backend. Accepts the Verdict
// schema ("outcome") and the verdict event ("status").
std::string format_verdict_line(const nlohmann::json& verdict, bool color);

// "1.2s", "350ms", "2m05s"
std::string format_duration_ms(double ms);
// "37.1 KB", "512 B", "1.5 MB" (binary units, as ptxas budgets are)
std::string format_bytes(double bytes);
// "696.0 µs", "12.35 ms", "1.20 s"
std::string format_time_us(double us);
// A profiler's value in its unit (ncu's base units, rocprofv3's): "62.4 µs" (ns), "183 MB"
// (byte, decimal as ncu counts), "42.6%", "1.50 GHz" (hz), "93,531 cycle".
std::string format_profile_value(double v, const std::string& unit);
// The profile event: a line per kernel with its median metrics, "[profile] axpy_kernel:
// gpu__time_duration.sum 62.4 µs · dram__bytes.sum 183 MB · SM 42.6%", then the profiler's
// advice, or why there are no values.
std::string format_profile(const nlohmann::json& data, bool color, bool detail = false);

// format_event_line with what earlier events said: kfleetd's lease.granted names only the
// agent id, while the scheduling decision before it names the agent and region, and the job
// its GPU. This fills those in so the lease line reads "leased to agent 3 l4-a (us-west-2, L4)".
class ProgressFormatter {
 public:
  ProgressFormatter(ProgressStyle style, std::string gpu) : style_(style), gpu_(std::move(gpu)) {}
  std::optional<std::string> line(const Event& e);

 private:
  ProgressStyle style_;
  std::string gpu_;
  nlohmann::json last_assign_ = nlohmann::json::object();
};

// Follows a job's event stream to its end: which exit status it reached, and where to resume.
class JobOutcomeTracker {
 public:
  void observe(const Event& e);
  // Set once a terminal job.state has been seen.
  std::optional<int> exit_code() const;
  bool saw_verdict() const { return saw_verdict_; }
  // The last run verdict's status: a fallback when the stream ended before the job's state.
  std::optional<int> verdict_exit_code() const { return verdict_code_; }
  bool finished() const { return terminal_state_.has_value(); }

 private:
  std::optional<int> terminal_state_;
  std::optional<int> verdict_code_;
  bool saw_verdict_ = false;
};

}  // namespace kfleet::cli
