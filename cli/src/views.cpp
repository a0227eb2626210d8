#include "kfleet/cli/views.hpp"

#include "kfleet/cli/change_view.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "ansi.hpp"
#include "json_fields.hpp"
#include "kfleet/cli/progress.hpp"
#include "kfleet/cli/versus_view.hpp"
#include "kfleet/common/language.hpp"

namespace kfleet::cli {

std::size_t display_width(const std::string& s) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b) {  // skip "ESC [ ... m"
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++w;  // count lead bytes only: one column per code point
  }
  return w;
}

void TextTable::add_row(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string TextTable::render() const {
  std::vector<std::size_t> widths(header_.size());
  for (std::size_t i = 0; i < header_.size(); ++i) widths[i] = display_width(header_[i]);
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], display_width(r[i]));
  std::string out;
  auto emit = [&](const std::vector<std::string>& r) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(widths[i] - display_width(r[i]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(header_);
  for (const auto& r : rows_) emit(r);
  return out;
}

TimeMs parse_iso8601_ms(const std::string& s) {
  int y, mo, d, h, mi;
  double sec;
  if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6) return -1;
  // days_from_civil (H. Hinnant): exact for the proleptic Gregorian calendar.
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const long long days = era * 146097LL + static_cast<long long>(doe) - 719468;
  return ((days * 24 + h) * 60 + mi) * 60'000 + static_cast<TimeMs>(sec * 1000 + 0.5);
}

std::string format_age(TimeMs span_ms) {
  if (span_ms < 0) return "-";
  const TimeMs s = span_ms / 1000;
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 86400) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string paint_state(const std::string& state, bool color) {
  if (state == "passed" || state == "idle") return ansi::paint(state, ansi::green, color);
  if (state == "rejected" || state == "error" || state == "lost") return ansi::paint(state, ansi::red, color);
  if (state == "waiting_capacity" || state == "cancelled") return ansi::paint(state, ansi::yellow, color);
  return state;
}

namespace {

std::string age_of(const nlohmann::json& obj, const char* key, TimeMs now) {
  const std::string ts = str_field(obj, key);
  const TimeMs t = ts.empty() ? -1 : parse_iso8601_ms(ts);
  return t < 0 ? "-" : format_age(now - t);
}

std::string or_dash(std::string s) { return s.empty() ? "-" : s; }

// "rejected performance: do not merge: ..." for a finished job, its waiting reason otherwise.
std::string job_reason(const nlohmann::json& job) {
  const auto& v = obj_field(job, "verdict");
  if (!v.empty() && !str_field(v, "reason").empty()) {
    std::string gate = str_field(v, "gate");
    return (gate.empty() ? "" : gate + ": ") + first_line(str_field(v, "reason"));
  }
  return str_field(job, "state_reason");
}

std::string sim_mark(const nlohmann::json& obj) { return bool_field(obj, "simulated") ? "simulated" : ""; }

std::string signed_pct(double v) { return (v >= 0 ? "+" : "") + fixed(v, 1) + "%"; }

}  // namespace

std::string render_jobs(const nlohmann::json& body, TimeMs now, bool color) {
  const auto& jobs = arr_field(body, "jobs");
  if (jobs.empty()) return "no jobs\n";
  // A problem's kernel against kfleet's PyTorch references gets a column of its own.
  bool versus = false;
  for (const auto& j : jobs) versus = versus || !arr_field(obj_field(j, "verdict"), "versus").empty();
  std::vector<std::string> header = {"ID", "NAME", "GPU", "STATE", "REASON/VERDICT"};
  if (versus) header.push_back("VS PYTORCH");
  header.insert(header.end(), {"ATTEMPTS", "AGE"});
  TextTable t(header);
  for (const auto& j : jobs) {
    std::string attempts = str_field(j, "attempts");
    if (auto max = str_field(j, "max_attempts"); !max.empty()) attempts += "/" + max;
    std::string name = str_field(j, "name") + (bool_field(j, "simulated") ? " [sim]" : "");
    std::vector<std::string> row = {str_field(j, "id"), name, str_field(j, "gpu"),
                                    paint_state(str_field(j, "state"), color), or_dash(job_reason(j))};
    if (versus) row.push_back(versus_brief(arr_field(obj_field(j, "verdict"), "versus")));
    row.insert(row.end(), {attempts, age_of(j, "created", now)});
    t.add_row(row);
  }
  return t.render();
}

// One kernel a Python launch ran: "NAME (job: HOW)" or "NAME (library: FILE PACKAGE)".
std::string kernel_origin_text(const nlohmann::json& k) {
  std::string name = str_field(k, "function");
  if (name.size() > 64) name = name.substr(0, 61) + "...";
  const bool library = str_field(k, "origin") == "library";
  std::string where = library ? str_field(k, "file") : str_field(k, "how");
  if (library && !str_field(k, "package").empty()) where += (where.empty() ? "" : " ") + str_field(k, "package");
  return name + " (" + (library ? "library" : "job") + (where.empty() ? "" : ": " + where) + ")";
}

