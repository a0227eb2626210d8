#pragma once
// A validator for the subset of JSON Schema (draft 2020-12) that docs/job-schema.json uses. It
// refuses keywords outside the subset, so the schema cannot quietly use something this test
// would ignore.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace kfleet::testing {

class SchemaSubset {
 public:
  explicit SchemaSubset(nlohmann::json root) : root_(std::move(root)) {}

  // Appends one line per violation ("path: why") and returns whether there were none.
  bool validate(const nlohmann::json& doc, std::vector<std::string>& errors) const {
    const auto before = errors.size();
    check(root_, doc, "$", errors);
    return errors.size() == before;
  }

  // Follows "$ref": "#/$defs/NAME" (the only form the schema uses).
  const nlohmann::json& resolve(const nlohmann::json& s) const {
    if (!s.contains("$ref")) return s;
    const std::string ref = s["$ref"];
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) throw std::runtime_error("unsupported $ref " + ref);
    return resolve(root_.at("$defs").at(ref.substr(prefix.size())));
  }

  // The properties the schema allows at an object node, across oneOf/anyOf branches.
  std::set<std::string> keys_of(const nlohmann::json& node) const {
    const auto& s = resolve(node);
    std::set<std::string> keys;
    if (s.contains("properties"))
      for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) keys.insert(it.key());
    for (const char* branch : {"oneOf", "anyOf"}) {
      if (!s.contains(branch)) continue;
      for (const auto& b : s[branch]) {
        auto more = keys_of(b);
        keys.insert(more.begin(), more.end());
      }
    }
    return keys;
  }

  // The object node at a parser key table's level ("" the root, "gates.correctness.cases[]" the
  // items of a list); null when the schema has no such level.
  const nlohmann::json* at_level(const std::string& level) const {
    const nlohmann::json* node = &root_;
    std::stringstream ss(level);
    std::string seg;
    while (!level.empty() && std::getline(ss, seg, '.')) {
      const bool list = seg.size() > 2 && seg.substr(seg.size() - 2) == "[]";
      if (list) seg.resize(seg.size() - 2);
      const auto& here = resolve(*node);
      if (!here.contains("properties") || !here["properties"].contains(seg)) return nullptr;
      node = &here["properties"][seg];
      if (list) node = &resolve(*node)["items"];
    }
    return node;
  }

 private:
  static bool has_type(const nlohmann::json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<long long>(v.get<double>())));
    if (t == "number") return v.is_number();
    throw std::runtime_error("unknown type " + t);
  }

  void check(const nlohmann::json& schema_in, const nlohmann::json& v, const std::string& at,
             std::vector<std::string>& errors) const {
    const nlohmann::json& s = resolve(schema_in);
    static const std::vector<std::string> known = {
        "$schema", "$id", "$defs", "$ref", "title", "description", "type", "properties",
        "required", "additionalProperties", "enum", "minimum", "maximum", "exclusiveMinimum",
        "minLength", "maxLength", "minItems", "minProperties", "items", "oneOf", "anyOf",
        "pattern", "propertyNames"};
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
        throw std::runtime_error("schema keyword outside the tested subset: " + it.key());
      }
    }
    auto fail = [&](const std::string& why) { errors.push_back(at + ": " + why); };
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array()) {
        for (const auto& t : s["type"]) ok = ok || has_type(v, t);
      } else {
        ok = has_type(v, s["type"]);
      }
      if (!ok) return fail("wrong type, want " + s["type"].dump() + ", have " + v.dump());
    }
    if (s.contains("enum") &&
        std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) {
      fail(v.dump() + " not in " + s["enum"].dump());
    }
    if (v.is_number()) {
      const double x = v.get<double>();
      if (s.contains("minimum") && x < s["minimum"].get<double>()) fail("below minimum");
      if (s.contains("maximum") && x > s["maximum"].get<double>()) fail("above maximum");
      if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) {
        fail("not above exclusiveMinimum");
      }
    }
    if (v.is_string()) {
      if (s.contains("minLength") && v.get<std::string>().size() < s["minLength"].get<std::size_t>()) fail("too short");
      if (s.contains("maxLength") && v.get<std::string>().size() > s["maxLength"].get<std::size_t>()) fail("too long");
      // "pattern" is an ECMAScript regex, unanchored (as JSON Schema says): std::regex's default.
      if (s.contains("pattern") &&
          !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
        fail("does not match pattern " + s["pattern"].get<std::string>());
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) fail("too few items");
      if (s.contains("items")) {
        for (std::size_t i = 0; i < v.size(); ++i) {
          check(s["items"], v[i], at + "[" + std::to_string(i) + "]", errors);
        }
      }
    }
    if (v.is_object()) {
      if (s.contains("minProperties") && v.size() < s["minProperties"].get<std::size_t>()) fail("too few properties");
      if (s.contains("required")) {
        for (const auto& r : s["required"]) {
          if (!v.contains(r.get<std::string>())) fail("missing required " + r.get<std::string>());
        }
      }
      for (auto it = v.begin(); it != v.end(); ++it) {
        const std::string sub = at + "." + it.key();
        if (s.contains("propertyNames")) check(s["propertyNames"], it.key(), sub + " (name)", errors);
        if (s.contains("properties") && s["properties"].contains(it.key())) {
          check(s["properties"][it.key()], it.value(), sub, errors);
        } else if (s.contains("additionalProperties")) {
          const auto& ap = s["additionalProperties"];
          if (ap.is_boolean()) {
            if (!ap.get<bool>()) fail("unknown property " + it.key());
          } else {
            check(ap, it.value(), sub, errors);
          }
        }
      }
    }
    auto count_matches = [&](const nlohmann::json& branches) {
      int n = 0;
      for (const auto& b : branches) {
        std::vector<std::string> ignored;
        check(b, v, at, ignored);
        n += ignored.empty() ? 1 : 0;
      }
      return n;
    };
    if (s.contains("oneOf") && count_matches(s["oneOf"]) != 1) fail("must match exactly one of oneOf");
    if (s.contains("anyOf") && count_matches(s["anyOf"]) < 1) fail("must match one of anyOf");
  }

  nlohmann::json root_;
};

// Each parser key table's keys are exactly what the schema allows at that level (tables: the
// parser's key_tables(), each a level and its keys).
template <class Tables>
void expect_schema_keys_are_the_parsers(const SchemaSubset& schema, const Tables& tables) {
  for (const auto& table : tables) {
    const nlohmann::json* node = schema.at_level(table.level);
    ASSERT_NE(node, nullptr) << "schema has no object level '" << table.level << "'";
    EXPECT_EQ(schema.keys_of(*node), std::set<std::string>(table.keys.begin(), table.keys.end()))
        << "level '" << table.level << "'";
  }
}

}  // namespace kfleet::testing
