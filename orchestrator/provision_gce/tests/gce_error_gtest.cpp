// classify_gce_http / classify_gce_operation on Compute Engine's own error bodies.
#include <gtest/gtest.h>

#include "kfleet/provision_gce/gce_error.hpp"

namespace kfleet::provision {
namespace {

using nlohmann::json;

json op_with(const std::string& code, const std::string& message, long http) {
  return {{"kind", "compute#operation"}, {"name", "operation-1"}, {"status", "DONE"},
          {"error", {{"errors", {{{"code", code}, {"message", message}}}}}},
          {"httpErrorStatusCode", http}, {"httpErrorMessage", http == 503 ? "SERVICE UNAVAILABLE" : "FORBIDDEN"}};
}

TEST(GceError, ZonePoolExhaustionAndItsKinAreStockouts) {
  for (const char* code : {"ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
                           "UNSUPPORTED_OPERATION"}) {
    auto f = classify_gce_operation(op_with(code, "The zone 'projects/p/zones/us-central1-a' does not have enough "
                                                  "resources available to fulfill the request.", 503));
    EXPECT_EQ(f.outcome, Outcome::stockout) << code;
    EXPECT_EQ(f.code, code);
    EXPECT_FALSE(f.region_wide);
    EXPECT_NE(f.message.find("does not have enough resources"), std::string::npos) << f.message;
  }
  auto f = classify_gce_http(503, R"({"error":{"code":503,"message":"no capacity","errors":[{"reason":"insufficientCapacity","message":"The zone does not have enough resources"}]}})");
  EXPECT_EQ(f.outcome, Outcome::stockout);
  EXPECT_EQ(f.code, "insufficientCapacity");
}

TEST(GceError, QuotaBlocksTheRegion) {
  auto f = classify_gce_operation(
      op_with("QUOTA_EXCEEDED", "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 0.0 in region us-central1.", 403));
  EXPECT_EQ(f.outcome, Outcome::quota);
  EXPECT_TRUE(f.region_wide);
  EXPECT_EQ(f.message, "QUOTA_EXCEEDED: Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 0.0 in region us-central1.");
  auto h = classify_gce_http(403, R"({"error":{"code":403,"message":"Quota exceeded for quota metric 'Queries'","errors":[{"reason":"quotaExceeded","message":"Quota exceeded"}]}})");
  EXPECT_EQ(h.outcome, Outcome::quota);
}

TEST(GceError, AMachineTypeOrAcceleratorTheZoneLacksIsUnsupported) {
  auto f = classify_gce_http(400, R"({"error":{"code":400,"message":"Invalid value for field 'resource.machineType': 'zones/europe-west4-a/machineTypes/g2-standard-4'. Machine type with name 'g2-standard-4' does not exist in zone 'europe-west4-a'.","errors":[{"message":"Invalid value for field 'resource.machineType': 'zones/europe-west4-a/machineTypes/g2-standard-4'. Machine type with name 'g2-standard-4' does not exist in zone 'europe-west4-a'.","domain":"global","reason":"invalid"}]}})");
  EXPECT_EQ(f.outcome, Outcome::unsupported) << f.message;
  auto a = classify_gce_http(404, R"({"error":{"code":404,"message":"The resource 'projects/p/zones/us-west1-b/acceleratorTypes/nvidia-l4' was not found","errors":[{"reason":"notFound","message":"The resource 'projects/p/zones/us-west1-b/acceleratorTypes/nvidia-l4' was not found"}]}})");
  EXPECT_EQ(a.outcome, Outcome::unsupported) << a.message;
  // A missing image is the config's fault, not the zone's: fatal, so a person fixes it.
  auto i = classify_gce_http(404, R"({"error":{"code":404,"message":"The resource 'projects/x/global/images/family/nope' was not found","errors":[{"reason":"notFound"}]}})");
  EXPECT_EQ(i.outcome, Outcome::fatal);
}

TEST(GceError, AuthFailuresAreFatalWithTheReason) {
  auto f = classify_gce_http(403, R"({"error":{"code":403,"message":"Required 'compute.instances.create' permission for 'projects/p/zones/us-east4-a/instances/x'","errors":[{"reason":"forbidden","domain":"global","message":"Required 'compute.instances.create' permission for 'projects/p/zones/us-east4-a/instances/x'"}]}})");
  EXPECT_EQ(f.outcome, Outcome::fatal);
  EXPECT_NE(f.message.find("compute.instances.create"), std::string::npos) << f.message;
  auto u = classify_gce_http(401, R"({"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}})");
  EXPECT_EQ(u.outcome, Outcome::fatal);
  EXPECT_NE(u.message.find("invalid authentication credentials"), std::string::npos) << u.message;
  auto g = classify_gce_http(400, R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})");
  EXPECT_EQ(g.outcome, Outcome::fatal);
  EXPECT_NE(g.message.find("Invalid JWT Signature"), std::string::npos) << g.message;
}

