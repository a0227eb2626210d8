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
  for (const auto& r : kfleet::api::route_table()) served.insert(lower(r.method) + " " + r.path);
  for (const auto& s : served) EXPECT_TRUE(documented.count(s)) << "served but not documented: " << s;
  for (const auto& d : documented) EXPECT_TRUE(served.count(d)) << "documented but not served: " << d;
  EXPECT_GE(served.size(), 15u);
}

// The access rule the server enforces is the one the document declares.
TEST(OpenApi, AccessRulesMatchTheServer) {
  YAML::Node doc = YAML::LoadFile(std::string(KFLEET_SOURCE_DIR) + "/orchestrator/api/openapi.yaml");
  int checked = 0;
  for (const auto& r : kfleet::api::route_table()) {
    YAML::Node op = doc["paths"][r.path][lower(r.method)];
    ASSERT_TRUE(op.IsMap()) << r.method << " " << r.path;
    EXPECT_EQ(op["x-kfleet-access"].as<std::string>(""), r.access) << r.method << " " << r.path;
    // Only /api/v1/health is open.
    if (r.access == "open") {
      EXPECT_EQ(r.path, "/api/v1/health");
    }
    ++checked;
  }
  EXPECT_GE(checked, 28);
}

// Every response with a body names its schema (a client generator needs it), and every
// $ref points at something that exists.
TEST(OpenApi, EveryResponseBodyHasASchema) {
  YAML::Node doc = YAML::LoadFile(std::string(KFLEET_SOURCE_DIR) + "/orchestrator/api/openapi.yaml");
  for (const auto& p : doc["paths"])
    for (const auto& m : p.second)
      for (const auto& resp : m.second["responses"]) {
        const std::string where = m.first.as<std::string>() + " " + p.first.as<std::string>() +
                                  " " + resp.first.as<std::string>();
        YAML::Node r = resp.second;
        if (r["$ref"]) {
          const std::string ref = r["$ref"].as<std::string>();
          ASSERT_EQ(ref.rfind("#/components/responses/", 0), 0u) << where;
          r = doc["components"]["responses"][ref.substr(23)];
          ASSERT_TRUE(r.IsMap()) << where << ": no " << ref;
        }
        if (resp.first.as<std::string>() == "204") continue;
        ASSERT_TRUE(r["content"].IsMap()) << where << ": no content";
        for (const auto& c : r["content"]) {
          YAML::Node schema = c.second["schema"];
          ASSERT_TRUE(schema.IsMap()) << where << " " << c.first.as<std::string>();
          if (schema["$ref"]) {
            const std::string ref = schema["$ref"].as<std::string>();
            ASSERT_EQ(ref.rfind("#/components/schemas/", 0), 0u) << where;
            EXPECT_TRUE(doc["components"]["schemas"][ref.substr(21)].IsMap()) << where << ": " << ref;
          }
        }
      }
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
