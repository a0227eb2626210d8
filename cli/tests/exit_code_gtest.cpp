#include <gtest/gtest.h>

#include "kfleet/cli/api_errors.hpp"
#include "kfleet/cli/exit_code.hpp"

namespace kfleet::cli {
namespace {

TEST(ExitCode, TerminalStatesMapToCiStatuses) {
  EXPECT_EQ(exit_code_for_state(JobState::passed), 0);
  EXPECT_EQ(exit_code_for_state(JobState::rejected), 1);
  EXPECT_EQ(exit_code_for_state(JobState::error), 3);
  EXPECT_EQ(exit_code_for_state(JobState::cancelled), 4);
  EXPECT_FALSE(exit_code_for_state(JobState::benchmarking).has_value());
  EXPECT_FALSE(exit_code_for_state_name("waiting_capacity").has_value());
  EXPECT_FALSE(exit_code_for_state_name("nonsense").has_value());
}

TEST(ExitCode, WorstOfSeveralJobs) {
  EXPECT_EQ(worst_exit(exit_passed, exit_rejected), exit_rejected);
  EXPECT_EQ(worst_exit(exit_rejected, exit_passed), exit_rejected);
  EXPECT_EQ(worst_exit(exit_cancelled, exit_rejected), exit_cancelled);
  EXPECT_EQ(worst_exit(exit_cancelled, exit_error), exit_error);
  EXPECT_EQ(worst_exit(exit_error, exit_usage), exit_usage);
  EXPECT_EQ(worst_exit(exit_unreachable, exit_usage), exit_unreachable);
}

TEST(ApiErrors, TokenRefusalTellsWhatToSet) {
  Error e = describe_http_failure(401, R"({"error":{"code":"unauthorized","message":"no token"}})");
  EXPECT_EQ(e.code, Errc::unauthorized);
  EXPECT_EQ(e.message, "kfleetd refused the token: set KFLEET_TOKEN or --token-file (no token)");
  EXPECT_EQ(exit_code_for_error(e), exit_unreachable);
}

TEST(ApiErrors, InvalidJobDetailsArePrintedAsFileLineColumn) {
  Error e = describe_http_failure(400, R"({"error":{"code":"invalid_job","message":"invalid job",
      "details":[{"file":"a.yaml","line":3,"column":5,"field":"target.gpu","message":"required"}]}})");
  EXPECT_EQ(e.code, Errc::invalid_argument);
  EXPECT_EQ(e.message, "invalid job\n  a.yaml:3:5: target.gpu: required");
  EXPECT_EQ(exit_code_for_error(e), exit_usage);
}

TEST(ApiErrors, NonJsonBodyStillSaysTheStatus) {
  Error e = describe_http_failure(502, "Bad Gateway");
  EXPECT_EQ(e.code, Errc::unavailable);
  EXPECT_NE(e.message.find("502"), std::string::npos);
  EXPECT_NE(e.message.find("Bad Gateway"), std::string::npos);
}

TEST(ApiErrors, TransportFailureSuggestsStartingKfleetd) {
  Error e = describe_transport_failure("http://127.0.0.1:8470", "connection refused");
  EXPECT_EQ(e.message,
            "cannot reach kfleetd at http://127.0.0.1:8470 (connection refused); start it with "
            "`kfleetd` or pass --server");
  EXPECT_EQ(exit_code_for_error(e), exit_unreachable);
}

TEST(ApiErrors, TransportCauseIsBoiledDown) {
  EXPECT_EQ(transport_cause("GET http://h:9/api/v1/agents failed: Failed to connect to h port 9 "
                            "after 0 ms: Couldn't connect to server (is kfleetd running?)"),
            "connection refused");
  EXPECT_EQ(transport_cause("GET http://x/api failed: Could not resolve host: x (is kfleetd up?)"),
            "host not found");
  EXPECT_EQ(transport_cause("GET http://x/api failed: SSL peer certificate bad (is kfleetd up?)"),
            "SSL peer certificate bad");
}

}  // namespace
}  // namespace kfleet::cli
