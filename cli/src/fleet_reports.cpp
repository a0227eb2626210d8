// Text and Markdown for regression runs, campaigns and run reports.
#include "fleet_reports.hpp"

#include "kfleet/cli/change_view.hpp"
#include "kfleet/cli/versus_view.hpp"
#include "kfleet/common/versus.hpp"

#include <cstdio>
#include <map>
#include <set>

namespace kfleet::cli {

namespace {

std::string str(const nlohmann::json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
}

std::string num(const nlohmann::json& j, const char* k, const char* fmt) {
  if (!j.is_object() || !j.contains(k) || !j[k].is_number()) return "";
  char b[64];
  std::snprintf(b, sizeof b, fmt, j[k].get<double>());
  return b;
}

std::string pct(const nlohmann::json& j, const char* k) { return num(j, k, "%+.1f%%"); }
std::string us(const nlohmann::json& j, const char* k) { return num(j, k, "%.1f µs"); }

std::string cell_text(const nlohmann::json& c) {
  std::string v = str(c, "verdict");
  if (v == "regressed") v = "REGRESSED";
  std::string d = pct(c, "delta_pct");
  if (!d.empty()) v += " " + d;
  if (!pct(c, "ci_low_pct").empty())
    v += " [" + pct(c, "ci_low_pct") + ", " + pct(c, "ci_high_pct") + "]";
  if (c.value("simulated", false)) v += " (sim)";
  if (c.contains("change_point") && c["change_point"].is_object())
    v += " cp:" + num(c["change_point"], "shift_pct", "%+.1f%%");
  return v;
}

struct Matrix {
  std::vector<std::string> kernels, classes;
  std::map<std::pair<std::string, std::string>, nlohmann::json> cells;
};

Matrix matrix(const nlohmann::json& reg) {
  Matrix m;
  std::set<std::string> ks, cs;
  for (const auto& c : reg.value("cells", nlohmann::json::array())) {
    const auto k = str(c, "kernel"), g = str(c, "gpu_class");
    if (ks.insert(k).second) m.kernels.push_back(k);
    if (cs.insert(g).second) m.classes.push_back(g);
    m.cells[{k, g}] = c;
  }
  return m;
}

}  // namespace

namespace {

// Against kfleet's PyTorch references: each cell's speedups, fast_p, and what the references'
// timings are cached by. "" when no cell is a problem's kernel.
std::string versus_section_text(const nlohmann::json& reg) {
  const std::string fp = fast_p_text(reg.value("fast_p", nlohmann::json()));
  if (fp.empty()) return "";
  std::string out = "\nagainst PyTorch (speedup over kfleet's references, per cell):\n";
  for (const auto& c : reg.value("cells", nlohmann::json::array()))
    if (c.contains("versus"))
      out += "  " + str(c, "kernel") + " on " + str(c, "gpu_class") + ": " + versus_line(c["versus"]) + "\n";
  return out + fp + versus_keys(reg.value("cells", nlohmann::json::array()), "reference timings cached by ");
}

}  // namespace

bool regression_has_regressed(const nlohmann::json& reg) {
  for (const auto& c : reg.value("cells", nlohmann::json::array()))
    if (str(c, "verdict") == "regressed") return true;
  return false;
}

std::string render_regression_text(const nlohmann::json& reg) {
  auto m = matrix(reg);
  std::string out = "regression run " + std::to_string(reg.value("id", 0)) + " (suite " +
                    str(reg, "suite") + ", " + str(reg, "state") + ", created " + str(reg, "created") + ")\n";
  std::vector<std::vector<std::string>> rows = {{"KERNEL"}};
  for (const auto& g : m.classes) rows[0].push_back(g);
  for (const auto& k : m.kernels) {
    std::vector<std::string> r = {k};
    for (const auto& g : m.classes) {
      auto it = m.cells.find({k, g});
      r.push_back(it == m.cells.end() ? "-" : cell_text(it->second));
    }
    rows.push_back(r);
  }
  std::vector<std::size_t> w(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i)
      out += r[i] + (i + 1 < r.size() ? std::string(w[i] - r[i].size() + 2, ' ') : "");
    out += "\n";
  }
  for (const auto& c : reg.value("cells", nlohmann::json::array()))
    if (str(c, "verdict") == "regressed")
      out += "regressed: " + str(c, "kernel") + " on " + str(c, "gpu_class") + " (job " +
             std::to_string(c.value("job_id", 0)) + "): " + first_line(str(c, "reason")) + "\n";
  return out + versus_section_text(reg);
}

