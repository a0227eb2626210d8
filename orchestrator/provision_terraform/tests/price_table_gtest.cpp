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

TEST(PriceTable, AnInstanceHourIsSplitAcrossItsGpus) {
  auto table = PriceTable::parse(
      R"({"g6.xlarge": 0.8048, "g6.48xlarge": 13.3504, "custom.8gpu": {"usd_per_hour": 16, "gpus": 8}})");
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_EQ(table->gpus_per_instance("g6.xlarge"), 1);
  EXPECT_EQ(table->gpus_per_instance("g6.48xlarge"), 8);  // known type
  EXPECT_EQ(table->gpus_per_instance("custom.8gpu"), 8);  // from the table
  EXPECT_NEAR(*table->usd_per_gpu_hour("g6.48xlarge"), 13.3504 / 8, 1e-9);
  EXPECT_NEAR(*table->usd_per_gpu_hour("custom.8gpu"), 2.0, 1e-9);
  EXPECT_NEAR(*table->usd_per_gpu_hour("g6.xlarge"), 0.8048, 1e-9);
  EXPECT_NEAR(*table->usd_per_hour("custom.8gpu"), 16.0, 1e-9);
  EXPECT_EQ(known_gpus_per_instance("g2-standard-96"), 8);
  EXPECT_EQ(known_gpus_per_instance("g2-standard-48"), 4);
  EXPECT_FALSE(PriceTable::parse(R"({"x": {"usd_per_hour": 1, "gpus": 0}})").ok());
  EXPECT_FALSE(PriceTable::parse(R"({"x": {"gpus": 2}})").ok());
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
