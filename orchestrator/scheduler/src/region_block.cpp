// Region matching and the cool-down policy for failed capacity requests.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "kfleet/scheduler/scheduler.hpp"

namespace kfleet::sched {

namespace {
bool is_lower_alpha(char c) { return c >= 'a' && c <= 'z'; }
}  // namespace

bool region_matches(const std::string& want, const std::string& have) {
  if (want == have) return true;
  if (want.empty() || have.size() <= want.size()) return false;
  if (have.compare(0, want.size(), want) != 0) return false;
  const std::string zone = have.substr(want.size());
  // AWS zones append one letter ("us-east-1a"); GCP zones append "-<letter>" ("us-central1-a").
  // Anything else ("us-east-10") is a different region that merely shares a prefix.
  if (zone.size() == 1) return is_lower_alpha(zone[0]);
  if (zone.size() == 2) return zone[0] == '-' && is_lower_alpha(zone[1]);
  return false;
}

namespace {

TimeMs stockout_cooldown(const BlockPolicy& p, int strikes) {
  // Doubling saturates long before 2^40; capping the shift keeps the arithmetic in range.
  const int shift = std::clamp(strikes - 1, 0, 40);
  const double grown = static_cast<double>(p.stockout_base_ms) * std::ldexp(1.0, shift);
  return static_cast<TimeMs>(std::min(grown, static_cast<double>(p.stockout_max_ms)));
}

TimeMs base_cooldown(const BlockPolicy& p, const std::string& kind, int strikes) {
  if (kind == "unsupported") return p.unsupported_ms;
  if (kind == "quota" || kind == "fatal") return p.quota_ms;
  return stockout_cooldown(p, strikes);  // stockout, and any kind this policy does not know
}

}  // namespace

store::RegionBlock next_block(const BlockPolicy& p, const std::optional<store::RegionBlock>& prev,
                              const std::string& provider, const std::string& region,
                              const std::string& gpu_class, const std::string& kind,
                              const std::string& reason, TimeMs now, double jitter_unit) {
  int strikes = 1;
  if (prev && prev->kind == kind) {
    // "Recently" is relative to the previous block's own length: a zone that stocked out
    // again within one cool-down of recovering is still short, so back off further.
    const TimeMs prev_len = std::max<TimeMs>(prev->until_ms - prev->since_ms, 0);
    if (now <= prev->until_ms + prev_len) strikes = prev->strikes + 1;
  }
  const double u = std::clamp(jitter_unit, 0.0, 1.0);
  const double factor = 1.0 + p.jitter * (2.0 * u - 1.0);
  const auto duration =
      static_cast<TimeMs>(static_cast<double>(base_cooldown(p, kind, strikes)) * factor);

  store::RegionBlock b;
  b.provider = provider;
  b.region = region;
  b.gpu_class = gpu_class;
  b.kind = kind;
  b.reason = reason;
  b.strikes = strikes;
  b.since_ms = now;
  b.until_ms = now + std::max<TimeMs>(duration, 0);
  return b;
}

}  // namespace kfleet::sched
