#pragma once
// The profiler command lines the profile stage runs, and where each leaves its output. Pure
// functions, so the exact command is tested without a GPU or the profiler installed.
#include <string>
#include <vector>

#include "kfleet/common/jobspec.hpp"

namespace kfleet::backends {

struct ProfileCommand {
  std::vector<std::string> argv;
  std::string tool;    // "ncu" | "rocprofv3"
  std::string output;  // ncu: the CSV file (--log-file); rocprofv3: the directory holding its CSVs
  std::string kernel_filter;               // as passed to the tool; "" when none
  std::vector<std::string> collected;      // what was asked for: metrics and sections
};

// The metric every NVIDIA profile collects: the kernel's GPU time.
inline constexpr const char* kNcuTimeMetric = "gpu__time_duration.sum";

// "a.b(c)" -> "a\.b\(c\)": a literal for the profilers' regular expressions.
std::string regex_escape(const std::string& s);

// ncu around `cmd`: the details page as CSV into <out_dir>/ncu.csv (--log-file, so the
// harness's stdout never mixes with it), only the launches of `kernels` (mangled names, as ptxas
// prints them; all launches when empty), the first 3 of them, with the job's metrics plus the
// GPU time, or the SpeedOfLight section plus the GPU time when the job names none.
ProfileCommand ncu_profile_command(const std::string& ncu, const ProfileSpec& p,
                                   const std::vector<std::string>& kernels,
                                   const std::vector<std::string>& cmd, const std::string& out_dir);

// rocprofv3 around `cmd`: kernel trace with stats, and the job's counters (--pmc), as CSV files
// under `out_dir` (found there by name: <prefix>_kernel_stats.csv, [pmc_N/]..._counter_collection.csv).
ProfileCommand rocprofv3_profile_command(const std::string& rocprofv3, const ProfileSpec& p,
                                         const std::vector<std::string>& kernels,
                                         const std::vector<std::string>& cmd,
                                         const std::string& out_dir);

}  // namespace kfleet::backends
