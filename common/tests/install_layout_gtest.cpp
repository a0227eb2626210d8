// Where kfleet's programs find their own files: share/kfleet and lib/kfleet of the nearest prefix
// above the program, never a path of the build machine; a build folder's links are resolved.
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include "kfleet/common/install_layout.hpp"

namespace fs = std::filesystem;

namespace {

class InstallLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kfleet-layout-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    root_ = fs::canonical(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
  }
  fs::path root_;
};

TEST_F(InstallLayout, AnInstallPrefixIsFoundFromTheProgramsOwnPath) {
  const fs::path prefix = root_ / "opt" / "kfleet";
  touch(prefix / "bin" / "kfleet-agent");
  fs::create_directories(prefix / "share" / "kfleet" / "kernels" / "harness");
  touch(prefix / "lib" / "kfleet" / "kfleet-seccomp-exec");
  const fs::path exe = prefix / "bin" / "kfleet-agent";
  EXPECT_EQ(kfleet::installed_data("kernels/harness", exe), prefix / "share" / "kfleet" / "kernels" / "harness");
  EXPECT_EQ(kfleet::installed_helper("kfleet-seccomp-exec", exe), prefix / "lib" / "kfleet" / "kfleet-seccomp-exec");
  EXPECT_TRUE(kfleet::installed_data("kernels/problems", exe).empty()) << "absent: nothing is made up";
  EXPECT_TRUE(kfleet::installed_helper("other-helper", exe).empty());
  EXPECT_NE(kfleet::installed_data_hint("kernels/problems", exe).find((prefix / "bin").string()), std::string::npos);
}

TEST_F(InstallLayout, AHelperBesideTheProgramWinsAndABuildFoldersLinksAreResolved) {
  // A build folder: the agent and its helper side by side, share/kfleet/kernels a link to the sources.
  const fs::path build = root_ / "build", sources = root_ / "src" / "kernels";
  touch(build / "agent" / "kfleet-agent");
  touch(build / "agent" / "kfleet-seccomp-exec");
  touch(build / "lib" / "kfleet" / "kfleet-seccomp-exec");
  fs::create_directories(sources / "harness");
  fs::create_directories(build / "share" / "kfleet");
  fs::create_directory_symlink(sources, build / "share" / "kfleet" / "kernels");
  const fs::path exe = build / "agent" / "kfleet-agent";
  EXPECT_EQ(kfleet::installed_helper("kfleet-seccomp-exec", exe), build / "agent" / "kfleet-seccomp-exec");
  EXPECT_EQ(kfleet::installed_data("kernels/harness", exe), sources / "harness");
  // A test binary deeper in the build folder finds the same.
  EXPECT_EQ(kfleet::installed_data("kernels/harness", build / "agent" / "backends" / "some_gtest"), sources / "harness");
}

TEST_F(InstallLayout, TheNearestPrefixWins) {
  fs::create_directories(root_ / "share" / "kfleet" / "kernels" / "problems");
  fs::create_directories(root_ / "usr" / "share" / "kfleet" / "kernels" / "problems");
  EXPECT_EQ(kfleet::installed_data("kernels/problems", root_ / "usr" / "bin" / "kfleetd"),
            root_ / "usr" / "share" / "kfleet" / "kernels" / "problems");
  EXPECT_EQ(kfleet::installed_data("kernels/problems", root_ / "bin" / "kfleetd"),
            root_ / "share" / "kfleet" / "kernels" / "problems");
}

TEST(InstallLayoutSelf, TheRunningProgramIsKnown) {
  const fs::path self = kfleet::self_executable();
  ASSERT_FALSE(self.empty());
  EXPECT_TRUE(fs::is_regular_file(self)) << self;
  EXPECT_TRUE(self.is_absolute()) << self;
}

}  // namespace
