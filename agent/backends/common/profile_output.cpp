// Parsers for ncu's and rocprofv3's CSV output. Formats, as seen on real hardware and in the
// vendors' documentation:
//  - ncu --csv --page details (Nsight Compute 2025.3.1, captured on an H200, fixtures in
//    agent/backends/tests/profiles/): "ID","Process ID",...,"Kernel Name",...,"Block Size",
//    "Grid Size",...,"Section Name","Metric Name","Metric Unit","Metric Value"[,"Rule Name",
//    "Rule Type","Rule Description",...]; one row per launch and metric; rule rows have an
//    empty Metric Name; metric rows may stop after "Metric Value" (a trailing comma); numbers
//    carry thousands separators ("62,432").
//  - ncu --csv --page raw: the same identity columns, then one column per metric; a second
//    row of units (empty ID); then one row per launch.
//  - rocprofv3 (ROCprofiler-SDK, docs/how-to/using-rocprofv3.rst in ROCm/rocprofiler-sdk and
//    ROCm/rocm-systems): --kernel-trace --stats writes <prefix>_kernel_stats.csv with
//    "Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"
//    (example output in amd/HPCTrainingExamples Rocprofv3/HIP/README.md); --pmc writes
//    [pmc_N/]<prefix>_counter_collection.csv with "Correlation_Id","Dispatch_Id","Agent_Id",
//    "Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id","Kernel_Name",
//    "Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count",
//    "SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp" (older
//    releases lack Kernel_Id and Accum_VGPR_Count; columns are found by name).
#include "common/profile_output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>

#include "common/resources.hpp"
#include "kfleet/common/stats.hpp"

namespace kfleet::backends {
namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool odd_quotes(const std::string& s) {
  return std::count(s.begin(), s.end(), '"') % 2 == 1;
}

// Splits text into CSV records; a record continues onto the next line while a quote is open
// (for at most 20 lines, so a stray quote cannot swallow the file). With `quoted_only`, lines
// that do not start with a quote are not CSV (ncu quotes every field; the application's output
// and ncu's ==PROF== lines are interleaved when it writes to stdout).
std::vector<std::string> csv_records(const std::string& text, bool quoted_only, std::size_t& skipped) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (t.empty()) continue;
    if (quoted_only && t[0] != '"') continue;
    std::string rec = lines[i];
    std::size_t j = i;
    while (odd_quotes(rec) && j + 1 < lines.size() && j - i < 20) rec += "\n" + lines[++j];
    if (odd_quotes(rec)) {  // an unterminated quote: this line alone is garbage
      ++skipped;
      continue;
    }
    out.push_back(std::move(rec));
    i = j;
  }
  return out;
}

