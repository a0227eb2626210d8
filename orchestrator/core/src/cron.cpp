// Cron parsing and next-fire computation, in UTC, on plain calendar arithmetic (no timezone
// database, no gmtime): day by day, then hour and minute within a matching day.
#include "kfleet/core/cron.hpp"

#include <charconv>
#include <sstream>
#include <vector>

namespace kfleet::core {

namespace {

std::optional<int> to_int(const std::string& s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Sets bits lo..hi of one field; returns false on a malformed or out-of-range part.
template <std::size_t N>
bool parse_field(const std::string& text, int lo, int hi, std::bitset<N>& out, bool& any) {
  any = text == "*";
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    int step = 1;
    if (auto slash = part.find('/'); slash != std::string::npos) {
      auto s = to_int(part.substr(slash + 1));
      if (!s || *s < 1) return false;
      step = *s;
      part = part.substr(0, slash);
    }
    int a = lo, b = hi;
    if (part != "*") {
      if (auto dash = part.find('-'); dash != std::string::npos) {
        auto x = to_int(part.substr(0, dash)), y = to_int(part.substr(dash + 1));
        if (!x || !y) return false;
        a = *x;
        b = *y;
      } else {
        auto x = to_int(part);
        if (!x) return false;
        a = *x;
        b = step > 1 ? hi : *x;
      }
    }
    if (a < lo || b > hi || a > b) return false;
    for (int v = a; v <= b; v += step) out.set(static_cast<std::size_t>(v));
  }
  return true;
}

// Days since 1970-01-01 -> civil date (H. Hinnant's algorithm).
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

bool day_matches(const CronSchedule& c, std::int64_t day) {
  std::int64_t y;
  unsigned m, d;
  civil_from_days(day, y, m, d);
  if (!c.months.test(m)) return false;
  const auto wd = static_cast<std::size_t>(((day % 7) + 11) % 7);  // 1970-01-01 was a Thursday
  const bool dom = c.days.test(d), dow = c.weekdays.test(wd);
  if (c.days_any && c.weekdays_any) return true;
  if (c.days_any) return dow;
  if (c.weekdays_any) return dom;
  return dom || dow;
}

}  // namespace

Result<CronSchedule> parse_cron(const std::string& expr) {
  std::istringstream in(expr);
  std::vector<std::string> f;
  for (std::string s; in >> s;) f.push_back(s);
  const std::string hint = " (cron: minute hour day-of-month month day-of-week, e.g. \"0 3 * * *\")";
  if (f.size() != 5)
    return make_error(Errc::invalid_argument, "'" + expr + "' has " + std::to_string(f.size()) +
                                                  " fields, not 5" + hint);
  CronSchedule c;
  bool any = false;
  std::bitset<8> wd;
  const char* names[] = {"minute", "hour", "day-of-month", "month", "day-of-week"};
  bool ok[5] = {parse_field(f[0], 0, 59, c.minutes, any), parse_field(f[1], 0, 23, c.hours, any),
                parse_field(f[2], 1, 31, c.days, c.days_any), parse_field(f[3], 1, 12, c.months, any),
                parse_field(f[4], 0, 7, wd, c.weekdays_any)};
  for (int i = 0; i < 5; ++i)
    if (!ok[i])
      return make_error(Errc::invalid_argument,
                        "'" + expr + "': the " + names[i] + " field '" + f[static_cast<std::size_t>(i)] +
                            "' is not valid" + hint);
  for (std::size_t i = 0; i < 7; ++i) c.weekdays[i] = wd[i];
  if (wd[7]) c.weekdays.set(0);  // 7 is Sunday too
  return c;
}

std::optional<TimeMs> next_fire(const CronSchedule& c, TimeMs after) {
  constexpr std::int64_t kMinute = 60'000, kDay = 1440;
  // The next whole minute after `after`.
  std::int64_t minute = after >= 0 ? after / kMinute + 1 : -((-after) / kMinute);
  std::int64_t day = minute >= 0 ? minute / kDay : (minute - kDay + 1) / kDay;
  int start = static_cast<int>(minute - day * kDay);
  for (int n = 0; n < 366 * 5; ++n, ++day, start = 0) {
    if (!day_matches(c, day)) continue;
    for (int m = start; m < kDay; ++m)
      if (c.hours.test(static_cast<std::size_t>(m / 60)) && c.minutes.test(static_cast<std::size_t>(m % 60)))
        return (day * kDay + m) * kMinute;
  }
  return std::nullopt;
}

}  // namespace kfleet::core