std::string render_job_detail(const nlohmann::json& body, TimeMs now, bool color) {
  const auto& job = obj_field(body, "job");
  std::string out;
  auto field = [&](const std::string& label, const std::string& value) {
    if (!value.empty()) out += label + std::string(label.size() < 10 ? 10 - label.size() : 1, ' ') + value + "\n";
  };
  field("job", str_field(job, "id") + " " + str_field(job, "name"));
  field("campaign", str_field(job, "campaign"));
  field("parent", str_field(job, "parent"));
  std::string regions;
  for (const auto& r : arr_field(job, "regions")) regions += (regions.empty() ? "" : ", ") + r.get<std::string>();
  field("gpu", str_field(job, "gpu") + (regions.empty() ? "" : " (" + regions + ")"));
  field("state", paint_state(str_field(job, "state"), color) +
                     (str_field(job, "state_reason").empty() ? "" : ": " + first_line(str_field(job, "state_reason"))));
  field("attempts", str_field(job, "attempts") + "/" + str_field(job, "max_attempts"));
  field("submitter", str_field(job, "submitted_by"));
  if (!str_field(job, "cancelled_by").empty()) field("cancelled", "by " + str_field(job, "cancelled_by"));
  field("age", age_of(job, "created", now));
  if (const auto& v = obj_field(job, "verdict"); !v.empty()) {
    // Its reason's last line (the comparison with PyTorch) lines up under the verdict.
    std::string line = format_verdict_line(v, color);
    for (std::size_t p = 0; (p = line.find('\n', p)) != std::string::npos; p += 11) line.insert(p + 1, 10, ' ');
    field("verdict", line);
    // Each comparison with its reference's median and the key its timing is cached by.
    if (const std::string d = versus_detail(arr_field(v, "versus"), std::string(10, ' ')); !d.empty())
      field("versus", d.substr(0, d.size() - 1));
    // What its correctness stage checked: the cases it ran, and kfleet's GPU reference against
    // the fp64 CPU reference (a problem of the library).
    const auto& m = obj_field(v, "metrics");
    std::string cases;
    for (const auto& c : arr_field(m, "cases")) {
      std::string seeds;
      for (const auto& s : arr_field(c, "seeds")) seeds += (seeds.empty() ? "" : ",") + s.dump();
      cases += (cases.empty() ? "" : ", ") + str_field(c, "name") + " (seeds " + seeds + ")" +
               (c.value("pass", false) ? "" : " FAILED");
    }
    field("cases", cases);
    const auto& ref = obj_field(m, "reference_check");
    if (!ref.empty())
      field("reference", std::string(ref.value("pass", false) ? "GPU = fp64 CPU reference" : "GPU != fp64 CPU reference") +
                             " on " + str_field(ref, "case") + " seed " + str_field(ref, "seed") +
                             (ref.value("simulated", false) ? " [simulated]" : "") +
                             (str_field(ref, "reason").empty() ? "" : ": " + str_field(ref, "reason")));
    // A Python kernel's launch: each kernel it ran, and where its device code came from (the
    // recorder's report: the job's own code, or a library with its file and version).
    const auto& launched = obj_field(m, "kernels");
    std::string ks;
    std::size_t shown = 0;
    const auto& list = arr_field(launched, "kernels");
    for (const auto& k : list) {
      if (++shown > kKernelsShown) break;
      ks += (ks.empty() ? "" : std::string(10, ' ')) + kernel_origin_text(k) + "\n";
    }
    const std::size_t more = (list.size() > kKernelsShown ? list.size() - kKernelsShown : 0) +
                             static_cast<std::size_t>(launched.value("more", 0));
    if (more) ks += std::string(10, ' ') + "and " + std::to_string(more) + " more (kfleet --json status)\n";
    if (!ks.empty()) field("kernels", ks.substr(0, ks.size() - 1));
  }
  // Submitted as parent + change: the one change, with its diff against the parent.
  if (job.contains("change") && job["change"].is_object())
    out += "change    " + render_change_text(job["change"], "  ");
  const auto& runs = arr_field(body, "runs");
  if (runs.empty()) return out;
  TextTable t({"RUN", "AGENT", "ATTEMPT", "OUTCOME", "STAGE", "VERDICT", "STARTED", "SIM"});
  for (const auto& r : runs) {
    const auto& v = obj_field(r, "verdict");
    t.add_row({str_field(r, "id"), str_field(r, "agent_id"), str_field(r, "attempt"),
               paint_state(str_field(r, "outcome"), color), or_dash(str_field(r, "stage")),
               v.empty() ? "-" : first_line(format_verdict_line(v, false)), age_of(r, "started", now) + " ago",
               sim_mark(r)});
  }
  return out + "\n" + t.render();
}

