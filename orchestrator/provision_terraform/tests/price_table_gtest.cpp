#include "kfleet/provision_terraform/price_table.hpp"

#include <gtest/gtest.h>

namespace kfleet::provision {
namespace {

TEST(PriceTable, CostIsRateTimesHours) {
  auto table = PriceTable::parse(R"({"g6.xlarge": 0.8048, "g6.12xlarge": 4.6016})");
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_EQ(table->size(), 2u);
  auto half_hour = table->cost_usd("g6.xlarge", 1800);
  ASSERT_TRUE(half_hour.ok());
  EXPECT_NEAR(*half_hour, 0.4024, 1e-9);
  EXPECT_NEAR(*table->cost_usd("g6.12xlarge", 7200), 9.2032, 1e-9);
}

TEST(PriceTable, UnknownTypeIsAnErrorNamingIt) {
  auto table = PriceTable::parse(R"({"g6.xlarge": 0.8048})");
  ASSERT_TRUE(table.ok());
  EXPECT_FALSE(table->usd_per_hour("g6.2xlarge").has_value());
  auto cost = table->cost_usd("g6.2xlarge", 60);
  ASSERT_FALSE(cost.ok());
  EXPECT_NE(cost.error().message.find("g6.2xlarge"), std::string::npos);
}

TEST(PriceTable, RejectsMalformedTables) {
  EXPECT_FALSE(PriceTable::parse("[1,2]").ok());
  EXPECT_FALSE(PriceTable::parse("{not json").ok());
  EXPECT_FALSE(PriceTable::parse(R"({"g6.xlarge": "cheap"})").ok());
  EXPECT_FALSE(PriceTable::parse(R"({"g6.xlarge": -1})").ok());
  EXPECT_FALSE(PriceTable::load("/nonexistent/prices.json").ok());
}

}  // namespace
}  // namespace kfleet::provision
