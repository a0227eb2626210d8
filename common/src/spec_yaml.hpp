#pragma once
// Typed, issue-collecting reads of yaml-cpp nodes for the job spec parser. Every read either
// returns a value or records a SpecIssue at the node's line and column and returns nullopt, so
// the parser keeps going and reports every problem at once.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/jobspec.hpp"

namespace kfleet::spec {

struct Issues {
  std::string file;
  std::vector<SpecIssue> list;
  void add(const YAML::Mark& at, std::string field, std::string message);
};

// The document's root, or nothing and a syntax issue (yaml-cpp's exception stops here).
std::optional<YAML::Node> load_document(Issues& is, const std::string& yaml_text);

// The node's own position, or `fallback` for nodes without one (missing keys).
YAML::Mark mark_of(const YAML::Node& n, const YAML::Mark& fallback);
std::string child(const std::string& path, std::string_view key);  // "a.b" + "c" -> "a.b.c"
std::string item(const std::string& path, std::size_t i);           // "a" + 2 -> "a[2]"
std::string describe(const YAML::Node& n);                          // "a list", "'abc'", ...

// A YAML map checked against the keys allowed at `level`: unknown and duplicate keys are
// recorded once, at construction. Lookups return an undefined Node for absent keys.
class MapReader {
 public:
  MapReader(Issues& issues, const YAML::Node& node, std::string path, std::string_view level,
            const YAML::Mark& fallback);
  // The same against an explicit key list (documents other than job files: problem.yaml).
  MapReader(Issues& issues, const YAML::Node& node, std::string path,
            const std::vector<std::string>& allowed, const YAML::Mark& fallback);
  bool is_map() const { return is_map_; }
  bool has(std::string_view key) const;
  YAML::Node get(std::string_view key) const;
  std::string path(std::string_view key) const { return child(path_, key); }
  const YAML::Mark& mark() const { return mark_; }
  // Records "missing required field" at this map when `key` is absent.
  bool require(std::string_view key, std::string_view hint) const;

 private:
  Issues& issues_;
  std::string path_;
  YAML::Mark mark_;
  bool is_map_ = false;
  std::vector<std::pair<std::string, YAML::Node>> entries_;
};

// Reads of one value. `at` is the position to blame when the node has none.
std::optional<std::string> read_string(Issues& is, const YAML::Node& n, const std::string& path,
                                       const YAML::Mark& at);
std::optional<std::int64_t> read_int(Issues& is, const YAML::Node& n, const std::string& path,
                                     const YAML::Mark& at, std::int64_t lo, std::int64_t hi);
// Range check: lo < x (or lo <= x when lo_inclusive) and x <= hi.
std::optional<double> read_number(Issues& is, const YAML::Node& n, const std::string& path,
                                  const YAML::Mark& at, double lo, bool lo_inclusive, double hi);
std::optional<bool> read_bool(Issues& is, const YAML::Node& n, const std::string& path,
                              const YAML::Mark& at);
std::optional<std::string> read_enum(Issues& is, const YAML::Node& n, const std::string& path,
                                     const YAML::Mark& at, const std::vector<std::string>& allowed);
std::optional<std::vector<std::string>> read_string_list(Issues& is, const YAML::Node& n,
                                                         const std::string& path,
                                                         const YAML::Mark& at);
// Any YAML value as JSON: plain scalars become numbers/bools/null where they parse as such.
nlohmann::json to_json_value(const YAML::Node& n);

}  // namespace kfleet::spec
