#pragma once
// Five-field cron expressions (minute hour day-of-month month day-of-week, UTC) for suites
// that kfleetd runs on a schedule: *, numbers, ranges a-b, steps */n and a-b/n, lists a,b.
// Day-of-week 0 and 7 are Sunday. As in Vixie cron, when both day fields are restricted a
// day matches if either does.
#include <bitset>
#include <optional>
#include <string>

#include "kfleet/common/clock.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::core {

struct CronSchedule {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days;      // 1..31
  std::bitset<13> months;    // 1..12
  std::bitset<7> weekdays;   // 0 = Sunday
  bool days_any = true, weekdays_any = true;
};

Result<CronSchedule> parse_cron(const std::string& expr);
// The first minute strictly after `after` that matches; nullopt if none within ~5 years.
std::optional<TimeMs> next_fire(const CronSchedule& c, TimeMs after);

}  // namespace kfleet::core
