// Scheduled suites: a timer that wakes at the next fire time (re-checked at least every
// 30 s, so a wall-clock jump is noticed) and starts the suites that are due.
#include "kfleet/core/suite_schedule.hpp"

#include <algorithm>

#include "kfleet/common/log.hpp"
#include "kfleet/common/suite.hpp"
#include "kfleet/core/fleet.hpp"

namespace kfleet::core {

SuiteSchedule::SuiteSchedule(boost::asio::any_io_executor ex, ControlPlane& cp)
    : cp_(cp), timer_(std::move(ex)) {}

Result<void> SuiteSchedule::add(const std::string& suite_path) {
  auto req = load_suite_request(suite_path);
  if (!req) return req.error();
  auto suite = parse_suite((*req)["suite_yaml"].get<std::string>(), suite_path);
  if (!suite.ok()) return make_error(Errc::invalid_argument, suite.error_text());
  if (suite.suite->schedule.empty())
    return make_error(Errc::invalid_argument,
                      suite_path + " has no schedule: add schedule: \"0 3 * * *\" (cron, UTC) or "
                                   "run it with kfleet regress");
  auto cron = parse_cron(suite.suite->schedule);
  if (!cron) return make_error(Errc::invalid_argument, suite_path + ": schedule: " + cron.error().message);
  Entry e{suite_path, suite.suite->name, *cron, 0};
  e.next = next_fire(e.cron, cp_.clock().now_ms()).value_or(0);
  entries_.push_back(std::move(e));
  return ok_result();
}

TimeMs SuiteSchedule::next_fire_ms() const {
  TimeMs best = 0;
  for (const auto& e : entries_)
    if (e.next && (!best || e.next < best)) best = e.next;
  return best;
}

int SuiteSchedule::run_due() {
  const TimeMs now = cp_.clock().now_ms();
  int started = 0;
  for (auto& e : entries_) {
    if (!e.next || e.next > now) continue;
    e.next = next_fire(e.cron, now).value_or(0);
    auto req = load_suite_request(e.path);
    if (!req) {
      log::error("suites", "scheduled suite ", e.path, " not started: ", req.error().message);
      continue;
    }
    auto reg = start_regression(cp_, *req, "schedule:" + e.name);
    if (!reg) {
      log::error("suites", "scheduled suite ", e.name, " not started: ", reg.error().message);
      continue;
    }
    log::info("suites", "scheduled suite ", e.name, " started as regression run ", reg->id);
    ++started;
  }
  return started;
}

void SuiteSchedule::start() {
  stopped_ = false;
  arm();
}

void SuiteSchedule::stop() {
  stopped_ = true;
  timer_.cancel();
}

void SuiteSchedule::arm() {
  if (stopped_ || entries_.empty()) return;
  const TimeMs next = next_fire_ms();
  const TimeMs wait = std::clamp<TimeMs>(next - cp_.clock().now_ms(), 0, 30'000);
  timer_.expires_after(std::chrono::milliseconds(wait));
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) return;
    run_due();
    arm();
  });
}

}  // namespace kfleet::core
