// The change between a parent job and its child: files, defines, flags and any other field.
#include "kfleet/core/job_change.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace kfleet::core {

namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    auto nl = s.find('\n', start);
    if (nl == std::string::npos) {
      out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

bool looks_binary(const std::string& s) { return s.find('\0') != std::string::npos; }

// An edit script by longest common subsequence over lines, after trimming the common head and
// tail (a one-change child differs in a few lines, so the table stays small).
struct Op {
  char kind;  // ' ', '-', '+'
  std::string line;
};

std::vector<Op> edit_script(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  const std::size_t n = a.size() - head - tail, m = b.size() - head - tail;
  std::vector<Op> ops;
  for (std::size_t i = 0; i < head; ++i) ops.push_back({' ', a[i]});
  if (n * m > 4'000'000) {
    // Too large to align line by line: say it was all replaced rather than spend seconds.
    for (std::size_t i = 0; i < n; ++i) ops.push_back({'-', a[head + i]});
    for (std::size_t j = 0; j < m; ++j) ops.push_back({'+', b[head + j]});
  } else {
    std::vector<std::vector<std::uint32_t>> L(n + 1, std::vector<std::uint32_t>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;)
        L[i][j] = a[head + i] == b[head + j] ? L[i + 1][j + 1] + 1
                                             : std::max(L[i + 1][j], L[i][j + 1]);
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] == b[head + j]) {
        ops.push_back({' ', a[head + i]});
        ++i, ++j;
      } else if (i < n && (j == m || L[i + 1][j] >= L[i][j + 1])) {
        ops.push_back({'-', a[head + i]});  // removals first, as diff(1) writes them
        ++i;
      } else {
        ops.push_back({'+', b[head + j]});
        ++j;
      }
    }
  }
  for (std::size_t i = a.size() - tail; i < a.size(); ++i) ops.push_back({' ', a[i]});
  return ops;
}

void diff_fields(const nlohmann::json& a, const nlohmann::json& b, const std::string& at,
                 nlohmann::json& out) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const auto& k : keys) {
      const std::string field = at.empty() ? k : at + "." + k;
      diff_fields(a.contains(k) ? a[k] : nlohmann::json(), b.contains(k) ? b[k] : nlohmann::json(),
                  field, out);
    }
    return;
  }
  if (a != b) out.push_back({{"field", at}, {"from", a}, {"to", b}});
}

std::string define_text(const std::string& k, const nlohmann::json& v) {
  return k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after,
                         const std::string& path) {
  if (before == after) return "";
  std::string out = "--- a/" + path + "\n+++ b/" + path + "\n";
  if (looks_binary(before) || looks_binary(after))
    return out + "Binary file " + path + " differs\n";
  const auto a = split_lines(before), b = split_lines(after);
  const auto ops = edit_script(a, b);
  constexpr std::size_t kContext = 3;
  std::size_t k = 0;
  while (k < ops.size()) {
    while (k < ops.size() && ops[k].kind == ' ') ++k;
    if (k == ops.size()) break;
    // A hunk: from kContext before this change to kContext after the last change that is at
    // most 2*kContext unchanged lines from the previous one.
    std::size_t start = k >= kContext ? k - kContext : 0;
    std::size_t end = k;
    while (end < ops.size()) {
      std::size_t next = end;
      while (next < ops.size() && ops[next].kind != ' ') ++next;
      std::size_t same = next;
      while (same < ops.size() && ops[same].kind == ' ') ++same;
      if (same == ops.size() || same - next > 2 * kContext) {
        end = std::min(ops.size(), next + kContext);
        break;
      }
      end = same;
    }
    std::size_t a_line = 1, b_line = 1;
    for (std::size_t i = 0; i < start; ++i) {
      if (ops[i].kind != '+') ++a_line;
      if (ops[i].kind != '-') ++b_line;
    }
    std::size_t a_len = 0, b_len = 0;
    for (std::size_t i = start; i < end; ++i) {
      if (ops[i].kind != '+') ++a_len;
      if (ops[i].kind != '-') ++b_len;
    }
    out += "@@ -" + std::to_string(a_len ? a_line : a_line - 1) + "," + std::to_string(a_len) +
           " +" + std::to_string(b_len ? b_line : b_line - 1) + "," + std::to_string(b_len) +
           " @@\n";
    for (std::size_t i = start; i < end; ++i) out += ops[i].kind + ops[i].line + "\n";
    k = end;
  }
  return out;
}

