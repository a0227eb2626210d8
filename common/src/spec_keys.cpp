#include "spec_keys.hpp"

#include <algorithm>
#include <cstdlib>

namespace kfleet::spec {

const std::vector<KeyTable>& key_tables() {
  static const std::vector<KeyTable> tables = {
      {"", {"name", "campaign", "parent", "priority", "target", "kernel", "gates", "benchmark",
            "profile", "simulate", "max_attempts", "timeout_s"}},
      {"target", {"gpu", "regions"}},
      {"kernel", {"problem", "family", "language", "sources", "entry", "defines", "flags", "params", "steps"}},
      {"kernel.steps", {"build", "test", "bench", "profile"}},
      {"gates", {"resources", "correctness", "performance"}},
      {"gates.resources",
       {"max_registers", "max_shared_bytes", "max_spill_bytes", "max_stack_bytes", "max_vgprs",
        "max_sgprs", "max_lds_bytes", "max_scratch_bytes"}},
      {"gates.correctness", {"dtype", "cases", "tolerance"}},
      {"gates.correctness.cases[]", {"name", "shape", "seeds", "causal"}},
      {"gates.correctness.tolerance", {"atol", "rtol", "max_abs", "rel_l2"}},
      {"gates.performance", {"case", "metric", "compare_to", "threshold_pct"}},
      {"gates.performance.compare_to", {"job", "value_us", "value_ms", "label", "reference"}},
      {"benchmark",
       {"min_samples", "max_noise_pct", "max_time_s", "l2_flush", "warmup_max_s", "max_rounds",
        "min_rounds", "interleave", "processes", "host_exclusive"}},
      {"profile", {"tool", "metrics", "when"}},
      {"simulate", {"time_us", "noise_pct", "slower_pct", "eager_us", "compile_us", "fail_stage",
                    "fail_reason", "stage_ms"}},
  };
  return tables;
}

const std::vector<std::string>& keys_at(std::string_view level) {
  for (const auto& t : key_tables()) {
    if (t.level == level) return t.keys;
  }
  std::abort();  // the parser asked for a level the table does not know: a programming error
}

const std::vector<std::string>& families() {
  static const std::vector<std::string> v = {"attention", "scaled_mm", "custom"};
  return v;
}
const std::vector<std::string>& languages() {
  static const std::vector<std::string> v = {"cuda", "hip", "triton", "torch"};
  return v;
}
const std::vector<std::string>& metrics() {
  static const std::vector<std::string> v = {"time", "gflops", "tflops", "gbps"};
  return v;
}
const std::vector<std::string>& profile_tools() {
  static const std::vector<std::string> v = {"ncu", "rocprofv3"};
  return v;
}
const std::vector<std::string>& profile_whens() {
  static const std::vector<std::string> v = {"always", "rejected", "never"};
  return v;
}
const std::vector<std::string>& fail_stages() {
  static const std::vector<std::string> v = {"build",       "resources", "correctness",
                                             "performance", "crash",     "hang"};
  return v;
}

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string closest(std::string_view word, const std::vector<std::string>& allowed) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& a : allowed) {
    const auto d = edit_distance(word, a);
    if (d < best_d) {
      best_d = d;
      best = a;
    }
  }
  return best;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

}  // namespace kfleet::spec
