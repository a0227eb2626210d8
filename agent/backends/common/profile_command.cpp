#include "common/profile_command.hpp"

#include <algorithm>

namespace kfleet::backends {

std::string regex_escape(const std::string& s) {
  static const std::string special = R"(\^$.|?*+()[]{})";
  std::string out;
  for (char c : s) {
    if (special.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

ProfileCommand ncu_profile_command(const std::string& ncu, const ProfileSpec& p,
                                   const std::vector<std::string>& kernels,
                                   const std::vector<std::string>& cmd, const std::string& out_dir) {
  ProfileCommand c;
  c.tool = "ncu";
  c.output = out_dir + "/ncu.csv";
  // --print-units base: values in ns, byte, hz, as the parsers and the CLI expect, whatever a
  // release's default scaling is. The default --clock-control base (clocks locked to base) is
  // kept: it makes metrics repeatable, and the stage says so in its data.
  c.argv = {ncu, "--csv", "--page", "details", "--print-units", "base", "--log-file", c.output,
            "--launch-count", "3"};
  std::vector<std::string> names;
  for (const auto& k : kernels)
    if (!k.empty() && std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  if (!names.empty()) {
    // ptxas names the entries as they are in the cubin: mangled. Matching on those (anchored,
    // escaped) picks exactly the job's kernels and never the harness's fill or reference ones.
    std::string re;
    for (const auto& n : names) re += (re.empty() ? "" : "|") + regex_escape(n);
    c.kernel_filter = "regex:^(" + re + ")$";
    c.argv.insert(c.argv.end(), {"--kernel-name-base", "mangled", "--kernel-name", c.kernel_filter});
  }
  std::vector<std::string> metrics;
  for (const auto& m : p.metrics)
    if (!m.empty() && std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
  if (metrics.empty()) {
    c.argv.insert(c.argv.end(), {"--section", "SpeedOfLight"});
    c.collected.push_back("section:SpeedOfLight");
  }
  if (std::find(metrics.begin(), metrics.end(), kNcuTimeMetric) == metrics.end())
    metrics.insert(metrics.begin(), kNcuTimeMetric);
  std::string joined;
  for (const auto& m : metrics) joined += (joined.empty() ? "" : ",") + m;
  c.argv.insert(c.argv.end(), {"--metrics", joined});
  c.collected.insert(c.collected.end(), metrics.begin(), metrics.end());
  c.argv.insert(c.argv.end(), cmd.begin(), cmd.end());
  return c;
}

ProfileCommand rocprofv3_profile_command(const std::string& rocprofv3, const ProfileSpec& p,
                                         const std::vector<std::string>& kernels,
                                         const std::vector<std::string>& cmd,
                                         const std::string& out_dir) {
  (void)kernels;  // --kernel-include-regex filters counters only, and matches names we have not
                  // seen rocprofv3 print on hardware here; the stage filters records by name.
  ProfileCommand c;
  c.tool = "rocprofv3";
  c.output = out_dir;
  // CSV is asked for by name: newer ROCm releases default to the rocpd database.
  c.argv = {rocprofv3, "--kernel-trace", "--stats", "--output-format", "csv", "-d", out_dir,
            "-o", "profile"};
  c.collected.push_back("kernel_stats");
  if (!p.metrics.empty()) {
    c.argv.push_back("--pmc");
    c.argv.insert(c.argv.end(), p.metrics.begin(), p.metrics.end());
    c.collected.insert(c.collected.end(), p.metrics.begin(), p.metrics.end());
  }
  c.argv.push_back("--");
  c.argv.insert(c.argv.end(), cmd.begin(), cmd.end());
  return c;
}

}  // namespace kfleet::backends
