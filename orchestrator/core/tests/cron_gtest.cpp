// Cron parsing and next-fire times, from fixed instants (no real clock).
#include <gtest/gtest.h>

#include "kfleet/core/cron.hpp"

namespace kfleet::core {
namespace {

// 2026-03-14T10:17:30Z (a Saturday).
constexpr TimeMs kSat = 1773483450000;

std::string fire(const std::string& expr, TimeMs after) {
  auto c = parse_cron(expr);
  EXPECT_TRUE(c.ok()) << expr;
  if (!c.ok()) return "";
  auto t = next_fire(*c, after);
  return t ? format_iso8601(*t) : "never";
}

TEST(Cron, SanityOfTheFixedInstant) { EXPECT_EQ(format_iso8601(kSat), "2026-03-14T10:17:30.000Z"); }

TEST(Cron, NightlyFiresAtThreeTheNextDay) {
  EXPECT_EQ(fire("0 3 * * *", kSat), "2026-03-15T03:00:00.000Z");
}

TEST(Cron, EveryMinuteIsTheNextWholeMinuteStrictlyAfter) {
  EXPECT_EQ(fire("* * * * *", kSat), "2026-03-14T10:18:00.000Z");
  auto c = parse_cron("* * * * *");
  ASSERT_TRUE(c.ok());
  // Exactly on a minute: the next one, never the same instant again.
  EXPECT_EQ(*next_fire(*c, 1773483480000), 1773483540000);
}

TEST(Cron, StepsRangesAndLists) {
  EXPECT_EQ(fire("*/15 * * * *", kSat), "2026-03-14T10:30:00.000Z");
  EXPECT_EQ(fire("5,50 9-11 * * *", kSat), "2026-03-14T10:50:00.000Z");
  EXPECT_EQ(fire("0 8-18/4 * * *", kSat), "2026-03-14T12:00:00.000Z");
}

TEST(Cron, WeekdaysAndMonthDays) {
  EXPECT_EQ(fire("0 3 * * 1-5", kSat), "2026-03-16T03:00:00.000Z");  // Monday
  EXPECT_EQ(fire("0 3 * * 0", kSat), "2026-03-15T03:00:00.000Z");    // Sunday
  EXPECT_EQ(fire("0 3 * * 7", kSat), "2026-03-15T03:00:00.000Z");    // 7 is Sunday too
  EXPECT_EQ(fire("0 0 1 * *", kSat), "2026-04-01T00:00:00.000Z");
  EXPECT_EQ(fire("0 0 29 2 *", kSat), "2028-02-29T00:00:00.000Z");   // next leap day
  // Both day fields restricted: either matches (the 20th, or the next Monday).
  EXPECT_EQ(fire("0 0 20 * 1", kSat), "2026-03-16T00:00:00.000Z");
}

TEST(Cron, YearEndRollsOver) {
  EXPECT_EQ(fire("30 23 31 12 *", kSat), "2026-12-31T23:30:00.000Z");
  EXPECT_EQ(fire("0 0 1 1 *", kSat), "2027-01-01T00:00:00.000Z");
}

TEST(Cron, ImpossibleDateNeverFires) {
  auto c = parse_cron("0 0 31 2 *");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(next_fire(*c, kSat));
}

TEST(Cron, BadExpressionsSayWhichField) {
  for (const char* bad : {"0 3 * *", "61 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *",
                          "* * * * 8", "*/0 * * * *", "5-1 * * * *", "a * * * *"}) {
    auto c = parse_cron(bad);
    EXPECT_FALSE(c.ok()) << bad;
  }
  auto c = parse_cron("0 25 * * *");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("hour"), std::string::npos) << c.error().message;
}

}  // namespace
}  // namespace kfleet::core
