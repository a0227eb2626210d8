#include "integrity.hpp"

#include "bench_summary.hpp"
#include "json_line.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace kfleet::harness {
namespace {

std::string us_text(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

const char* activity_kind_name(ActivityRecord::Kind k) {
  switch (k) {
    case ActivityRecord::kernel_kind: return "kernel";
    case ActivityRecord::memcpy_kind: return "memcpy";
    case ActivityRecord::memset_kind: return "memset";
    default: return "activity";
  }
}

SampleTiming judge_sample(const std::vector<ActivityRecord>& in_window,
                          const std::vector<ActivityRecord>& between, std::uint32_t harness_stream,
                          const SampleWindow& w, const CrossCheckBound& bound) {
  SampleTiming t;
  t.records = in_window.size();
  auto flag = [&](std::string why, bool structural = true) {
    if (t.suspect.empty()) {
      t.suspect = std::move(why);
      t.structural = structural;
    }
  };
  for (const auto& r : between) {
    if (r.stream != harness_stream) {
      flag(std::string("a ") + activity_kind_name(r.kind) + " ran on stream " + std::to_string(r.stream) +
           " between samples, outside every launch's window: work deferred past the stop event");
      break;
    }
  }
  if (in_window.empty()) {
    flag("the launch caused no GPU activity that could be recorded: its work ran outside the "
         "launch (a persistent kernel or another context?)");
    return t;
  }
  std::uint64_t first = in_window.front().start, last = in_window.front().end;
  std::set<std::uint32_t> streams;
  for (const auto& r : in_window) {
    first = std::min(first, r.start);
    last = std::max(last, r.end);
    streams.insert(r.stream);
  }
  t.streams = streams.size();
  t.span_us = last > first ? static_cast<double>(last - first) / 1000.0 : 0.0;
  t.lead_us = (static_cast<double>(first) - static_cast<double>(w.t0)) / 1000.0;
  std::map<std::pair<std::uint32_t, int>, WindowPart> parts;
  for (const auto& r : in_window) {
    WindowPart& p = parts[{r.stream, static_cast<int>(r.kind)}];
    p.kind = r.kind;
    p.stream = r.stream;
    ++p.records;
    p.busy_us += static_cast<double>(r.end > r.start ? r.end - r.start : 0) / 1000.0;
  }
  for (auto& [key, p] : parts) t.parts.push_back(p);
  // CUPTI converts GPU timestamps to the host clock; allow that conversion a little slack at the
  // window's edges (kEdgeNs) before calling activity early or late.
  constexpr std::uint64_t kEdgeNs = 50'000;
  if (first + kEdgeNs < w.t0)
    flag("GPU activity began " + us_text("%.1f", (w.t0 - first) / 1000.0) +
         " us before the sample did: work left running from an earlier launch (deferred or "
         "persistent work)");
  if (last > w.t1 + kEdgeNs)
    flag("GPU activity went on " + us_text("%.1f", (last - w.t1) / 1000.0) +
         " us after the device was synchronised: work the synchronisation did not wait for");
  // Idle time inside the span: the union of the records' intervals against the span.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> iv;
  for (const auto& r : in_window) iv.emplace_back(r.start, std::max(r.start, r.end));
  std::sort(iv.begin(), iv.end());
  for (std::size_t i = 1; i < iv.size(); ++i)
    t.gaps_us.push_back((static_cast<double>(iv[i].first) - static_cast<double>(iv[i - 1].second)) / 1000.0);
  std::uint64_t busy = 0, cur_s = iv.front().first, cur_e = iv.front().second;
  for (const auto& [s0, e0] : iv) {
    if (s0 > cur_e) {
      busy += cur_e - cur_s;
      cur_s = s0;
      cur_e = e0;
    } else {
      cur_e = std::max(cur_e, e0);
    }
  }
  busy += cur_e - cur_s;
  t.idle_us = t.span_us - static_cast<double>(busy) / 1000.0;
  const double slack = bound.slack(t.span_us, w.event_us);
  if (t.idle_us > bound.abs_us + bound.launch_overhead_us && t.idle_us > 0.5 * t.span_us)
    flag("the GPU sat idle for " + us_text("%.1f", t.idle_us) + " of the " + us_text("%.1f", t.span_us) +
             " us between the launch's first and last operation: the launch did its work on the "
             "host in between (host-side precompute?)",
         false);
  if (t.span_us > w.event_us + slack)
    flag("work outside the timing events: GPU activity spans " + us_text("%.1f", t.span_us) +
         " us on " + std::to_string(t.streams) + " stream(s) but the events saw " +
         us_text("%.1f", w.event_us) +
         " us (a side stream or graph the launch did not join, or work after the stop event)",
         false);
  else if (w.event_us > t.span_us + slack)
    flag("the events saw " + us_text("%.1f", w.event_us) + " us but GPU activity spans only " +
             us_text("%.1f", t.span_us) +
             " us: the launch's time went to host work before its GPU work (host-side precompute?)",
         false);
  const double wall_us = w.t1 > w.t0 ? (w.t1 - w.t0) / 1000.0 : 0.0;
  if (t.span_us > wall_us + 1.0)
    flag("GPU activity spans " + us_text("%.1f", t.span_us) + " us, longer than the host's " +
         us_text("%.1f", wall_us) + " us around the launch: clocks disagree");
  return t;
}

void WindowActivityLog::add(const SampleTiming& t) {
  if (t.records == 0) return;
  leads_.push_back(t.lead_us);
  if (leads_.size() == 1) gaps_.resize(t.gaps_us.size());  // the first sample sets the positions
  if (t.gaps_us.size() == gaps_.size())
    for (std::size_t i = 0; i < gaps_.size(); ++i) gaps_[i].push_back(t.gaps_us[i]);
  else
    gaps_differ_ = true;
  for (const WindowPart& w : t.parts) {
    auto it = std::find_if(parts_.begin(), parts_.end(),
                           [&](const Part& p) { return p.kind == w.kind && p.stream == w.stream; });
    if (it == parts_.end()) it = parts_.insert(parts_.end(), Part{w.kind, w.stream, 0, {}});
    it->records += w.records;
    it->busy_us.push_back(w.busy_us);
  }
}

std::string WindowActivityLog::json() const {
  std::string s = "[";
  for (const Part& p : parts_) {
    const double most = p.busy_us.empty() ? 0 : *std::max_element(p.busy_us.begin(), p.busy_us.end());
    s += (s.size() > 1 ? "," : "") +
         JsonLine("window_activity").str("kind", activity_kind_name(p.kind))
             .integer("stream", p.stream).integer("records", (long long)p.records)
             .integer("samples", (long long)p.busy_us.size())
             .num("median_busy_us", quantile(p.busy_us, 0.5)).num("max_busy_us", most).text();
  }
  return s + "]";
}

double WindowActivityLog::lead_median_us() const { return leads_.empty() ? 0 : quantile(leads_, 0.5); }

std::vector<double> WindowActivityLog::gap_medians_us() const {
  std::vector<double> m;
  if (gaps_differ_) return m;
  for (const auto& g : gaps_) m.push_back(quantile(g, 0.5));
  return m;
}

void split_at(const std::vector<ActivityRecord>& all, std::uint64_t t0, std::uint32_t harness_stream,
              std::vector<ActivityRecord>* between, std::vector<ActivityRecord>* in_window) {
  for (const auto& r : all)
    (r.end <= t0 || r.stream == harness_stream ? between : in_window)->push_back(r);
}

std::uint64_t sample_input_seed(std::uint64_t run_nonce, std::uint64_t sample_index) {
  return mix64(mix64(run_nonce) ^ (sample_index * 0xd1b54a32d192ed03ULL));
}

double dense_flops_per_sm_clock(const std::string& arch, bool fp8) {
  if (arch.rfind("sm_", 0) == 0) {
    const int cc = std::atoi(arch.c_str() + 3);
    if (cc >= 100) return fp8 ? 16384 : 8192;   // Blackwell
    if (cc >= 90) return fp8 ? 8192 : 4096;     // Hopper: H100 SXM 989 TFLOP/s fp16 at 1830 MHz
    if (cc == 89) return fp8 ? 2048 : 1024;     // Ada: L4 121 TFLOP/s fp16 at 2040 MHz
    if (cc >= 80) return 2048;                  // Ampere (no fp8): A100 312 TFLOP/s at 1410 MHz
    if (cc >= 70) return 1024;                  // Volta/Turing
    return 0;
  }
  if (arch.rfind("gfx94", 0) == 0 || arch.rfind("gfx95", 0) == 0)
    return fp8 ? 4096 : 2048;                   // CDNA3: MI300X 1307 TFLOP/s fp16
  if (arch.rfind("gfx9", 0) == 0) return 1024;  // CDNA1/2
  if (arch.rfind("gfx12", 0) == 0) return fp8 ? 2048 : 1024;
  if (arch.rfind("gfx11", 0) == 0) return 512;  // RDNA3/3.5 WMMA (no fp8 math)
  return 0;
}

Peaks device_peaks(const std::string& arch, int sm_count, double sm_clock_mhz, double peak_bw_gbs,
                   bool fp8_operands) {
  Peaks p;
  p.tflops = sm_count * sm_clock_mhz * 1e6 * dense_flops_per_sm_clock(arch, fp8_operands) / 1e12;
  p.gbs = peak_bw_gbs;
  p.tflops_basis = fp8_operands ? "fp8 dense tensor" : "fp16 dense tensor";
  return p;
}

FloorJudgement judge_floor(double median_us, double flops, double bytes, const Peaks& p,
                           double max_frac) {
  FloorJudgement j;
  const double floor_fl = p.tflops > 0 ? flops / (p.tflops * 1e6) : 0;
  const double floor_bw = p.gbs > 0 ? bytes / (p.gbs * 1e3) : 0;
  j.floor_us = std::max(floor_fl, floor_bw);
  if (!(median_us > 0)) {
    j.suspect = "the median is not a positive time";
    return j;
  }
  j.tflops_frac = p.tflops > 0 ? flops / (median_us * 1e6) / p.tflops : 0;
  j.gbs_frac = p.gbs > 0 ? bytes / (median_us * 1e3) / p.gbs : 0;
  if (j.tflops_frac > max_frac)
    j.suspect = "achieved " + us_text("%.1f", flops / (median_us * 1e6)) + " TFLOP/s is " +
                us_text("%.0f", 100 * j.tflops_frac) + " % of the " + p.tflops_basis + " peak " +
                us_text("%.1f", p.tflops) + " TFLOP/s (over " + us_text("%.0f", 100 * max_frac) +
                " % is not believed: the kernel skips work or fools the timer)";
  else if (j.gbs_frac > max_frac)
    j.suspect = "achieved " + us_text("%.1f", bytes / (median_us * 1e3)) + " GB/s is " +
                us_text("%.0f", 100 * j.gbs_frac) + " % of the memory bandwidth " +
                us_text("%.1f", p.gbs) + " GB/s (over " + us_text("%.0f", 100 * max_frac) +
                " % is not believed: the kernel skips reading its inputs or fools the timer)";
  return j;
}

std::vector<float> mean_of_v_output(const AttentionShape& s, const std::vector<double>& v,
                                    bool causal) {
  const std::size_t S = s.seq_len, D = s.head_dim, heads = (std::size_t)s.batch * s.heads;
  std::vector<float> out(heads * S * D);
  std::vector<double> acc(D);
  for (std::size_t h = 0; h < heads; ++h) {
    const double* vh = v.data() + h * S * D;
    float* oh = out.data() + h * S * D;
    if (!causal) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::size_t j = 0; j < S; ++j)
        for (std::size_t d = 0; d < D; ++d) acc[d] += vh[j * D + d];
      for (std::size_t i = 0; i < S; ++i)
        for (std::size_t d = 0; d < D; ++d) oh[i * D + d] = static_cast<float>(acc[d] / S);
      continue;
    }
    std::fill(acc.begin(), acc.end(), 0.0);  // prefix sums: row i sees keys 0..i
    for (std::size_t i = 0; i < S; ++i)
      for (std::size_t d = 0; d < D; ++d) {
        acc[d] += vh[i * D + d];
        oh[i * D + d] = static_cast<float>(acc[d] / (i + 1));
      }
  }
  return out;
}