namespace {

// fast_p as a table (p × reference), what the denominator is, and the cache keys.
std::string fast_p_markdown(const nlohmann::json& f, const nlohmann::json& entries) {
  if (fast_p_text(f).empty()) return "";
  const std::string n = std::to_string(f.value("kernels", 0));
  std::string out = "\n## Against PyTorch: fast_p\n\nThe share of kernels that are correct and more than p "
                    "times faster than kfleet's PyTorch reference of their problem, timed on the same "
                    "agent by the same replay. Denominator: " + n + " " + str(f, "of") + ".\n\n| p |";
  const auto& bs = f.value("baselines", nlohmann::json::array());
  for (const auto& b : bs) out += " vs " + str(b, "label") + " |";
  out += "\n|---|";
  for (std::size_t i = 0; i < bs.size(); ++i) out += "---|";
  out += "\n";
  for (double p : kFastPs) {
    char name[32];
    std::snprintf(name, sizeof name, "| fast_%g |", p);
    out += name;
    for (const auto& b : bs)
      for (const auto& x : b.value("p", nlohmann::json::array()))
        if (x.value("p", 0.0) == p)
          out += " " + std::to_string(x.value("fast", 0)) + "/" + n + " (" +
                 std::to_string(static_cast<int>(100 * x.value("share", 0.0) + 0.5)) + "%) |";
    out += "\n";
  }
  out += "\nWith a reference timing:";
  for (const auto& b : bs) out += " " + str(b, "label") + " " + std::to_string(b.value("timed", 0)) + " of " + n + ";";
  out.back() = '.';
  if (f.value("simulated", false)) out += " Some comparisons are simulated.";
  out += "\n";
  if (const std::string k = versus_keys(entries, "- "); !k.empty()) out += "\nReference timings cached by:\n\n" + k;
  return out;
}

}  // namespace

std::string render_regression_markdown(const nlohmann::json& reg) {
  auto m = matrix(reg);
  std::string out = "# Regression run " + std::to_string(reg.value("id", 0)) + ": suite `" +
                    str(reg, "suite") + "`\n\n";
  bool sim = false;
  for (const auto& c : reg.value("cells", nlohmann::json::array())) sim = sim || c.value("simulated", false);
  out += "- **Created**: " + str(reg, "created") + "\n- **State**: " + str(reg, "state") + "\n";
  out += std::string("- **Verdict**: ") +
         (regression_has_regressed(reg) ? "❌ regressions found" : "✅ no regression") + "\n";
  if (sim) out += "- **Simulated**: some results come from the simulated GPU backend\n";
  out += "\n## Matrix (kernel × GPU class)\n\n| Kernel |";
  for (const auto& g : m.classes) out += " " + g + " |";
  out += "\n|---|";
  for (std::size_t i = 0; i < m.classes.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& k : m.kernels) {
    out += "| `" + k + "` |";
    for (const auto& g : m.classes) {
      auto it = m.cells.find({k, g});
      out += " " + (it == m.cells.end() ? std::string("—") : cell_text(it->second)) + " |";
    }
    out += "\n";
  }
  out += "\n## Cells\n\n| Kernel | GPU class | Job | Verdict | Δ | 95% CI | Median | Baseline | vs PyTorch | Reason |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : reg.value("cells", nlohmann::json::array()))
    out += "| `" + str(c, "kernel") + "` | " + str(c, "gpu_class") + " | " +
           std::to_string(c.value("job_id", 0)) + " | " + str(c, "verdict") + " | " +
           pct(c, "delta_pct") + " | " +
           (pct(c, "ci_low_pct").empty() ? "" : "[" + pct(c, "ci_low_pct") + ", " + pct(c, "ci_high_pct") + "]") +
           " | " + us(c, "median_us") + " | " + us(c, "baseline_us") + " | " +
           (c.contains("versus") ? versus_line(c["versus"]) : std::string()) + " | " +
           first_line(str(c, "reason")) + " |\n";
  std::string regressed;
  for (const auto& c : reg.value("cells", nlohmann::json::array()))
    if (str(c, "verdict") == "regressed")
      regressed += "- **" + str(c, "kernel") + " on " + str(c, "gpu_class") + "**: " + pct(c, "delta_pct") +
                   " (" + us(c, "median_us") + " vs baseline " + us(c, "baseline_us") + "), job " +
                   std::to_string(c.value("job_id", 0)) + "\n";
  if (!regressed.empty()) out += "\n## Regressed\n\n" + regressed;
  return out + fast_p_markdown(reg.value("fast_p", nlohmann::json()), reg.value("cells", nlohmann::json::array()));
}

