// The change between a parent job and its child, as kfleetd records and every view shows it.
#include "kfleet/core/job_change.hpp"

#include <gtest/gtest.h>

namespace kfleet::core {
namespace {

using nlohmann::json;

json spec(json defines, json flags, double atol = 1e-3) {
  json k = {{"family", "attention"}, {"language", "cuda"}, {"sources", {"fa.cu"}}};
  if (!defines.is_null()) k["defines"] = defines;
  if (!flags.is_null()) k["flags"] = flags;
  return {{"name", "n"}, {"campaign", "c"}, {"kernel", k},
          {"gates", {{"correctness", {{"tolerance", {{"atol", atol}}}}}}}};
}

Bundle bundle(std::string fa) { return Bundle{{{"fa.cu", std::move(fa)}, {"util.h", "int x;\n"}}}; }

const std::string kParent = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";

TEST(JobChange, DefinesFlagsAndFilesAreEachSaid) {
  json parent = spec({{"STAGES", "2"}, {"OLD", "1"}}, {"-O3", "-lineinfo"});
  json child = spec({{"STAGES", "3"}, {"O_ACCUM_HALF", "1"}}, {"-O3", "--use_fast_math"});
  child["name"] = "other name";  // names and parents are not part of a change
  auto c = job_change(parent, bundle(kParent), child, bundle("a\nb\nc\nD\ne\nf\ng\nh\ni\nj\n"));
  EXPECT_EQ(c["defines"]["added"], json({{"O_ACCUM_HALF", "1"}}));
  EXPECT_EQ(c["defines"]["removed"], json({{"OLD", "1"}}));
  EXPECT_EQ(c["defines"]["changed"]["STAGES"], json({{"from", "2"}, {"to", "3"}}));
  EXPECT_EQ(c["flags"]["added"], json({"--use_fast_math"}));
  EXPECT_EQ(c["flags"]["removed"], json({"-lineinfo"}));
  ASSERT_EQ(c["files"].size(), 1u);  // util.h is unchanged
  EXPECT_EQ(c["files"][0]["path"], "fa.cu");
  EXPECT_EQ(c["files"][0]["status"], "replaced");
  EXPECT_EQ(c["files"][0]["added_lines"], 1);
  EXPECT_EQ(c["files"][0]["removed_lines"], 1);
  EXPECT_TRUE(c["other"].empty());
  EXPECT_FALSE(change_is_empty(c));
  EXPECT_EQ(c["summary"],
            "kernel.defines +O_ACCUM_HALF=1 STAGES=2->3 -OLD; kernel.flags -[-lineinfo] "
            "+[--use_fast_math]; fa.cu +1 -1");
}

TEST(JobChange, AUnifiedDiffWithThreeLinesOfContext) {
  const std::string diff = unified_diff(kParent, "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\n", "fa.cu");
  EXPECT_EQ(diff,
            "--- a/fa.cu\n+++ b/fa.cu\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n");
  EXPECT_EQ(unified_diff("x\n", "x\n", "f"), "");
  // Changes far apart make two hunks.
  const std::string two = unified_diff(kParent, "A\nb\nc\nd\ne\nf\ng\nh\ni\nJ\n", "f");
  EXPECT_NE(two.find("@@ -1,4 +1,4 @@\n-a\n+A\n b\n c\n d\n"), std::string::npos) << two;
  EXPECT_NE(two.find("@@ -7,4 +7,4 @@\n g\n h\n i\n-j\n+J\n"), std::string::npos) << two;
  EXPECT_EQ(unified_diff("", "new\n", "n.cu"), "--- a/n.cu\n+++ b/n.cu\n@@ -0,0 +1,1 @@\n+new\n");
}

TEST(JobChange, OtherFieldsAndEmptyChanges) {
  auto same = job_change(spec(nullptr, nullptr), bundle(kParent), spec(nullptr, nullptr), bundle(kParent));
  EXPECT_TRUE(change_is_empty(same));
  EXPECT_EQ(same["summary"], "no change");
  auto loose = job_change(spec(nullptr, nullptr), bundle(kParent), spec(nullptr, nullptr, 1e-2),
                          bundle(kParent));
  ASSERT_EQ(loose["other"].size(), 1u);
  EXPECT_EQ(loose["other"][0]["field"], "gates.correctness.tolerance.atol");
  EXPECT_EQ(loose["summary"], "gates.correctness.tolerance.atol changed");
  // Only the order of flags changed: still a change (the compiler sees it).
  auto order = job_change(spec(nullptr, {"-a", "-b"}), bundle(kParent), spec(nullptr, {"-b", "-a"}),
                          bundle(kParent));
  EXPECT_FALSE(change_is_empty(order));
}

// A field only one side has is said whole, at its own name: not one entry per key inside it.
TEST(JobChange, AFieldAddedOrRemovedIsSaidWhole) {
  json parent = spec(nullptr, nullptr);
  json child = parent;
  parent["kernel"]["params"] = {{"timing", "in_process"}};  // gone from the child
  child["target"] = {{"gpu", "L4"}};                        // new in the child
  auto c = job_change(parent, bundle(kParent), child, bundle(kParent));
  ASSERT_EQ(c["other"].size(), 2u) << c.dump();
  EXPECT_EQ(c["other"][0], json({{"field", "kernel.params"}, {"from", {{"timing", "in_process"}}}, {"to", nullptr}}));
  EXPECT_EQ(c["other"][1], json({{"field", "target"}, {"from", nullptr}, {"to", {{"gpu", "L4"}}}}));
}

TEST(JobChange, ABinaryFileOnEitherSideIsSaidToDiffer) {
  const std::string bin("\0\1", 2);
  const std::string said = "--- a/w.bin\n+++ b/w.bin\nBinary file w.bin differs\n";
  EXPECT_EQ(unified_diff("text\n", bin, "w.bin"), said);
  EXPECT_EQ(unified_diff(bin, "text\n", "w.bin"), said);
}

// Lines 0..n-1 of a file, every even one and the last rewritten in the second: no common head
// or tail to trim, so the alignment table is n by n, and about half the lines are common.
std::pair<std::string, std::string> half_rewritten(int n) {
  std::string before, after;
  for (int i = 0; i < n; ++i) {
    before += "x" + std::to_string(i) + "\n";
    after += (i % 2 && i != n - 1 ? "x" : "y") + std::to_string(i) + "\n";
  }
  return {before, after};
}

// Lines of the diff's hunks (not its ---/+++ header) that start with `prefix`.
std::size_t lines_starting(const std::string& diff, const std::string& prefix) {
  std::size_t count = 0, at = diff.find("\n@@");
  while ((at = diff.find("\n" + prefix, at)) != std::string::npos) ++count, ++at;
  return count;
}

// Up to 4,000,000 cells of the alignment table (2,000 lines by 2,000) the common lines stay
// context; past it the change is said as all removed, then all added, rather than spend seconds
// aligning it.
TEST(JobChange, AVeryLargeChangeIsSaidAsAWholeReplacement) {
  const auto [before, after] = half_rewritten(2000);
  const std::string aligned = unified_diff(before, after, "k.cu");
  EXPECT_NE(aligned.find("\n-x0\n+y0\n x1\n-x2\n+y2\n"), std::string::npos) << aligned.substr(0, 200);
  EXPECT_EQ(lines_starting(aligned, "-"), 1001u);
  EXPECT_EQ(lines_starting(aligned, "+"), 1001u);

  const auto [big_before, big_after] = half_rewritten(2001);
  const std::string whole = unified_diff(big_before, big_after, "k.cu");
  EXPECT_EQ(whole.rfind("--- a/k.cu\n+++ b/k.cu\n@@ -1,2001 +1,2001 @@\n-x0\n-x1\n-x2\n", 0), 0u)
      << whole.substr(0, 200);
  EXPECT_EQ(lines_starting(whole, "-"), 2001u);
  EXPECT_EQ(lines_starting(whole, "+"), 2001u);
  EXPECT_EQ(lines_starting(whole, " "), 0u);
  EXPECT_NE(whole.find("\n-x2000\n+y0\n+x1\n"), std::string::npos);
  EXPECT_EQ(whole.substr(whole.size() - 7), "+y2000\n");
}

}  // namespace
}  // namespace kfleet::core
