// One kfleetd per SQLite file: a second one on the same file refuses to start and names the
// holder; once the holder is killed with -9, a restart on the file works and keeps its jobs.
#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

TEST(SingleWriter, SecondKfleetdOnTheSameFileRefusesAndNamesTheHolder) {
  Cluster c;
  c.start_kfleetd();
  auto id = c.submit_api(c.write_job("one", Cluster::sim_job_yaml("one")));

  auto second = run_cmd({KFLEETD_BIN, "--listen", "127.0.0.1:0", "--db", c.db_path()}, 20000);
  EXPECT_NE(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("in use by kfleetd pid " + std::to_string(c.kfleetd().pid())),
            std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find(c.url()), std::string::npos) << second.output;
  EXPECT_TRUE(c.kfleetd().running()) << "the holder must not be disturbed";

  c.kill_kfleetd();
  c.start_kfleetd();  // the kernel dropped the lock with its holder
  EXPECT_EQ(c.job(id)["job"]["id"], id) << c.logs();
}

}  // namespace
}  // namespace kfleet::e2e