std::string render_campaign(const nlohmann::json& c) {
  auto line = [](const nlohmann::json& e) {
    std::string s = "- " + str(e, "name") + " (job " + std::to_string(e.value("job_id", 0)) + ")";
    const std::string change = e.contains("change_summary") ? str(e, "change_summary") : str(e, "change");
    if (!change.empty()) s += ": " + change;
    std::string d = pct(e, "delta_pct"), m = us(e, "median_us");
    if (!m.empty()) s += " -> " + m;
    if (!d.empty()) s += ", " + d;
    if (e.contains("versus") && e["versus"].is_array() && !e["versus"].empty()) s += "; " + versus_line(e["versus"]);
    if (e.value("simulated", false)) s += " [simulated]";
    return s;
  };
  std::string out = "Campaign " + str(c, "name") + " (" + std::to_string(c.value("jobs", 0)) + " jobs)\n\n";
  out += "Current best: ";
  if (c.contains("current_best") && c["current_best"].is_object()) out += line(c["current_best"]).substr(2) + "\n";
  else out += "none yet\n";
  out += "\n## High-Signal Kept Wins\n";
  if (c.value("kept_wins", nlohmann::json::array()).empty()) out += "(none)\n";
  for (const auto& e : c.value("kept_wins", nlohmann::json::array())) out += line(e) + ": KEEP\n";
  out += "\n## Important Rejections (Do Not Re-Run Without New Preconditions)\n";
  if (c.value("rejections", nlohmann::json::array()).empty()) out += "(none)\n";
  for (const auto& e : c.value("rejections", nlohmann::json::array()))
    out += line(e) + ": REJECT (" + first_line(str(e, "reason")) + ")\n";
  if (!c.value("no_repeat", nlohmann::json::array()).empty()) {
    out += "\n## No-Repeat Map (tried from the current best)\n";
    for (const auto& e : c["no_repeat"]) out += line(e) + ": " + str(e, "state") + "\n";
  }
  if (!c.value("pending", nlohmann::json::array()).empty()) {
    out += "\n## Pending\n";
    for (const auto& e : c["pending"]) out += line(e) + ": " + str(e, "state") + "\n";
  }
  if (const std::string fp = fast_p_text(c.value("fast_p", nlohmann::json())); !fp.empty()) {
    out += "\n## Against PyTorch\n" + fp;
    nlohmann::json all = nlohmann::json::array();
    for (const char* k : {"roots", "kept_wins", "rejections"})
      for (const auto& e : c.value(k, nlohmann::json::array())) all.push_back(e);
    out += versus_keys(all, "reference timings cached by ");
  }
  return out;
}

