#include "kfleet/cli/versus_view.hpp"

#include <cstdio>
#include <set>

#include "json_fields.hpp"
#include "kfleet/common/versus.hpp"

namespace kfleet::cli {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string versus_brief(const nlohmann::json& versus) {
  if (!versus.is_array() || versus.empty()) return "-";
  std::string out;
  for (const auto& j : versus) {
    const BaselineComparison c = baseline_comparison_from_json(j);
    char buf[32];
    std::string one = baseline_label(c.baseline);
    if (c.speedup) {
      std::snprintf(buf, sizeof buf, "%.2fx ", *c.speedup);
      one = buf + one;
    } else {
      one += " -";
    }
    out += (out.empty() ? "" : ", ") + one;
  }
  return out;
}

std::string versus_detail(const nlohmann::json& versus, const std::string& indent) {
  if (!versus.is_array() || versus.empty()) return "";
  std::string out;
  std::set<std::string> keys;
  for (const auto& j : versus) {
    const BaselineComparison c = baseline_comparison_from_json(j);
    std::string line = format_comparison(c);
    if (c.speedup) {
      std::string more;
      if (c.reference_us) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "reference %.3g µs", *c.reference_us);
        more = buf;
      }
      more += std::string(more.empty() ? "" : ", ") + (c.cached ? "cached" : "timed in this run");
      if (c.simulated) more += ", simulated";
      line += " (" + more + ")";
    } else if (c.simulated) {
      line += " [simulated]";
    }
    out += (out.empty() ? "" : indent) + line + "\n";
    if (const std::string k = versus_key_text(c.key); !k.empty()) keys.insert(k);
  }
  for (const auto& k : keys) out += indent + "cached by: " + k + "\n";
  return out;
}

std::string versus_keys(const nlohmann::json& entries, const std::string& prefix) {
  if (!entries.is_array()) return "";
  std::set<std::string> seen;
  std::string out;
  for (const auto& e : entries)
    for (const auto& j : arr_field(e, "versus")) {
      const BaselineComparison c = baseline_comparison_from_json(j);
      const std::string k = versus_key_text(c.key);
      if (k.empty() || !seen.insert(baseline_label(c.baseline) + ": " + k).second) continue;
      out += prefix + baseline_label(c.baseline) + ": " + k + "\n";
    }
  return out;
}

}  // namespace kfleet::cli