std::string gate_strength_failure(const std::vector<double>& reference,
                                  const std::vector<DoNothing>& outputs, const Tolerance& tol,
                                  std::vector<std::pair<std::string, Metrics>>* scores,
                                  const std::vector<double>* terms) {
  std::string failure;
  const double* t = terms && terms->size() == reference.size() ? terms->data() : nullptr;
  for (const auto& o : outputs) {
    if (o.output.size() != reference.size()) continue;
    const Metrics m = compute_metrics(o.output.data(), reference.data(), reference.size());
    const std::size_t v = tol.atol >= 0 ? allclose_violations(o.output.data(), reference.data(),
                                                              reference.size(), tol.atol, tol.rtol,
                                                              t, tol.dot_rtol)
                                        : 0;
    if (scores) scores->emplace_back(o.name, m);
    if (failure.empty() && check_tolerance(m, v, tol).empty())
      failure = "refused: the tolerance is too loose to tell a kernel from a do-nothing output: " +
                o.name + " passes it (max_abs " + us_text("%.4g", m.max_abs) + ", max_rel " +
                us_text("%.4g", m.max_rel) + ", rel_l2 " + us_text("%.4g", m.rel_l2) +
                "); tighten it (e.g. rel_l2 well below " + us_text("%.3g", m.rel_l2) + ")";
  }
  return failure;
}

}  // namespace kfleet::harness