// Who let an agent in: "fleet token", or the limited enrolment token's id and name and the
// admin who minted it ("#3 rack-2 (alice)"). "-" from a kfleetd that does not say.
static std::string enrolled_by(const nlohmann::json& agent) {
  const auto& by = obj_field(agent, "enrolled_by");
  const std::string kind = str_field(by, "kind");
  if (kind == "fleet_token") return "fleet token";
  if (kind != "enrol_token") return "-";
  std::string out = "#" + str_field(by, "enrol_token_id") + " " + str_field(by, "name");
  const std::string who = str_field(by, "minted_by");
  return who.empty() ? out : out + " (" + who + ")";
}

namespace {
std::string python_summary(const nlohmann::json& agent) {
  const auto& gpus = arr_field(agent, "gpus");
  if (gpus.empty() || !gpus[0].is_object() || !gpus[0].contains("extra")) return "-";
  return python_runtime_summary(gpus[0]["extra"]);
}
}  // namespace

std::string render_agents(const nlohmann::json& body, TimeMs now, bool color) {
  std::string out;
  const auto& agents = arr_field(body, "agents");
  if (agents.empty()) {
    out = "no agents enrolled\n";
  } else {
    // One agent serves one GPU (a slot of its host), so the fleet counts GPUs by agent.
    TextTable t({"ID", "NAME", "REGION", "HOST:GPU", "GPU", "BACKEND", "PYTHON", "STATE", "RUN",
                 "LAST SEEN", "ENROLLED BY", "SIM"});
    std::map<std::string, int> hosts;
    int gpus_total = 0, busy = 0, idle = 0;
    for (const auto& a : agents) {
      std::string gpus;
      for (const auto& g : arr_field(a, "gpus"))
        gpus += (gpus.empty() ? "" : ",") + str_field(g, "gpu_class") + "/" + str_field(g, "arch");
      const std::string run = str_field(a, "current_run_id");
      const std::string state = str_field(a, "state");
      const std::string host = str_field(a, "host");
      std::string slot = str_field(a, "slot");
      if (state != "retired") {
        ++gpus_total;
        ++hosts[host.empty() ? "agent:" + str_field(a, "id") : host];
        if (state == "busy") ++busy;
        if (state == "idle") ++idle;
      }
      t.add_row({str_field(a, "id"), str_field(a, "name"), str_field(a, "region"),
                 host.empty() ? "-" : host + ":" + (slot.empty() ? "0" : slot), or_dash(gpus),
                 // An agent that runs jobs without the job sandbox says so wherever it is listed.
                 str_field(a, "backend") +
                     (a.contains("info") && a["info"].is_object() &&
                              a["info"].value("sandboxed", true) == false
                          ? " UNSANDBOXED"
                          : ""),
                 // What its Python records (triton, torch jobs), or what it lacks.
                 python_summary(a),
                 paint_state(state, color),
                 run.empty() || run == "0" ? "-" : run, age_of(a, "last_seen", now) + " ago",
                 enrolled_by(a), sim_mark(a)});
    }
    out = t.render() + std::to_string(gpus_total) + " GPU(s) on " + std::to_string(hosts.size()) +
          " host(s): " + std::to_string(busy) + " busy, " + std::to_string(idle) + " idle\n";
  }
  const auto& blocks = arr_field(body, "blocks");
  if (blocks.empty()) return out;
  TextTable t({"PROVIDER", "REGION", "GPU", "KIND", "REASON", "TIME LEFT"});
  for (const auto& b : blocks) {
    auto left = num_field(b, "seconds_left");
    t.add_row({str_field(b, "provider"), str_field(b, "region"), or_dash(str_field(b, "gpu_class")),
               str_field(b, "kind"), str_field(b, "reason"),
               left ? format_age(static_cast<TimeMs>(*left * 1000)) : "-"});
  }
  return out + "\nregion blocks:\n" + t.render();
}

std::string render_results(const nlohmann::json& body, TimeMs now, bool color) {
  const auto& results = arr_field(body, "results");
  if (results.empty()) return "no finished runs\n";
  TextTable t({"RUN", "JOB", "GPU", "OUTCOME", "GATE", "MEDIAN", "DELTA [CI]", "SIM", "AGE"});
  for (const auto& r : results) {
    const auto& run = obj_field(r, "run");
    const auto& job = obj_field(r, "job");
    const auto& v = obj_field(run, "verdict");
    std::string outcome = str_field(v, "outcome");
    if (outcome.empty()) outcome = str_field(run, "outcome");
    auto med = num_field(v, "median_us");
    std::string delta = "-";
    if (auto d = num_field(v, "delta_pct")) {
      delta = signed_pct(*d);
      auto lo = num_field(v, "ci_low_pct"), hi = num_field(v, "ci_high_pct");
      if (lo && hi) delta += " [" + signed_pct(*lo) + ", " + signed_pct(*hi) + "]";
    }
    const bool sim = bool_field(run, "simulated") || bool_field(v, "simulated");
    t.add_row({str_field(run, "id"), str_field(job, "id") + " " + str_field(job, "name"),
               str_field(job, "gpu"), paint_state(outcome, color), or_dash(str_field(v, "gate")),
               med ? format_time_us(*med) : "-", delta, sim ? "simulated" : "",
               age_of(run, "finished", now)});
  }
  return t.render();
}

}  // namespace kfleet::cli
