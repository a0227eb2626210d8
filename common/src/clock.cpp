#include "kfleet/common/clock.hpp"

#include <ctime>
#include <cstdio>

namespace kfleet {

TimeMs SystemClock::now_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string format_iso8601(TimeMs t) {
  std::time_t secs = static_cast<std::time_t>(t / 1000);
  int ms = static_cast<int>(t % 1000);
  if (ms < 0) { ms += 1000; --secs; }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];  // room for any int year, so the format can never truncate
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

}  // namespace kfleet
