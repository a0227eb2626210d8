#include "kfleet/cli/progress.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "ansi.hpp"
#include "json_fields.hpp"
#include "kfleet/cli/exit_code.hpp"
#include "kfleet/common/model.hpp"

namespace kfleet::cli {

std::string format_duration_ms(double ms) {
  if (ms < 1000) return fixed(ms, 0) + "ms";
  if (ms < 60'000) return fixed(ms / 1000, 1) + "s";
  const auto total_s = static_cast<long long>(std::llround(ms / 1000));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lldm%02llds", total_s / 60, total_s % 60);
  return buf;
}

std::string format_bytes(double bytes) {
  if (bytes < 1024) return fixed(bytes, 0) + " B";
  if (bytes < 1024.0 * 1024) return fixed(bytes / 1024, 1) + " KB";
  return fixed(bytes / (1024.0 * 1024), 1) + " MB";
}

std::string format_time_us(double us) {
  if (us < 1000) return fixed(us, 1) + " µs";
  if (us < 1'000'000) return fixed(us / 1000, 2) + " ms";
  return fixed(us / 1e6, 2) + " s";
}

namespace {

// Three significant digits: 183, 18.3, 1.83, 0.183.
std::string sig3(double v) {
  if (v == 0) return "0";
  const int mag = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  return fixed(v, std::max(0, 2 - mag));
}

// 93531 -> "93,531"
std::string grouped(double v) {
  std::string digits = fixed(std::fabs(v), 0), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string scaled(double v, const char* const* prefixes, std::size_t n, double step, const std::string& unit) {
  std::size_t i = 0;
  while (i + 1 < n && std::fabs(v) >= step) {
    v /= step;
    ++i;
  }
  return sig3(v) + " " + prefixes[i] + unit;
}

}  // namespace

std::string format_profile_value(double v, const std::string& unit) {
  std::string u = unit;
  for (auto& c : u) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* const si[] = {"", "K", "M", "G", "T", "P"};
  // ncu prints base units by default ("ns", "byte", "hz") but scaled ones when asked
  // ("usecond", "Mbyte", "Ghz"): bring both to base.
  auto base = [&](const std::string& stem, double& x) {
    const std::pair<const char*, double> pre[] = {{"", 1}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}};
    for (const auto& [p, f] : pre)
      if (u == std::string(p) + stem) {
        x *= f;
        return true;
      }
    return false;
  };
  double x = v;
  if (u == "ns" || u == "nsecond") return format_time_us(v / 1e3);
  if (u == "us" || u == "usecond") return format_time_us(v);
  if (u == "ms" || u == "msecond") return format_time_us(v * 1e3);
  if (u == "s" || u == "second") return format_time_us(v * 1e6);
  if (u == "%") return fixed(v, 1) + "%";
  if (base("byte", x)) return scaled(x, si, 6, 1000, "B");
  if (base("byte/second", x) || base("byte/s", x)) return scaled(x, si, 6, 1000, "B/s");
  if (base("hz", x)) return scaled(x, si, 5, 1000, "Hz");
  const bool integral = std::fabs(v) < 1e15 && v == std::floor(v);
  return (integral ? grouped(v) : sig3(v)) + (unit.empty() ? "" : " " + unit);
}

std::string format_verdict_line(const nlohmann::json& v, bool color) {
  std::string outcome = str_field(v, "outcome");
  if (outcome.empty()) outcome = str_field(v, "status");
  std::string word = outcome.empty() ? "VERDICT" : outcome;
  for (auto& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const char* tint = outcome == "passed" ? ansi::green : outcome == "rejected" ? ansi::red
                                                                                : ansi::yellow;
  std::string line = ansi::paint(word, tint, color);
  const std::string gate = str_field(v, "gate");
  if (!gate.empty()) line += " " + gate;
  std::string reason = str_field(v, "reason");
  if (reason.empty() && num_field(v, "median_us")) {
    reason = "median " + format_time_us(*num_field(v, "median_us"));
    if (auto d = num_field(v, "delta_pct")) reason += ", " + (*d >= 0 ? std::string("+") : "") + fixed(*d, 1) + "%";
  }
  // A problem's kernel's reason ends with a line of its own (how it compares with kfleet's
  // PyTorch references): the marks stay on the verdict's own line, that line follows.
  const auto nl = reason.find('\n');
  const std::string rest = nl == std::string::npos ? "" : reason.substr(nl);
  if (!reason.empty()) line += ": " + reason.substr(0, nl);
  if (bool_field(v, "simulated")) line += " [simulated]";
  if (bool_field(v, "self_reported")) line += " [self-reported]";
  if (bool_field(v, "unsandboxed")) line += " [unsandboxed]";
  return line + rest;
}

namespace {

std::string stage_tag(const std::string& stage) { return "[" + (stage.empty() ? "run" : stage) + "]"; }

std::string ok_word(bool ok, bool color) {
  return ok ? ansi::paint("ok", ansi::green, color) : ansi::paint("FAILED", ansi::red, color);
}

std::string sim_suffix(const nlohmann::json& d) {
  return bool_field(d, "simulated") ? " [simulated]" : "";
}

std::optional<double> first_num(const nlohmann::json& d, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (auto v = num_field(d, k)) return v;
  return std::nullopt;
}

std::string format_state(const nlohmann::json& d, bool color) {
  const std::string state = str_field(d, "state");
  const std::string reason = str_field(d, "reason");
  auto s = job_state_from_string(state);
  if (s && is_terminal(*s)) {
    std::string word = state;
    for (auto& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const char* tint = *s == JobState::passed ? ansi::green : ansi::red;
    return ansi::paint(word, tint, color) + (reason.empty() ? "" : ": " + reason);
  }
  return state + (reason.empty() ? "" : ": " + reason);
}

std::string format_decision(const nlohmann::json& d) {
  std::string line = "scheduler: " + str_field(d, "action");
  std::string agent = str_field(d, "agent");
  if (agent.empty()) agent = str_field(d, "agent_id");
  if (!agent.empty()) line += " agent " + agent;
  if (auto gpu = str_field(d, "gpu"); !gpu.empty()) line += " " + gpu;
  if (auto provider = str_field(d, "provider"); !provider.empty()) line += " via " + provider;
  if (auto region = str_field(d, "region"); !region.empty()) line += " in " + region;
  if (auto reason = str_field(d, "reason"); !reason.empty()) line += ": " + reason;
  return line;
}

std::string format_lease(const nlohmann::json& d) {
  std::string line = "leased to agent " + str_field(d, "agent_id");
  if (auto name = str_field(d, "agent_name"); !name.empty()) line += " " + name;
  const std::string where = str_field(d, "region");
  std::string gpu = str_field(d, "gpu_class");
  if (gpu.empty()) gpu = str_field(d, "gpu");
  if (!where.empty() || !gpu.empty())
    line += " (" + where + (where.empty() || gpu.empty() ? "" : ", ") + gpu + ")";
  if (auto attempt = str_field(d, "attempt"); !attempt.empty()) line += " attempt " + attempt;
  if (auto run = str_field(d, "run_id"); !run.empty()) line += ", run " + run;
  return line;
}

std::string format_stage_finished(const nlohmann::json& d, bool color) {
  std::string line = stage_tag(str_field(d, "stage")) + " " + ok_word(bool_field(d, "ok", true), color);
  if (auto ms = first_num(d, {"duration_ms", "elapsed_ms", "wall_ms"})) {
    line += " " + format_duration_ms(*ms);
  } else if (auto s = first_num(d, {"seconds", "duration_s", "elapsed_s"})) {
    line += " " + format_duration_ms(*s * 1000);
  }
  // kfleetd names the agent that ran the stage: with compile agents, not every stage ran on one.
  if (auto agent = str_field(d, "agent"); !agent.empty()) line += " on " + agent;
  if (auto reason = str_field(d, "reason"); !reason.empty()) line += ": " + reason;
  // No [simulated] here: the mark belongs on results, and every simulated event carries it.
  return line;
}

// One kernel's compiler resources: "regs 96 smem 37.1 KB spills 0".
std::string kernel_resources(const nlohmann::json& k) {
  std::string s;
  // Stack and scratch only matter when used; registers, smem and spills are always shown.
  auto add = [&](const char* label, std::optional<double> v, bool bytes, bool if_used = false) {
    if (!v || (if_used && *v == 0)) return;
    s += (s.empty() ? "" : " ") + std::string(label) + " " + (bytes && *v > 0 ? format_bytes(*v) : fixed(*v, 0));
  };
  add("regs", first_num(k, {"registers", "regs"}), false);
  add("smem", first_num(k, {"shared_bytes", "smem_bytes"}), true);
  add("spills", first_num(k, {"spill_bytes", "spill_store_bytes"}), true);
  add("stack", num_field(k, "stack_bytes"), true, true);
  add("vgprs", num_field(k, "vgprs"), false);
  add("sgprs", num_field(k, "sgprs"), false);
  add("lds", num_field(k, "lds_bytes"), true);
  add("scratch", num_field(k, "scratch_bytes"), true, true);
  return s;
}

std::string format_resources(const nlohmann::json& d, bool color) {
  std::string line = stage_tag("resources");
  if (auto skipped = str_field(d, "skipped"); !skipped.empty()) return line + " skipped: " + skipped;
  const auto& kernels = arr_field(d, "kernels");
  for (const auto& k : kernels) {
    std::string name = str_field(k, "name");
    if (kernels.size() > 1 && !name.empty()) line += " " + name + ":";
    line += " " + kernel_resources(k);
  }
  if (kernels.empty()) line += " " + kernel_resources(d);
  line += " " + ok_word(bool_field(d, "ok", true), color);
  std::string why;
  for (const auto& v : arr_field(d, "violations")) {
    std::string text = v.is_string() ? v.get<std::string>() : str_field(v, "reason");
    if (text.empty()) text = str_field(v, "message");
    if (!text.empty()) why += (why.empty() ? "" : "; ") + text;
  }
  if (!why.empty()) line += ": " + why;
  return line + sim_suffix(d);
}

std::string format_correctness(const nlohmann::json& d, bool color) {
  std::string line = stage_tag("correctness") + " " + str_field(d, "case");
  if (auto seed = str_field(d, "seed"); !seed.empty()) line += " seed=" + seed;
  // Metrics sit either in a "metrics" object or beside the case; print every number found.
  const auto& metrics = obj_field(d, "metrics");
  const nlohmann::json& src = metrics.empty() ? d : metrics;
  for (auto it = src.begin(); it != src.end(); ++it) {
    if (it.key() == "seed" || it.key() == "n" || !it->is_number() || it->is_boolean()) continue;
    line += " " + it.key() + "=" + compact(it->get<double>());
  }
  line += " " + ok_word(bool_field(d, "ok", true), color);
  if (auto reason = str_field(d, "reason"); !reason.empty()) line += ": " + reason;
  return line + sim_suffix(d);
}

std::string format_bench_result(const nlohmann::json& d) {
  std::string line = stage_tag("benchmark");
  for (const char* label : {"role", "label", "case"})
    if (auto v = str_field(d, label); !v.empty()) {
      line += " " + v;
      break;
    }
  if (auto med = num_field(d, "median_us")) line += " median " + format_time_us(*med);
  std::string extra;
  if (auto n = first_num(d, {"n", "samples", "count"})) extra = "n=" + fixed(*n, 0);
  if (auto noise = first_num(d, {"rel_stdev_pct", "noise_pct"}))
    extra += (extra.empty() ? "" : ", ") + std::string("±") + fixed(*noise, 1) + "%";
  if (!extra.empty()) line += " (" + extra + ")";
  if (auto g = num_field(d, "gflops")) line += " " + fixed(*g, 1) + " GFLOP/s";
  if (auto t = num_field(d, "tflops")) line += " " + fixed(*t, 2) + " TFLOP/s";
  if (bool_field(d, "suspect")) line += " SUSPECT: " + str_field(d, "suspect_reason");
  return line + sim_suffix(d);
}

// Short labels for ncu's SpeedOfLight rows and its common throughput metric.
std::string profile_label(const std::string& metric) {
  static const std::pair<const char*, const char*> labels[] = {
      {"Compute (SM) Throughput", "SM"},
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM"},
      {"Memory Throughput", "Memory"},
      {"DRAM Throughput", "DRAM"},
      {"L1/TEX Cache Throughput", "L1"},
      {"L2 Cache Throughput", "L2"},
      {"SM Frequency", "SM clock"},
      {"DRAM Frequency", "DRAM clock"}};
  for (const auto& [m, l] : labels)
    if (metric == m) return l;
  return metric;
}

// One kernel's summary: the GPU time first, then what the job asked for, then the
// SpeedOfLight throughputs, then the rest; at most `cap` of them.
std::string profile_kernel_line(const nlohmann::json& k, const nlohmann::json& requested, std::size_t cap) {
  const auto& metrics = obj_field(k, "metrics");
  std::vector<std::string> order;
  auto add = [&](const std::string& m) {
    if (metrics.contains(m) && std::find(order.begin(), order.end(), m) == order.end()) order.push_back(m);
  };
  add("gpu__time_duration.sum");
  if (order.empty()) add("Duration");  // ncu's SpeedOfLight row, or rocprofv3's dispatch time
  add("AverageNs");                    // rocprofv3's kernel stats
  for (const auto& r : requested)
    if (r.is_string()) add(r.get<std::string>());
  for (const char* m : {"Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput",
                        "L2 Cache Throughput", "L1/TEX Cache Throughput", "SM Frequency"})
    add(m);
  for (auto it = metrics.begin(); it != metrics.end(); ++it)
    if (it.key() != "Duration" || !metrics.contains("gpu__time_duration.sum")) add(it.key());
  std::string line;
  std::size_t shown = 0;
  for (const auto& m : order) {
    if (shown == cap) break;
    auto med = num_field(metrics[m], "median");
    if (!med) continue;
    line += (shown ? " · " : " ") + profile_label(m) + " " + format_profile_value(*med, str_field(metrics[m], "unit"));
    ++shown;
  }
  if (order.size() > shown) line += " (+" + std::to_string(order.size() - shown) + " more)";
  return line;
}

}  // namespace

std::string format_profile(const nlohmann::json& d, bool color, bool detail) {
  const std::string tag = stage_tag("profile");
  std::vector<std::string> lines;
  const auto& summary = arr_field(d, "summary");
  for (const auto& k : summary) {
    std::string name = str_field(k, "name");
    if (name.empty()) name = str_field(k, "kernel");
    lines.push_back(tag + " " + name + ":" + profile_kernel_line(k, arr_field(d, "metrics"), detail ? 12 : 6));
  }
  if (summary.empty()) {
    // The simulated backend (and older agents) send {"metrics": {name: value}}.
    const auto& flat = obj_field(d, "metrics");
    std::string values;
    for (auto it = flat.begin(); it != flat.end(); ++it)
      if (it->is_number()) values += (values.empty() ? " " : " · ") + it.key() + " " + compact(it->get<double>());
    std::string tool = str_field(d, "tool");
    if (!values.empty()) lines.push_back(tag + " " + (tool.empty() ? "metrics" : tool) + ":" + values);
  }
  for (const auto& a : arr_field(d, "advice")) {
    std::string text = str_field(a, "description");
    if (!detail && text.size() > 140) {
      std::size_t cut = 137;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
      text = text.substr(0, cut) + "...";
    }
    lines.push_back(tag + " " + ansi::paint("advice", ansi::yellow, color) + " " + str_field(a, "rule") +
                    ": " + text);
  }
  if (auto note = str_field(d, "note"); !note.empty()) {
    lines.push_back(tag + " " + (lines.empty() ? ansi::paint("no metric values", ansi::yellow, color) + ": " : "") + note);
  }
  if (detail && !str_field(d, "clock_note").empty()) lines.push_back(tag + " " + str_field(d, "clock_note"));
  if (lines.empty()) lines.push_back(tag + " " + (str_field(d, "tool").empty() ? "no data" : str_field(d, "tool") + ": no data"));
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l + sim_suffix(d);
  return out;
}

std::optional<std::string> format_event_line(const Event& e, const ProgressStyle& style) {
  const auto& d = e.data;
  const bool c = style.color;
  if (e.type == event_type::job_submitted) return "queued" + (str_field(d, "name").empty() ? "" : ": " + str_field(d, "name"));
  // lease.granted, just before, already says who holds the job.
  if (e.type == event_type::job_state && str_field(d, "state") == "leased") return std::nullopt;
  // Stage lines already show building/gating/benchmarking as they happen.
  if (e.type == event_type::job_state && !style.show_logs)
    if (auto s = job_state_from_string(str_field(d, "state")); s && is_active(*s)) return std::nullopt;
  if (e.type == event_type::job_state) return format_state(d, c);
  if (e.type == event_type::sched_decision) return format_decision(d);
  if (e.type == event_type::capacity) {
    std::string line = "capacity " + str_field(d, "region") + ": " + str_field(d, "outcome");
    if (auto m = str_field(d, "message"); !m.empty()) line += ": " + m;
    return line;
  }
  if (e.type == event_type::lease_granted) return format_lease(d);
  // The job.state line that follows gives the reason; this one marks the hand-off itself.
  if (e.type == event_type::run_handed_off)
    return "handed on: run " + str_field(d, "run_id") + " built it; the GPU stages go to a GPU agent";
  if (e.type == event_type::lease_lost) {
    std::string line = ansi::paint("lease lost", ansi::yellow, c) + ": agent " + str_field(d, "agent_id");
    if (auto r = str_field(d, "reason"); !r.empty()) line += ": " + r;
    return line;
  }
  if (e.type == event_type::stage_started) {
    if (!style.show_logs) return std::nullopt;  // --follow: a stage shows when it is done
    return stage_tag(str_field(d, "stage")) + " started";
  }
  if (e.type == event_type::stage_finished) {
    // The verdict line says it all; a passing verdict stage adds nothing to it.
    if (!style.show_logs && str_field(d, "stage") == "verdict" && bool_field(d, "ok", true))
      return std::nullopt;
    return format_stage_finished(d, c);
  }
  if (e.type == event_type::log_line) {
    if (!style.show_logs) return std::nullopt;
    std::string line = stage_tag(str_field(d, "stage")) + " " + str_field(d, "text");
    if (str_field(d, "stream") == "stderr") line = ansi::paint(line, ansi::dim, c);
    return line;
  }
  if (e.type == event_type::resources) return format_resources(d, c);
  if (e.type == event_type::correctness) return format_correctness(d, c);
  if (e.type == event_type::bench_sample) return std::nullopt;  // raw samples: results table
  if (e.type == event_type::bench_result) return format_bench_result(d);
  if (e.type == event_type::verdict) return format_verdict_line(d, c);
  if (e.type == "profile") return format_profile(d, c, style.show_logs);  // the agent's profile stage
  if (!style.show_logs) return std::nullopt;
  return e.type + " " + d.dump();  // unknown types: shown verbatim in `logs`
}

std::optional<std::string> ProgressFormatter::line(const Event& e) {
  if (e.type == event_type::sched_decision && str_field(e.data, "action") == "assign")
    last_assign_ = e.data;
  if (e.type != event_type::lease_granted) return format_event_line(e, style_);
  Event filled = e;
  auto& d = filled.data;
  if (str_field(d, "agent_id") == str_field(last_assign_, "agent_id")) {
    if (str_field(d, "region").empty()) d["region"] = str_field(last_assign_, "region");
    if (str_field(d, "agent_name").empty()) d["agent_name"] = str_field(last_assign_, "agent");
  }
  if (str_field(d, "gpu_class").empty() && str_field(d, "gpu").empty() && !gpu_.empty())
    d["gpu_class"] = gpu_;
  return format_event_line(filled, style_);
}

void JobOutcomeTracker::observe(const Event& e) {
  if (e.type == event_type::job_state) {
    if (auto code = exit_code_for_state_name(str_field(e.data, "state"))) terminal_state_ = code;
  } else if (e.type == event_type::verdict) {
    saw_verdict_ = true;
    std::string outcome = str_field(e.data, "status");
    if (outcome.empty()) outcome = str_field(e.data, "outcome");
    verdict_code_ = exit_code_for_state_name(outcome);
  }
}

std::optional<int> JobOutcomeTracker::exit_code() const {
  return terminal_state_ ? terminal_state_ : std::nullopt;
}

}  // namespace kfleet::cli
