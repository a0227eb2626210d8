// The verdict's JSON form (docs/openapi.yaml): what the agent sends is what kfleetd stores and
// the CLI, dashboards and MCP read back.
#include <gtest/gtest.h>

#include "kfleet/common/model.hpp"

namespace kfleet {
namespace {

TEST(VerdictJson, BaselineComparisonsRoundTrip) {
  Verdict v;
  v.outcome = RunOutcome::passed;
  v.median_us = 100.0;
  BaselineComparison eager;
  eager.baseline = "eager";
  eager.speedup = 0.93;
  eager.ci_low = 0.92;
  eager.ci_high = 0.94;
  eager.reference_us = 93.0;
  eager.case_name = "llama3_8b";
  eager.key = {{"problem", "softmax"}, {"version", 2}, {"torch", "2.11.0+cu130"}};
  eager.cached = true;
  BaselineComparison compile;
  compile.baseline = "compile";
  compile.note = "torch.compile failed on this agent: no triton";
  compile.simulated = true;
  v.versus = {eager, compile};

  const Verdict back = verdict_from_json(to_json(v));
  ASSERT_EQ(back.versus.size(), 2u);
  EXPECT_EQ(back.versus[0].baseline, "eager");
  EXPECT_DOUBLE_EQ(*back.versus[0].speedup, 0.93);
  EXPECT_DOUBLE_EQ(*back.versus[0].ci_low, 0.92);
  EXPECT_DOUBLE_EQ(*back.versus[0].ci_high, 0.94);
  EXPECT_DOUBLE_EQ(*back.versus[0].reference_us, 93.0);
  EXPECT_EQ(back.versus[0].case_name, "llama3_8b");
  EXPECT_EQ(back.versus[0].key.value("problem", ""), "softmax");
  EXPECT_TRUE(back.versus[0].cached);
  EXPECT_EQ(back.versus[1].baseline, "compile");
  EXPECT_FALSE(back.versus[1].speedup.has_value());
  EXPECT_EQ(back.versus[1].note, "torch.compile failed on this agent: no triton");
  EXPECT_FALSE(back.versus[0].simulated);
  EXPECT_TRUE(back.versus[1].simulated);
}

// What an agent sends is read field by field: a member of the wrong type is left unset, the
// rest of the comparison (and the verdict) still arrives.
TEST(VerdictJson, AComparisonWithFieldsOfTheWrongTypeKeepsTheRest) {
  const nlohmann::json j = {{"outcome", "passed"},
                            {"versus", {{{"baseline", 5}, {"speedup", "fast"}, {"ci_low", 0.9},
                                         {"case", "small"}, {"cached", "yes"}, {"key", "k"}}}}};
  const Verdict v = verdict_from_json(j);
  ASSERT_EQ(v.versus.size(), 1u);
  EXPECT_EQ(v.versus[0].baseline, "");
  EXPECT_FALSE(v.versus[0].speedup.has_value());
  EXPECT_DOUBLE_EQ(*v.versus[0].ci_low, 0.9);
  EXPECT_EQ(v.versus[0].case_name, "small");
  EXPECT_FALSE(v.versus[0].cached);
  EXPECT_TRUE(v.versus[0].key.is_object());
}

TEST(VerdictJson, NoComparisonsLeaveNoKey) {
  Verdict v;
  EXPECT_FALSE(to_json(v).contains("versus"));
  EXPECT_TRUE(verdict_from_json(to_json(v)).versus.empty());
}

}  // namespace
}  // namespace kfleet
