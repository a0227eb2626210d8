#include "spec_yaml.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "spec_keys.hpp"

namespace kfleet::spec {

void Issues::add(const YAML::Mark& at, std::string field, std::string message) {
  SpecIssue s;
  s.file = file;
  s.line = at.line >= 0 ? at.line + 1 : 0;
  s.column = at.column >= 0 ? at.column + 1 : 0;
  s.field = std::move(field);
  s.message = std::move(message);
  list.push_back(std::move(s));
}

YAML::Mark mark_of(const YAML::Node& n, const YAML::Mark& fallback) {
  if (!n.IsDefined()) return fallback;
  const auto m = n.Mark();
  return m.line >= 0 ? m : fallback;
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string item(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined()) return "nothing";
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "empty";
    case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
    default: return "nothing";
  }
}

MapReader::MapReader(Issues& issues, const YAML::Node& node, std::string path,
                     std::string_view level, const YAML::Mark& fallback)
    : MapReader(issues, node, std::move(path), keys_at(level), fallback) {}

MapReader::MapReader(Issues& issues, const YAML::Node& node, std::string path,
                     const std::vector<std::string>& allowed, const YAML::Mark& fallback)
    : issues_(issues), path_(std::move(path)), mark_(mark_of(node, fallback)) {
  if (!node.IsMap()) {
    issues_.add(mark_, path_.empty() ? "(document)" : path_,
                "must be a map of key: value, not " + describe(node));
    return;
  }
  is_map_ = true;
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar()) {
      issues_.add(mark_of(key, mark_), path_, "keys must be plain words, not " + describe(key));
      continue;
    }
    const std::string k = key.Scalar();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string msg = "unknown key '" + k + "'";
      const auto near = closest(k, allowed);
      if (!near.empty()) msg += "; did you mean '" + near + "'?";
      msg += (near.empty() ? "; allowed: " : " allowed: ") + join_words(allowed);
      issues_.add(mark_of(key, mark_), child(path_, k), msg);
      continue;
    }
    if (!seen.insert(k).second) {
      issues_.add(mark_of(key, mark_), child(path_, k),
                  "key '" + k + "' appears twice; keep one");
      continue;
    }
    entries_.emplace_back(k, it->second);
  }
}

bool MapReader::has(std::string_view key) const { return get(key).IsDefined(); }