int column(const std::vector<std::string>& header, const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

std::string cell(const std::vector<std::string>& row, int i) {
  return i >= 0 && static_cast<std::size_t>(i) < row.size() ? row[i] : "";
}

ProfileMetric metric(std::string name, const std::string& text, std::string unit, std::string section) {
  ProfileMetric m;
  m.name = std::move(name);
  m.text = text;
  m.value = parse_profile_number(text);
  m.unit = std::move(unit);
  m.section = std::move(section);
  return m;
}

// The identity columns of ncu's pages; every other column of the raw page is a metric.
bool ncu_identity_column(const std::string& c) {
  static const char* const names[] = {"ID", "Process ID", "Process Name", "Host Name",
                                      "Kernel Name", "Kernel Time", "Context", "Stream",
                                      "Block Size", "Grid Size", "Device", "CC", "Section Name",
                                      "Metric Name", "Metric Unit", "Metric Value", "Rule Name",
                                      "Rule Type", "Rule Description", "Estimated Speedup Type",
                                      "Estimated Speedup"};
  for (const char* n : names)
    if (c == n) return true;
  return false;
}

void parse_ncu_details(const std::vector<std::vector<std::string>>& rows,
                       const std::vector<std::string>& h, ProfileOutput& out) {
  const int id = column(h, "ID"), pid = column(h, "Process ID"), kernel = column(h, "Kernel Name"),
            block = column(h, "Block Size"), grid = column(h, "Grid Size"),
            section = column(h, "Section Name"), mname = column(h, "Metric Name"),
            munit = column(h, "Metric Unit"), mvalue = column(h, "Metric Value"),
            rname = column(h, "Rule Name"), rtype = column(h, "Rule Type"),
            rdesc = column(h, "Rule Description");
  const std::size_t needed = static_cast<std::size_t>(std::max({id, kernel, mname, mvalue})) + 1;
  std::map<std::string, std::size_t> index;  // process/ID -> launch
  for (const auto& r : rows) {
    // Metric rows may stop after the value; anything shorter, or longer than the header, is
    // not one of ncu's rows.
    if (r.size() < needed || r.size() > h.size() || cell(r, id).empty()) {
      ++out.skipped_rows;
      continue;
    }
    const std::string key = cell(r, pid) + "/" + cell(r, id);
    auto it = index.find(key);
    if (it == index.end()) {
      ProfileLaunch l;
      l.id = cell(r, id);
      l.kernel = cell(r, kernel);
      l.block = cell(r, block);
      l.grid = cell(r, grid);
      it = index.emplace(key, out.launches.size()).first;
      out.launches.push_back(std::move(l));
    }
    ProfileLaunch& l = out.launches[it->second];
    const std::string name = cell(r, mname);
    if (!name.empty()) {
      l.metrics.push_back(metric(name, cell(r, mvalue), cell(r, munit), cell(r, section)));
    } else if (!cell(r, rname).empty()) {
      l.advice.push_back({cell(r, rname), cell(r, rtype), cell(r, rdesc)});
    }
  }
}

void parse_ncu_raw(const std::vector<std::vector<std::string>>& rows,
                   const std::vector<std::string>& h, ProfileOutput& out) {
  const int id = column(h, "ID"), kernel = column(h, "Kernel Name"), block = column(h, "Block Size"),
            grid = column(h, "Grid Size");
  std::vector<std::string> units(h.size());
  bool have_units = false;
  for (const auto& r : rows) {
    if (r.size() != h.size()) {
      ++out.skipped_rows;
      continue;
    }
    if (cell(r, id).empty()) {  // the units row
      if (!have_units) units = r;
      have_units = true;
      continue;
    }
    ProfileLaunch l;
    l.id = cell(r, id);
    l.kernel = cell(r, kernel);
    l.block = cell(r, block);
    l.grid = cell(r, grid);
    for (std::size_t i = 0; i < h.size(); ++i) {
      if (ncu_identity_column(h[i]) || h[i].empty()) continue;
      l.metrics.push_back(metric(h[i], r[i], units[i], ""));
    }
    out.launches.push_back(std::move(l));
  }
}

// Reads a whole CSV file (rocprofv3 writes its own files: every line is CSV): header, rows.
bool read_table(const std::string& text, std::vector<std::string>& header,
                std::vector<std::vector<std::string>>& rows, std::size_t& skipped) {
  auto recs = csv_records(text, false, skipped);
  if (recs.empty()) return false;
  header = split_csv_record(recs[0]);
  for (std::size_t i = 1; i < recs.size(); ++i) rows.push_back(split_csv_record(recs[i]));
  return true;
}

std::string strip_suffixes(std::string s) {
  s = trim(s);
  for (;;) {  // " [clone .kd]" (rocprof), ".kd" (code-object symbols)
    auto c = s.rfind(" [clone ");
    if (c != std::string::npos && !s.empty() && s.back() == ']') {
      s = trim(s.substr(0, c));
      continue;
    }
    if (s.size() > 3 && s.compare(s.size() - 3, 3, ".kd") == 0) {
      s.resize(s.size() - 3);
      continue;
    }
    return s;
  }
}

}  // namespace