std::string render_run_report(const nlohmann::json& reply, const std::vector<nlohmann::json>& events) {
  const auto& run = reply.value("run", nlohmann::json::object());
  const auto& job = reply.value("job", nlohmann::json::object());
  const auto v = run.value("verdict", nlohmann::json::object());
  const std::string outcome = str(v, "outcome").empty() ? str(run, "outcome") : str(v, "outcome");
  std::string out = "# " + str(job, "name") + ": run " + std::to_string(run.value("id", 0)) + "\n\n";
  out += "**Job**: " + std::to_string(job.value("id", 0)) +
         (str(job, "campaign").empty() ? "" : " · **Campaign**: " + str(job, "campaign")) +
         (str(job, "parent").empty() ? "" : " · **Parent**: " + str(job, "parent")) + "\n";
  if (run.value("simulated", false) || v.value("simulated", false))
    out += "\n> Simulated: these numbers come from the simulated GPU backend, not hardware.\n";
  if (job.contains("change") && job["change"].is_object())
    out += "\n" + render_change_markdown(job["change"]);
  out += "\n---\n\n## Summary\n\n**Result**: " + str(v, "reason") + "\n\n**Verdict**: ";
  if (outcome == "passed") out += "✅ passed";
  else if (outcome == "rejected") out += "❌ **Do not merge**: rejected at " + str(v, "gate");
  else out += "⚠️ " + (outcome.empty() ? std::string("unfinished") : outcome);
  out += "\n\n---\n\n## Detailed Results\n";
  nlohmann::json resources, bench;
  std::vector<nlohmann::json> rows;
  std::map<std::string, nlohmann::json> finished;
  for (const auto& e : events) {
    const auto t = str(e, "type");
    const auto& d = e.value("data", nlohmann::json::object());
    if (t == "resources") resources = d;
    else if (t == "correctness") rows.push_back(d);
    else if (t == "bench.result") bench = d;
    else if (t == "stage.finished") finished[str(d, "stage")] = d;
  }
  // A gate fails where its stage failed, or where the verdict says so (the benchmark stage
  // itself succeeds when the performance gate rejects).
  auto gate_mark = [&](const std::string& stage, const std::string& gate) {
    if (outcome == "rejected" && str(v, "gate") == gate) return std::string(" ❌");
    auto it = finished.find(stage);
    if (it == finished.end()) return std::string(" (not run)");
    return it->second.value("ok", false) ? std::string(" ✅") : std::string(" ❌");
  };
  out += "\n### Gate 1: Resources" + gate_mark("resources", "resources") + "\n\n";
  if (resources.is_object() && resources.contains("kernels")) {
    out += "| Kernel | Registers | Shared bytes | Spill bytes |\n|---|---|---|---|\n";
    for (const auto& k : resources["kernels"])
      out += "| " + str(k, "name") + " | " + num(k, "registers", "%.0f") + " | " +
             num(k, "shared_bytes", "%.0f") + " | " + num(k, "spill_bytes", "%.0f") + " |\n";
    for (const auto& viol : resources.value("violations", nlohmann::json::array()))
      out += "\n- violation: " + (viol.is_string() ? viol.get<std::string>() : viol.dump());
  } else {
    out += "No resource data.\n";
  }
  out += "\n### Gate 2: Correctness" + gate_mark("correctness", "correctness") + "\n\n";
  if (!rows.empty()) {
    int pass = 0;
    out += "```\n";
    for (const auto& r : rows) {
      const bool ok = r.value("ok", false);
      pass += ok;
      char b[160];
      std::snprintf(b, sizeof b, "[%-8s] seed=%s: max_err=%s %s\n", str(r, "case").c_str(),
                    r.contains("seed") ? r["seed"].dump().c_str() : "?",
                    num(r, "max_abs", "%.4f").c_str(), ok ? "✅ PASS" : "❌ FAIL");
      out += b;
    }
    out += "```\n\n**" + std::string(pass == static_cast<int>(rows.size()) ? "Pass" : "Fail") + "**: " +
           std::to_string(pass) + "/" + std::to_string(rows.size()) + " checks.\n";
  } else {
    out += "No correctness data.\n";
  }
  out += "\n### Gate 3: Performance" + gate_mark("benchmark", "performance") + "\n\n";
  if (bench.is_object() && bench.contains("median_us")) {
    out += "```\n";
    if (!us(bench, "baseline_us").empty())
      out += "Baseline (" + (str(bench, "baseline_label").empty() ? std::string("baseline") : str(bench, "baseline_label")) +
             "): " + us(bench, "baseline_us") + "\n";
    out += "Candidate:  " + us(bench, "median_us") + " (median of " + num(bench, "n", "%.0f") + " samples)\n";
    if (!pct(bench, "delta_pct").empty())
      out += "Delta:      " + pct(bench, "delta_pct") + ", 95% CI [" + pct(bench, "ci_low_pct") + ", " +
             pct(bench, "ci_high_pct") + "] -> " + str(bench, "perf") + "\n";
    if (bench.contains("versus"))
      out += "vs PyTorch: " + versus_detail(bench["versus"], "            ");
    out += "```\n";
  } else {
    out += "No performance data.\n";
  }
  if (outcome == "rejected")
    out += "\n## Why it was rejected\n\n" + str(v, "gate") + ": " + str(v, "reason") + "\n";
  out += "\n---\n\n## Next Steps\n\n_Left for the author._\n";
  return out;
}

}  // namespace kfleet::cli
