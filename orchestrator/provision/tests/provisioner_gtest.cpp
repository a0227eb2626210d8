// The static provisioner and the Outcome names other components print and store.
#include <gtest/gtest.h>

#include <optional>

#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision {
namespace {

TEST(Outcome, Names) {
  EXPECT_STREQ(to_string(Outcome::ok), "ok");
  EXPECT_STREQ(to_string(Outcome::stockout), "stockout");
  EXPECT_STREQ(to_string(Outcome::unsupported), "unsupported");
  EXPECT_STREQ(to_string(Outcome::quota), "quota");
  EXPECT_STREQ(to_string(Outcome::fatal), "fatal");
  EXPECT_STREQ(to_string(Outcome::transient), "transient");
}

TEST(StaticProvisioner, NeverGrows) {
  auto p = make_static_provisioner();
  EXPECT_EQ(p->name(), "static");
  EXPECT_FALSE(p->can_grow());
  EXPECT_EQ(p->capacity_budget(), 0);
  EXPECT_TRUE(p->regions().empty());
  std::optional<CapacityResult> got;
  p->request(CapacityRequest{1, "us-east-1", "L4"}, [&](CapacityResult r) { got = r; });
  ASSERT_TRUE(got);
  EXPECT_EQ(got->outcome, Outcome::fatal);
  EXPECT_NE(got->message.find("cannot grow"), std::string::npos);
  std::optional<Result<void>> released;
  p->release("i-1", [&](Result<void> r) { released = r; });
  ASSERT_TRUE(released);
  EXPECT_EQ(released->error().code, Errc::not_found);
}

}  // namespace
}  // namespace kfleet::provision