const ProfileMetric* ProfileLaunch::find(const std::string& name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

std::optional<double> parse_profile_number(const std::string& text) {
  static const std::regex re(R"(^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?$)");
  const std::string t = trim(text);
  if (t.empty() || t.size() > 64 || !std::regex_match(t, re)) return std::nullopt;
  std::string plain;
  for (char ch : t)
    if (ch != ',') plain += ch;
  if (plain.find_first_of("0123456789") == std::string::npos) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(plain.c_str(), &end);
  if (end == plain.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string> split_csv_record(const std::string& rec) {
  std::vector<std::string> out;
  std::string f;
  bool quoted = false;
  for (std::size_t i = 0; i < rec.size(); ++i) {
    const char ch = rec[i];
    if (quoted) {
      if (ch == '"') {
        if (i + 1 < rec.size() && rec[i + 1] == '"') {
          f += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        f += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(std::move(f));
      f.clear();
    } else if (ch != '\r') {
      f += ch;
    }
  }
  out.push_back(std::move(f));
  return out;
}

ProfileOutput parse_ncu_csv(const std::string& text) {
  ProfileOutput out;
  auto recs = csv_records(text, true, out.skipped_rows);
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  for (const auto& rec : recs) {
    auto fields = split_csv_record(rec);
    if (header.empty()) {
      // Everything before the header (a CSV line of the application's, say) is not ncu's.
      if (!fields.empty() && fields[0] == "ID" && column(fields, "Kernel Name") >= 0) header = fields;
      continue;
    }
    if (fields == header) continue;  // a second process's table repeats the header
    rows.push_back(std::move(fields));
  }
  if (header.empty()) return out;
  if (column(header, "Metric Name") >= 0 && column(header, "Metric Value") >= 0) {
    parse_ncu_details(rows, header, out);
  } else {
    parse_ncu_raw(rows, header, out);
  }
  return out;
}

ProfileOutput parse_rocprofv3_stats(const std::string& text) {
  ProfileOutput out;
  std::vector<std::string> h;
  std::vector<std::vector<std::string>> rows;
  if (!read_table(text, h, rows, out.skipped_rows)) return out;
  const int name = column(h, "Name");
  if (name < 0) {
    out.skipped_rows += rows.size();
    return out;
  }
  std::size_t n = 0;
  for (const auto& r : rows) {
    if (r.size() != h.size() || cell(r, name).empty()) {
      ++out.skipped_rows;
      continue;
    }
    ProfileLaunch l;
    l.id = std::to_string(n++);
    l.kernel = cell(r, name);
    for (std::size_t i = 0; i < h.size(); ++i) {
      if (static_cast<int>(i) == name) continue;
      const std::string& c = h[i];
      std::string unit = c == "Percentage" ? "%"
                         : c == "Calls"    ? ""
                         : (c.size() > 2 && c.compare(c.size() - 2, 2, "Ns") == 0) || c == "StdDev" ? "ns"
                                                                                                  : "";
      l.metrics.push_back(metric(c, r[i], unit, "kernel_stats"));
    }
    out.launches.push_back(std::move(l));
  }
  return out;
}

ProfileOutput parse_rocprofv3_counters(const std::string& text) {
  ProfileOutput out;
  std::vector<std::string> h;
  std::vector<std::vector<std::string>> rows;
  if (!read_table(text, h, rows, out.skipped_rows)) return out;
  int id = column(h, "Dispatch_Id");
  if (id < 0) id = column(h, "Correlation_Id");
  const int kernel = column(h, "Kernel_Name"), grid = column(h, "Grid_Size"),
            block = column(h, "Workgroup_Size"), name = column(h, "Counter_Name"),
            value = column(h, "Counter_Value"), start = column(h, "Start_Timestamp"),
            end = column(h, "End_Timestamp");
  if (id < 0 || kernel < 0 || name < 0 || value < 0) {
    out.skipped_rows += rows.size();
    return out;
  }
  std::map<std::string, std::size_t> index;
  for (const auto& r : rows) {
    if (r.size() != h.size() || cell(r, id).empty()) {
      ++out.skipped_rows;
      continue;
    }
    auto it = index.find(cell(r, id));
    if (it == index.end()) {
      ProfileLaunch l;
      l.id = cell(r, id);
      l.kernel = cell(r, kernel);
      l.block = cell(r, block);
      l.grid = cell(r, grid);
      auto t0 = parse_profile_number(cell(r, start)), t1 = parse_profile_number(cell(r, end));
      if (t0 && t1 && *t1 >= *t0) {
        ProfileMetric d;
        d.name = "Duration";
        d.value = *t1 - *t0;
        d.text = std::to_string(static_cast<long long>(*t1 - *t0));
        d.unit = "ns";
        d.section = "dispatch";
        l.metrics.push_back(std::move(d));
      }
      it = index.emplace(cell(r, id), out.launches.size()).first;
      out.launches.push_back(std::move(l));
    }
    out.launches[it->second].metrics.push_back(metric(cell(r, name), cell(r, value), "", "counters"));
  }
  return out;
}

std::vector<KernelSummary> summarize_profile(const std::vector<ProfileLaunch>& launches) {
  std::vector<KernelSummary> out;
  // kernel -> metric -> values, in first-seen order
  std::vector<std::vector<std::pair<std::string, std::vector<double>>>> values;
  for (const auto& l : launches) {
    auto k = std::find_if(out.begin(), out.end(), [&](const KernelSummary& s) { return s.kernel == l.kernel; });
    if (k == out.end()) {
      out.push_back({l.kernel, 0, {}});
      values.emplace_back();
      k = out.end() - 1;
    }
    const std::size_t ki = static_cast<std::size_t>(k - out.begin());
    ++k->launches;
    for (const auto& m : l.metrics) {
      if (!m.value) continue;
      auto& vs = values[ki];
      auto v = std::find_if(vs.begin(), vs.end(), [&](const auto& p) { return p.first == m.name; });
      if (v == vs.end()) {
        vs.push_back({m.name, {}});
        k->metrics.push_back({m.name, m.unit, 0, 0, 0, 0});
        v = vs.end() - 1;
      }
      v->second.push_back(*m.value);
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    for (std::size_t i = 0; i < out[k].metrics.size(); ++i) {
      auto s = stats::summarize(values[k][i].second);
      auto& m = out[k].metrics[i];
      m.median = s.median;
      m.min = s.min;
      m.max = s.max;
      m.n = s.n;
    }
  }
  return out;
}

std::string kernel_short_name(const std::string& printed) {
  std::string s = strip_suffixes(printed);
  if (s.rfind("_Z", 0) == 0) s = demangle(s);
  // An unnamed namespace: "(anonymous namespace)::" (c++filt) or "<unnamed>::" (ncu).
  for (const char* anon : {"(anonymous namespace)::", "<unnamed>::"}) {
    for (std::size_t p; (p = s.find(anon)) != std::string::npos;) s.erase(p, std::string(anon).size());
  }
  // The name ends at the parameter list: the first '(' outside template arguments.
  int depth = 0;
  std::size_t cut = s.size();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth <= 0) {
      cut = i;
      break;
    }
  }
  s = trim(s.substr(0, cut));
  // Drop template arguments and a return type ("void tile<64>" -> "tile").
  if (auto lt = s.find('<'); lt != std::string::npos) s = trim(s.substr(0, lt));
  if (auto sp = s.rfind(' '); sp != std::string::npos) s = s.substr(sp + 1);
  if (auto ns = s.rfind("::"); ns != std::string::npos) s = s.substr(ns + 2);
  return s.empty() ? trim(printed) : s;
}

namespace {

// Indices of `names` in priority order: those in `first` (in its order), then the rest.
template <class T>
std::vector<std::size_t> prioritized(const std::vector<T>& items, const std::vector<std::string>& first) {
  std::vector<std::size_t> order;
  for (const auto& f : first) {
    for (std::size_t i = 0; i < items.size(); ++i)
      if (items[i].name == f && std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  }
  for (std::size_t i = 0; i < items.size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  return order;
}

}  // namespace

nlohmann::json launch_to_json(const ProfileLaunch& l, std::size_t max_metrics,
                              const std::vector<std::string>& first) {
  nlohmann::json metrics = nlohmann::json::object();
  std::size_t kept = 0;
  for (std::size_t i : prioritized(l.metrics, first)) {
    if (kept == max_metrics) break;
    const auto& m = l.metrics[i];
    if (metrics.contains(m.name)) continue;
    nlohmann::json v = {{"unit", m.unit}};
    if (m.value) {
      v["value"] = *m.value;
    } else {
      v["value"] = m.text;
    }
    if (!m.section.empty()) v["section"] = m.section;
    metrics[m.name] = std::move(v);
    ++kept;
  }
  nlohmann::json j = {{"id", l.id}, {"kernel", l.kernel}, {"metrics", metrics}};
  if (!l.block.empty()) j["block"] = l.block;
  if (!l.grid.empty()) j["grid"] = l.grid;
  if (l.metrics.size() > kept) j["metrics_left_out"] = l.metrics.size() - kept;
  return j;
}

nlohmann::json summary_to_json(const std::vector<KernelSummary>& s, std::size_t max_kernels,
                               std::size_t max_metrics, const std::vector<std::string>& first) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t k = 0; k < s.size() && k < max_kernels; ++k) {
    nlohmann::json metrics = nlohmann::json::object();
    std::size_t kept = 0;
    for (std::size_t i : prioritized(s[k].metrics, first)) {
      if (kept == max_metrics) break;
      const auto& m = s[k].metrics[i];
      metrics[m.name] = {{"median", m.median}, {"min", m.min}, {"max", m.max}, {"n", m.n}, {"unit", m.unit}};
      ++kept;
    }
    nlohmann::json j = {{"kernel", s[k].kernel}, {"name", kernel_short_name(s[k].kernel)},
                        {"launches", s[k].launches}, {"metrics", metrics}};
    if (s[k].metrics.size() > kept) j["metrics_left_out"] = s[k].metrics.size() - kept;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace kfleet::backends
