// kfleetd serves the pages its build made (<build>/dashboards/dist, never the source tree)
// without being told; --dashboards takes built pages or a folder whose dist/ holds them, and
// refuses a folder with neither, so that the URL it prints never answers 404.
#include <filesystem>

#include <gtest/gtest.h>

#include "cluster.hpp"

namespace kfleet::e2e {
namespace {

namespace fs = std::filesystem;

std::string page(Cluster& c) {
  HttpClient h(c.url());
  auto r = h.get("/");
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return "";
  EXPECT_EQ(r->status, 200) << r->body;
  return r->body;
}

// <root>/dashboards/{src/index.html, dist/index.html}: a folder whose dist/ holds the pages.
std::string make_tree(const std::string& root) {
  const std::string d = root + "/dashboards";
  fs::create_directories(d + "/src");
  fs::create_directories(d + "/dist");
  write_file(d + "/src/index.html", "<p>source page</p>");
  write_file(d + "/dist/index.html", "<p>built page</p>");
  return d;
}

TEST(DashboardsFolder, TheSourceFolderServesItsBuiltPages) {
  const std::string root = make_temp_dir("kfleet-dash");
  ClusterOptions o;
  o.extra_args = {"--dashboards", make_tree(root)};
  Cluster c(o);
  c.start_kfleetd();
  EXPECT_NE(page(c).find("built page"), std::string::npos);
  fs::remove_all(root);
}

TEST(DashboardsFolder, TheBuiltFolderServesItself) {
  const std::string root = make_temp_dir("kfleet-dash");
  ClusterOptions o;
  o.extra_args = {"--dashboards", make_tree(root) + "/dist"};
  Cluster c(o);
  c.start_kfleetd();
  EXPECT_NE(page(c).find("built page"), std::string::npos);
  fs::remove_all(root);
}

TEST(DashboardsFolder, AKfleetdOfThisBuildServesTheBuildsPagesByItself) {
  Cluster c{ClusterOptions{}};
  c.start_kfleetd();
  const std::string body = page(c);
  EXPECT_NE(body.find("<title>kfleet</title>"), std::string::npos) << body;
  EXPECT_EQ(body.find("no dashboards directory was found"), std::string::npos) << body;
}

TEST(DashboardsFolder, AFolderWithoutPagesIsRefusedWithTheFix) {
  const std::string root = make_temp_dir("kfleet-dash");
  auto r = run_cmd({KFLEETD_BIN, "--listen", "127.0.0.1:0", "--db", root + "/k.db",
                    "--dashboards", root},
                   20000);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no index.html"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--target dashboards"), std::string::npos) << r.output;
  fs::remove_all(root);
}

}  // namespace
}  // namespace kfleet::e2e
