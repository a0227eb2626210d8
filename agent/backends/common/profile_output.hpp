#pragma once
// What the profilers print, as records: one per profiled kernel launch (ncu) or dispatch
// (rocprofv3), each with its metric values, and a summary over the launches of each kernel.
// The parsers never throw: malformed rows are skipped and counted, non-numeric values are kept
// as text, so whatever a profiler version prints becomes evidence or a note, never a failure.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kfleet::backends {

struct ProfileMetric {
  std::string name;
  std::optional<double> value;  // when the printed value is a number ("62,432" -> 62432)
  std::string text;             // as printed
  std::string unit;             // as printed: "ns", "byte", "%", "hz", "cycle", ...
  std::string section;          // ncu's section ("GPU Speed Of Light Throughput"); may be ""
};

// One of ncu's rule results (the rows of the details page with no metric name): advice such as
// SOLBottleneck, kept apart from the metrics.
struct ProfileAdvice {
  std::string rule, type, description;
};

struct ProfileLaunch {
  std::string id;      // ncu "ID", rocprofv3 "Dispatch_Id" (or the row number of a stats file)
  std::string kernel;  // as the profiler printed it: "axpy_kernel(float, const float *, ...)"
  std::string block, grid;
  std::vector<ProfileMetric> metrics;  // in the order printed
  std::vector<ProfileAdvice> advice;

  const ProfileMetric* find(const std::string& name) const;
};

struct ProfileOutput {
  std::vector<ProfileLaunch> launches;
  std::size_t skipped_rows = 0;  // rows that did not fit the header (truncated, garbled)
};

// ncu --csv output: the details page (long: one row per launch and metric, with rule rows) or
// the raw page (wide: a header of metric names, a row of units, a row per launch). Lines that
// are not CSV (==PROF== lines, the application's own output) are skipped.
ProfileOutput parse_ncu_csv(const std::string& text);

// rocprofv3 --kernel-trace --stats: <prefix>_kernel_stats.csv, one row per kernel name
// ("Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"); each
// row becomes a record whose metrics are those columns.
ProfileOutput parse_rocprofv3_stats(const std::string& text);

// rocprofv3 --pmc A B: <prefix>_counter_collection.csv, long format, one row per dispatch and
// counter; each dispatch becomes a record with its counters and "Duration" (End - Start, ns).
ProfileOutput parse_rocprofv3_counters(const std::string& text);

struct MetricSummary {
  std::string name, unit;
  double median = 0, min = 0, max = 0;
  std::size_t n = 0;  // launches with a numeric value
};

struct KernelSummary {
  std::string kernel;    // as printed
  std::size_t launches = 0;
  std::vector<MetricSummary> metrics;  // in the order first seen; numeric metrics only
};

// Per kernel (in the order first seen), per metric: median, min, max over its launches.
std::vector<KernelSummary> summarize_profile(const std::vector<ProfileLaunch>& launches);

// "axpy_kernel(float, const float *, float *, int)" -> "axpy_kernel";
// "void (anonymous namespace)::tile<64>(float*) [clone .kd]" -> "tile";
// "<unnamed>::attention_rows(kfleet_attention_args)" (ncu's spelling) -> "attention_rows".
// For display, and to match a profiler's names with the compiler's.
std::string kernel_short_name(const std::string& printed);

// The number in a profiler's cell, or nullopt: thousands separators are accepted ("1,024.5"),
// "n/a", "", "inf" and garbage are not numbers.
std::optional<double> parse_profile_number(const std::string& text);

// One RFC 4180 record per element, quotes removed ("a,""b""" -> a,"b"). Records may span lines
// inside quotes; `text` is split into records first by the callers.
std::vector<std::string> split_csv_record(const std::string& record);

// The JSON the profile stage stores. A launch keeps at most `max_metrics` metrics, those named
// in `first` (in that order) before the rest; the summary keeps at most `max_metrics` per kernel
// the same way and `max_kernels` kernels.
nlohmann::json launch_to_json(const ProfileLaunch& l, std::size_t max_metrics,
                              const std::vector<std::string>& first = {});
nlohmann::json summary_to_json(const std::vector<KernelSummary>& s, std::size_t max_kernels,
                               std::size_t max_metrics, const std::vector<std::string>& first = {});

}  // namespace kfleet::backends
