// openapi.yaml and the server's route table must describe the same API, both ways.
#include <set>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "kfleet/api/server.hpp"

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(OpenApi, DocumentsExactlyTheServedRoutes) {
  YAML::Node doc = YAML::LoadFile(std::string(KFLEET_SOURCE_DIR) + "/orchestrator/api/openapi.yaml");
  ASSERT_TRUE(doc["paths"].IsMap());
  std::set<std::string> documented;
  for (const auto& p : doc["paths"])
    for (const auto& m : p.second)
      documented.insert(lower(m.first.as<std::string>()) + " " + p.first.as<std::string>());
  std::set<std::string> served;
  for (const auto& r : kfleet::api::route_table())
    if (r.path.rfind("/api/", 0) == 0) served.insert(lower(r.method) + " " + r.path);
  for (const auto& s : served) EXPECT_TRUE(documented.count(s)) << "served but not documented: " << s;
  for (const auto& d : documented) EXPECT_TRUE(served.count(d)) << "documented but not served: " << d;
  EXPECT_GE(served.size(), 15u);
}

TEST(OpenApi, EveryOperationDocumentsItsResponses) {
  YAML::Node doc =
      YAML::LoadFile(std::string(KFLEET_SOURCE_DIR) + "/orchestrator/api/openapi.yaml");
  for (const auto& p : doc["paths"])
    for (const auto& m : p.second) {
      EXPECT_TRUE(m.second["responses"].IsMap())
          << m.first.as<std::string>() << " " << p.first.as<std::string>();
      EXPECT_TRUE(m.second["summary"].IsScalar()) << p.first.as<std::string>();
    }
}

}  // namespace