TEST(GceError, ThrottlingAndServerErrorsAreTransient) {
  EXPECT_EQ(classify_gce_http(429, R"({"error":{"code":429,"message":"Rate Limit Exceeded","errors":[{"reason":"rateLimitExceeded"}]}})").outcome,
            Outcome::transient);
  EXPECT_EQ(classify_gce_http(403, R"({"error":{"code":403,"message":"Rate Limit Exceeded","errors":[{"reason":"rateLimitExceeded","message":"Rate Limit Exceeded"}]}})").outcome,
            Outcome::transient);
  EXPECT_EQ(classify_gce_http(503, "<html>Service Unavailable</html>").outcome, Outcome::transient);
  EXPECT_EQ(classify_gce_http(500, R"({"error":{"code":500,"message":"Internal error","errors":[{"reason":"backendError"}]}})").outcome,
            Outcome::transient);
  EXPECT_EQ(classify_gce_operation(op_with("RESOURCE_OPERATION_RATE_EXCEEDED", "too fast", 429)).outcome, Outcome::transient);
}

TEST(GceError, UnknownOperationCodesStopRatherThanLoop) {
  auto f = classify_gce_operation(op_with("SOMETHING_NEW", "a code nobody has seen", 403));
  EXPECT_EQ(f.outcome, Outcome::fatal);
  EXPECT_EQ(f.code, "SOMETHING_NEW");
}

// Found by the gce_answers fuzz target (tests/fuzz/corpus/gce_answers/op-*.txt): members of
// another type, and answers that are not objects, threw nlohmann's type_error.
TEST(GceError, MembersOfAnotherTypeAreReadAsAbsent) {
  GceFailure f;
  ASSERT_NO_THROW(f = classify_gce_operation(nlohmann::json::parse(
                      R"({"name":7,"httpErrorStatusCode":"503","httpErrorMessage":[],)"
                      R"("error":{"errors":[{"code":5,"message":{}},"x",{}]}})")));
  EXPECT_EQ(f.outcome, Outcome::fatal);
  ASSERT_NO_THROW(f = classify_gce_operation(nlohmann::json::parse("[1,2]")));
  ASSERT_NO_THROW(f = classify_gce_http(403, R"({"error":{"message":1,"status":[],"errors":[{"reason":2}]}})"));
  ASSERT_NO_THROW(f = classify_gce_http(400, R"({"error":"invalid_grant","error_description":3})"));
  EXPECT_EQ(json_string_at(nlohmann::json::parse(R"({"a":1})"), "a", "none"), "none");
  EXPECT_EQ(json_long_at(nlohmann::json::parse(R"({"a":"1"})"), "a", -1), -1);
  EXPECT_EQ(json_long_at(nlohmann::json::parse(R"({"a":503})"), "a", -1), 503);
}

TEST(GceError, RegionOfZone) {
  EXPECT_EQ(gce_region_of_zone("us-central1-a"), "us-central1");
  EXPECT_EQ(gce_region_of_zone("southamerica-east1-c"), "southamerica-east1");
  EXPECT_EQ(gce_region_of_zone("us-central1"), "us-central1");
}

}  // namespace
}  // namespace kfleet::provision
