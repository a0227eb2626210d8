// The classifier on the texts terraform and the AWS provider (SDK v2, and v1-style) really print.
#include "kfleet/provision_terraform/aws_error.hpp"

#include <gtest/gtest.h>

namespace kfleet::provision {
namespace {

std::string sdk_error(const std::string& op, int status, const std::string& code, const std::string& msg) {
  return "creating EC2 Instance: operation error EC2: " + op + ", https response error StatusCode: " +
         std::to_string(status) + ", RequestID: 3f6c2b7e-8d0a-4c1e-9b5f-2a7d1e0c9b11, api error " + code +
         ": " + msg;
}

TEST(AwsErrorClassifier, InsufficientCapacityIsAStockout) {
  auto f = classify_aws_error(sdk_error(
      "RunInstances", 500, "InsufficientInstanceCapacity",
      "We currently do not have sufficient g6.xlarge capacity in the Availability Zone you requested "
      "(us-east-1a). Our system will be working on provisioning additional capacity. You can currently get "
      "g6.xlarge capacity by not specifying an Availability Zone in your request or choosing us-east-1b, "
      "us-east-1c."));
  EXPECT_EQ(f.outcome, Outcome::stockout);
  EXPECT_EQ(f.code, "InsufficientInstanceCapacity");
  EXPECT_EQ(f.message.rfind("InsufficientInstanceCapacity: We currently do not have sufficient g6.xlarge", 0), 0u)
      << f.message;
}

TEST(AwsErrorClassifier, SdkV1StyleStockoutIsAStockout) {
  auto f = classify_aws_error(
      "Error launching source instance: InsufficientInstanceCapacity: There is no Spot capacity available "
      "that matches your request.\n\tstatus code: 500, request id: 5a0b4b0e-ffd6-4bd5-a5b3-5e9a1c3c9d20");
  EXPECT_EQ(f.outcome, Outcome::stockout);
}

TEST(AwsErrorClassifier, UnsupportedZoneIsUnsupported) {
  auto f = classify_aws_error(sdk_error(
      "RunInstances", 400, "Unsupported",
      "Your requested instance type (g6.xlarge) is not supported in your requested Availability Zone "
      "(us-east-1e). Please retry your request by not specifying an Availability Zone or choosing "
      "us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1f."));
  EXPECT_EQ(f.outcome, Outcome::unsupported);
  EXPECT_EQ(f.code, "Unsupported");
}

TEST(AwsErrorClassifier, TerraformUnsupportedArgumentIsAConfigurationError) {
  auto f = classify_aws_error(
      "Unsupported argument: An argument named \"cpu_core_count\" is not expected here.");
  EXPECT_EQ(f.outcome, Outcome::fatal);
}

TEST(AwsErrorClassifier, VcpuAndInstanceLimitsAreQuota) {
  EXPECT_EQ(classify_aws_error(sdk_error("RunInstances", 400, "VcpuLimitExceeded",
                                         "You have requested more vCPU capacity than your current vCPU limit of 0 "
                                         "allows for the instance bucket that the specified instance type belongs "
                                         "to. Please visit http://aws.amazon.com/contact-us/ec2-request to request "
                                         "an adjustment to this limit."))
                .outcome,
            Outcome::quota);
  EXPECT_EQ(classify_aws_error(sdk_error("RunInstances", 400, "InstanceLimitExceeded",
                                         "Your quota allows for 0 more running instance(s). You requested at least 1"))
                .outcome,
            Outcome::quota);
}

TEST(AwsErrorClassifier, AuthAndPermissionErrorsAreFatal) {
  EXPECT_EQ(classify_aws_error(sdk_error("RunInstances", 401, "AuthFailure",
                                         "AWS was not able to validate the provided access credentials"))
                .outcome,
            Outcome::fatal);
  auto unauthorized = classify_aws_error(sdk_error(
      "RunInstances", 403, "UnauthorizedOperation",
      "You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/ci is not "
      "authorized to perform: ec2:RunInstances on resource: arn:aws:ec2:us-east-1:123456789012:instance/* "
      "because no identity-based policy allows the ec2:RunInstances action. Encoded authorization failure "
      "message: AbCdEf"));
  EXPECT_EQ(unauthorized.outcome, Outcome::fatal);
  EXPECT_EQ(unauthorized.code, "UnauthorizedOperation");
  EXPECT_EQ(classify_aws_error(
                "validating provider credentials: retrieving caller identity from STS: operation error STS: "
                "GetCallerIdentity, https response error StatusCode: 403, RequestID: 0c1d, api error "
                "InvalidClientTokenId: The security token included in the request is invalid.")
                .outcome,
            Outcome::fatal);
  EXPECT_EQ(classify_aws_error("No valid credential sources found: failed to refresh cached credentials, no EC2 "
                               "IMDS role found, operation error ec2imds: GetMetadata, request canceled")
                .outcome,
            Outcome::fatal);
}

TEST(AwsErrorClassifier, AnAuthErrorAfterThrottledRetriesIsStillFatal) {
  auto f = classify_aws_error(
      "operation error EC2: DescribeInstances, exceeded maximum number of attempts, 3, https response error "
      "StatusCode: 503, api error RequestLimitExceeded: Request limit exceeded.\n" +
      sdk_error("RunInstances", 401, "AuthFailure", "AWS was not able to validate the provided access credentials"));
  EXPECT_EQ(f.outcome, Outcome::fatal);
}

TEST(AwsErrorClassifier, ThrottlingAndServerErrorsAreTransient) {
  EXPECT_EQ(classify_aws_error("creating EC2 Instance: operation error EC2: RunInstances, exceeded maximum number "
                               "of attempts, 2, https response error StatusCode: 503, RequestID: 9e1f, api error "
                               "RequestLimitExceeded: Request limit exceeded.")
                .outcome,
            Outcome::transient);
  EXPECT_EQ(classify_aws_error(sdk_error("RunInstances", 500, "InternalError", "An internal error has occurred"))
                .outcome,
            Outcome::transient);
  EXPECT_EQ(classify_aws_error(sdk_error("DescribeInstances", 503, "Unavailable", "The server is unavailable"))
                .outcome,
            Outcome::transient);
  EXPECT_EQ(classify_aws_error("reading EC2 Instance (i-0abc): operation error EC2: DescribeInstances, https "
                               "response error StatusCode: 502, RequestID: , deserialization failed")
                .outcome,
            Outcome::transient);
  EXPECT_EQ(classify_aws_error("Error acquiring the state lock: resource temporarily unavailable").outcome,
            Outcome::transient);
}

// The connection failed mid-call: transient, and `transport` (the same apply again at once).
TEST(AwsErrorClassifier, ADroppedConnectionIsTransientAndTransport) {
  for (const char* text :
       {"getting attribute (userData): operation error EC2: DescribeInstanceAttribute, exceeded maximum number of "
        "attempts, 1, https response error StatusCode: 200, RequestID: , decomposing response: read tcp "
        "127.0.0.1:38086->127.0.0.1:36039: use of closed network connection",
        "reading EC2 Instance (i-0abc): operation error EC2: DescribeInstances, https response error StatusCode: "
        "200, RequestID: , deserialization failed, failed to decode response body, unexpected EOF",
        "creating EC2 Instance: operation error EC2: RunInstances, https response error StatusCode: 0, RequestID: "
        ", request send failed, Post \"https://ec2.us-east-1.amazonaws.com/\": read tcp 10.0.0.2:51234->"
        "52.46.128.1:443: read: connection reset by peer",
        "operation error EC2: DescribeVpcs, request send failed, write tcp 10.0.0.2:1->52.46.128.1:443: write: "
        "broken pipe"}) {
    const AwsFailure f = classify_aws_error(text);
    EXPECT_EQ(f.outcome, Outcome::transient) << text;
    EXPECT_TRUE(f.transport) << text;
  }
  // An answer the cloud did give is not a transport failure, transient or not.
  EXPECT_FALSE(classify_aws_error(sdk_error("DescribeInstances", 503, "Unavailable", "The server is unavailable"))
                   .transport);
  EXPECT_FALSE(classify_aws_error("Error acquiring the state lock: resource temporarily unavailable").transport);
  EXPECT_FALSE(classify_aws_error(sdk_error("RunInstances", 500, "InsufficientInstanceCapacity", "no capacity; "
                                                                                              "i/o timeout earlier"))
                   .transport);
}

TEST(AwsErrorClassifier, VariableValidationIsFatal) {
  auto f = classify_aws_error(
      "Invalid value for variable: instance_type must be in the g6 family (NVIDIA L4), e.g. g6.xlarge; g5 is "
      "A10G and g6e is L40S.");
  EXPECT_EQ(f.outcome, Outcome::fatal);
  EXPECT_NE(f.message.find("g6 family"), std::string::npos);
}

TEST(AwsErrorClassifier, UnknownFailuresAreFatalAndKeepTheWords) {
  auto f = classify_aws_error("\n  something nobody has seen before\nsecond line");
  EXPECT_EQ(f.outcome, Outcome::fatal);
  EXPECT_EQ(f.message, "something nobody has seen before");
}

TEST(AwsErrorClassifier, LongMessagesAreShortened) {
  auto f = classify_aws_error(sdk_error("RunInstances", 500, "InsufficientInstanceCapacity", std::string(2000, 'x')));
  EXPECT_EQ(f.outcome, Outcome::stockout);
  EXPECT_LE(f.message.size(), 400u);
}

}  // namespace
}  // namespace kfleet::provision