nlohmann::json job_change(const nlohmann::json& parent_spec, const Bundle& parent_bundle,
                          const nlohmann::json& child_spec, const Bundle& child_bundle) {
  nlohmann::json files = nlohmann::json::array();
  std::map<std::string, const std::string*> before, after;
  for (const auto& f : parent_bundle.files) before[f.path] = &f.content;
  for (const auto& f : child_bundle.files) after[f.path] = &f.content;
  std::set<std::string> paths;
  for (const auto& [p, _] : before) paths.insert(p);
  for (const auto& [p, _] : after) paths.insert(p);
  for (const auto& p : paths) {
    const std::string* a = before.count(p) ? before[p] : nullptr;
    const std::string* b = after.count(p) ? after[p] : nullptr;
    if (a && b && *a == *b) continue;
    const std::string diff = unified_diff(a ? *a : "", b ? *b : "", p);
    int added = 0, removed = 0;
    for (const auto& line : split_lines(diff)) {
      if (line.rfind("+++", 0) == 0 || line.rfind("---", 0) == 0) continue;
      if (!line.empty() && line[0] == '+') ++added;
      if (!line.empty() && line[0] == '-') ++removed;
    }
    files.push_back({{"path", p},
                     {"status", !a ? "added" : !b ? "removed" : "replaced"},
                     {"added_lines", added},
                     {"removed_lines", removed},
                     {"diff", diff}});
  }

  const auto kernel_of = [](const nlohmann::json& s) {
    return s.contains("kernel") && s["kernel"].is_object() ? s["kernel"] : nlohmann::json::object();
  };
  const auto pk = kernel_of(parent_spec), ck = kernel_of(child_spec);
  const auto defs = [](const nlohmann::json& k) {
    return k.contains("defines") && k["defines"].is_object() ? k["defines"] : nlohmann::json::object();
  };
  const auto pd = defs(pk), cd = defs(ck);
  nlohmann::json d_added = nlohmann::json::object(), d_removed = nlohmann::json::object(),
                 d_changed = nlohmann::json::object();
  for (auto it = cd.begin(); it != cd.end(); ++it) {
    if (!pd.contains(it.key())) d_added[it.key()] = it.value();
    else if (pd[it.key()] != it.value())
      d_changed[it.key()] = {{"from", pd[it.key()]}, {"to", it.value()}};
  }
  for (auto it = pd.begin(); it != pd.end(); ++it)
    if (!cd.contains(it.key())) d_removed[it.key()] = it.value();

  const auto flags_of = [](const nlohmann::json& k) {
    std::vector<std::string> out;
    if (k.contains("flags") && k["flags"].is_array())
      for (const auto& f : k["flags"])
        if (f.is_string()) out.push_back(f.get<std::string>());
    return out;
  };
  const auto pf = flags_of(pk), cf = flags_of(ck);
  nlohmann::json f_added = nlohmann::json::array(), f_removed = nlohmann::json::array();
  for (const auto& f : cf)
    if (std::find(pf.begin(), pf.end(), f) == pf.end()) f_added.push_back(f);
  for (const auto& f : pf)
    if (std::find(cf.begin(), cf.end(), f) == cf.end()) f_removed.push_back(f);
  const bool flag_order_changed = f_added.empty() && f_removed.empty() && pf != cf;

  // Everything else: the spec minus what is not a change, and minus defines and flags.
  auto rest = [](nlohmann::json s) {
    if (!s.is_object()) return nlohmann::json::object();
    for (const char* k : {"name", "parent", "campaign", "priority"}) s.erase(k);
    if (s.contains("kernel") && s["kernel"].is_object()) {
      s["kernel"].erase("defines");
      s["kernel"].erase("flags");
    }
    return s;
  };
  nlohmann::json other = nlohmann::json::array();
  diff_fields(rest(parent_spec), rest(child_spec), "", other);
  if (flag_order_changed) other.push_back({{"field", "kernel.flags"}, {"from", pf}, {"to", cf}});

  nlohmann::json change = {
      {"files", files},
      {"defines", {{"added", d_added}, {"removed", d_removed}, {"changed", d_changed}}},
      {"flags", {{"added", f_added}, {"removed", f_removed}}},
      {"other", other}};
  change["summary"] = change_summary(change);
  return change;
}

bool change_is_empty(const nlohmann::json& c) {
  if (!c.is_object()) return true;
  const auto empty_at = [&](const char* a, const char* b) {
    return !c.contains(a) || !c[a].contains(b) || c[a][b].empty();
  };
  return (!c.contains("files") || c["files"].empty()) && empty_at("defines", "added") &&
         empty_at("defines", "removed") && empty_at("defines", "changed") &&
         empty_at("flags", "added") && empty_at("flags", "removed") &&
         (!c.contains("other") || c["other"].empty());
}

std::string change_summary(const nlohmann::json& c) {
  if (!c.is_object()) return "";
  std::vector<std::string> parts;
  std::string defs;
  const auto add = [](std::string& s, const std::string& piece) { s += (s.empty() ? "" : " ") + piece; };
  if (c.contains("defines") && c["defines"].is_object()) {
    const auto& d = c["defines"];
    if (d.contains("added"))
      for (auto it = d["added"].begin(); it != d["added"].end(); ++it)
        add(defs, "+" + define_text(it.key(), it.value()));
    if (d.contains("changed"))
      for (auto it = d["changed"].begin(); it != d["changed"].end(); ++it)
        add(defs, define_text(it.key(), it.value().value("from", nlohmann::json())) + "->" +
                      (it.value()["to"].is_string() ? it.value()["to"].get<std::string>()
                                                    : it.value()["to"].dump()));
    if (d.contains("removed"))
      for (auto it = d["removed"].begin(); it != d["removed"].end(); ++it) add(defs, "-" + it.key());
  }
  if (!defs.empty()) parts.push_back("kernel.defines " + defs);
  std::string flags;
  if (c.contains("flags") && c["flags"].is_object()) {
    for (const auto& f : c["flags"].value("removed", nlohmann::json::array()))
      add(flags, "-[" + f.get<std::string>() + "]");
    for (const auto& f : c["flags"].value("added", nlohmann::json::array()))
      add(flags, "+[" + f.get<std::string>() + "]");
  }
  if (!flags.empty()) parts.push_back("kernel.flags " + flags);
  if (c.contains("files") && c["files"].is_array())
    for (const auto& f : c["files"]) {
      const std::string status = f.value("status", "");
      std::string piece = f.value("path", "?");
      if (status == "added") piece += " (new)";
      else if (status == "removed") piece += " (removed)";
      else piece += " +" + std::to_string(f.value("added_lines", 0)) + " -" +
                    std::to_string(f.value("removed_lines", 0));
      parts.push_back(piece);
    }
  if (c.contains("other") && c["other"].is_array())
    for (const auto& o : c["other"]) parts.push_back(o.value("field", "?") + " changed");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out.empty() ? "no change" : out;
}

}  // namespace kfleet::core