YAML::Node MapReader::get(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return v;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

bool MapReader::require(std::string_view key, std::string_view hint) const {
  if (!is_map_ || has(key)) return is_map_;
  issues_.add(mark_, child(path_, key),
              "missing required field '" + std::string(key) + "' (" + std::string(hint) + ")");
  return false;
}

namespace {

bool quoted(const YAML::Node& n) { return n.Tag() == "!"; }

bool expect_scalar(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
                   const char* what) {
  if (n.IsScalar()) return true;
  is.add(mark_of(n, at), path, std::string("must be ") + what + ", not " + describe(n));
  return false;
}

}  // namespace

std::optional<std::string> read_string(Issues& is, const YAML::Node& n, const std::string& path,
                                       const YAML::Mark& at) {
  if (!expect_scalar(is, n, path, at, "a string")) return std::nullopt;
  return n.Scalar();
}

std::optional<std::int64_t> read_int(Issues& is, const YAML::Node& n, const std::string& path,
                                     const YAML::Mark& at, std::int64_t lo, std::int64_t hi) {
  if (!expect_scalar(is, n, path, at, "a whole number")) return std::nullopt;
  const std::string& s = n.Scalar();
  std::int64_t v = 0;
  const char* b = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  const auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (quoted(n) || ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    is.add(mark_of(n, at), path,
           "must be a whole number, not " + std::string(quoted(n) ? "the string " : "") +
               describe(n) + (quoted(n) ? " (remove the quotes)" : ""));
    return std::nullopt;
  }
  if (v < lo || v > hi) {
    const bool open_top = hi == std::numeric_limits<std::int64_t>::max();
    is.add(mark_of(n, at), path,
           "is " + s + "; must be " +
               (open_top ? ">= " + std::to_string(lo)
                         : "between " + std::to_string(lo) + " and " + std::to_string(hi)));
    return std::nullopt;
  }
  return v;
}

std::optional<double> read_number(Issues& is, const YAML::Node& n, const std::string& path,
                                  const YAML::Mark& at, double lo, bool lo_inclusive, double hi) {
  if (!expect_scalar(is, n, path, at, "a number")) return std::nullopt;
  const std::string& s = n.Scalar();
  double v = 0;
  const char* b = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  const auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (quoted(n) || ec != std::errc() || p != s.data() + s.size() || s.empty() ||
      !std::isfinite(v)) {
    is.add(mark_of(n, at), path,
           "must be a number, not " + std::string(quoted(n) ? "the string " : "") + describe(n) +
               (quoted(n) ? " (remove the quotes)" : ""));
    return std::nullopt;
  }
  const bool low_ok = lo_inclusive ? v >= lo : v > lo;
  if (!low_ok || v > hi) {
    auto fmt = [](double d) {
      std::string t = std::to_string(d);
      while (t.size() > 1 && t.back() == '0') t.pop_back();
      if (!t.empty() && t.back() == '.') t.pop_back();
      return t;
    };
    is.add(mark_of(n, at), path,
           "is " + s + "; must be " + (lo_inclusive ? ">= " : "> ") + fmt(lo) + " and <= " +
               fmt(hi));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> read_bool(Issues& is, const YAML::Node& n, const std::string& path,
                              const YAML::Mark& at) {
  if (!expect_scalar(is, n, path, at, "true or false")) return std::nullopt;
  const std::string& s = n.Scalar();
  if (!quoted(n)) {
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  is.add(mark_of(n, at), path, "must be true or false, not " + describe(n));
  return std::nullopt;
}

std::optional<std::string> read_enum(Issues& is, const YAML::Node& n, const std::string& path,
                                     const YAML::Mark& at, const std::vector<std::string>& allowed) {
  auto s = read_string(is, n, path, at);
  if (!s) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *s) != allowed.end()) return s;
  std::string msg = "'" + *s + "' is not one of: " + join_words(allowed);
  const auto near = closest(*s, allowed);
  if (!near.empty()) msg += "; did you mean '" + near + "'?";
  is.add(mark_of(n, at), path, msg);
  return std::nullopt;
}

std::optional<std::vector<std::string>> read_string_list(Issues& is, const YAML::Node& n,
                                                         const std::string& path,
                                                         const YAML::Mark& at) {
  if (!n.IsSequence()) {
    is.add(mark_of(n, at), path, "must be a list like [a, b], not " + describe(n));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (std::size_t i = 0; i < n.size(); ++i) {
    auto s = read_string(is, n[i], item(path, i), mark_of(n, at));
    if (s) out.push_back(*s);
    else ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<YAML::Node> load_document(Issues& is, const std::string& yaml_text) {
  try {
    return YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp reports syntax errors as exceptions; they stop at this boundary as an issue.
    is.add(e.mark, "(syntax)", "YAML syntax error: " + e.msg);
    return std::nullopt;
  }
}

nlohmann::json to_json_value(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json j = nlohmann::json::object();
      for (auto it = n.begin(); it != n.end(); ++it) j[it->first.Scalar()] = to_json_value(it->second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& v : n) j.push_back(to_json_value(v));
      return j;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (quoted(n)) return s;
      if (s == "true") return true;
      if (s == "false") return false;
      if (s == "null" || s == "~") return nullptr;
      std::int64_t i = 0;
      auto r = std::from_chars(s.data(), s.data() + s.size(), i);
      if (r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty()) return i;
      double d = 0;
      auto rd = std::from_chars(s.data(), s.data() + s.size(), d);
      if (rd.ec == std::errc() && rd.ptr == s.data() + s.size() && !s.empty() && std::isfinite(d)) {
        return d;
      }
      return s;
    }
    default:
      return nullptr;
  }
}

}  // namespace kfleet::spec
