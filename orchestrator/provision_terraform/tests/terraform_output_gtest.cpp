#include "kfleet/provision_terraform/terraform_output.hpp"

#include <optional>

#include <gtest/gtest.h>

namespace kfleet::provision {
namespace {

TEST(TerraformJsonLog, CollectsOnlyErrorDiagnostics) {
  const std::string log =
      R"({"@level":"info","@message":"Terraform 1.11.4","type":"version"})" "\n"
      R"({"@level":"warn","type":"diagnostic","diagnostic":{"severity":"warning","summary":"Deprecated","detail":"old"}})" "\n"
      R"({"@level":"error","type":"diagnostic","diagnostic":{"severity":"error","summary":"creating EC2 Instance: operation error EC2: RunInstances, api error InsufficientInstanceCapacity: none","detail":""}})" "\n";
  auto text = error_text_from_json_log(log);
  EXPECT_NE(text.find("InsufficientInstanceCapacity"), std::string::npos);
  EXPECT_EQ(text.find("Deprecated"), std::string::npos);
}

TEST(TerraformJsonLog, FallsBackToRawTextWithoutJson) {
  EXPECT_EQ(error_text_from_json_log("Error: Failed to load plugin schemas\n"),
            "Error: Failed to load plugin schemas\n");
}

TEST(TerraformOutputs, ParsesInstancesPerSlot) {
  auto parsed = parse_instances_output(
      R"({"instances":{"sensitive":false,"type":["map",["object",{}]],"value":{)"
      R"("j1-0":{"id":"i-0123","private_ip":"10.0.0.5","public_ip":"","availability_zone":"us-east-1a","instance_type":"g6.xlarge"}}},)"
      R"("region":{"sensitive":false,"type":"string","value":"us-east-1"}})");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ(parsed->at("j1-0").id, "i-0123");
  EXPECT_EQ(parsed->at("j1-0").availability_zone, "us-east-1a");
}

TEST(TerraformOutputs, EmptyStateMeansNoInstances) {
  auto parsed = parse_instances_output("{}\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->empty());
  EXPECT_FALSE(parse_instances_output("not json").ok());
}

// Found by fuzz_terraform_answers (tests/fuzz/corpus/terraform_answers/log-diag-odd.txt):
// members of an unexpected type threw nlohmann's type_error out of the reader.
TEST(TerraformJsonLog, MembersOfAnotherTypeAreSkippedNotThrown) {
  const std::string log =
      R"({"type":"diagnostic","diagnostic":{"severity":"error","summary":7,"detail":["x"]}})" "\n"
      R"({"type":"diagnostic","diagnostic":"x"})" "\n"
      R"({"type":["diagnostic"]})" "\n"
      R"({"type":"diagnostic","diagnostic":{"severity":"error","summary":"real","detail":"one"}})" "\n";
  std::string text;
  ASSERT_NO_THROW(text = error_text_from_json_log(log));
  EXPECT_EQ(text, "\nreal: one\n");
  std::optional<Result<std::map<std::string, AgentInstance>>> parsed;
  ASSERT_NO_THROW(parsed = parse_instances_output(R"({"instances":"x"})"));
  EXPECT_FALSE(parsed->ok());
  ASSERT_NO_THROW(parsed = parse_instances_output(R"({"instances":{"value":{"j1-0":{"id":7}}}})"));
  ASSERT_TRUE(parsed->ok());
  EXPECT_EQ((*parsed)->at("j1-0").id, "");
}

}  // namespace
}  // namespace kfleet::provision
