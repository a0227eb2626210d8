// The profile parsers on real ncu output (captured on an H200, tests/profiles/README.md), on
// rocprofv3 files built from its documented format, and on garbage; and the profiler command
// lines the profile stage runs.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/profile_command.hpp"
#include "common/profile_output.hpp"
#include "common/resources.hpp"

namespace fs = std::filesystem;
namespace kb = kfleet::backends;

namespace {

const fs::path kProfiles = fs::path(KFLEET_BACKEND_TEST_KERNELS).parent_path() / "profiles";

std::string fixture(const std::string& name) {
  std::ifstream in(kProfiles / name, std::ios::binary);
  EXPECT_TRUE(in.good()) << (kProfiles / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double value(const kb::ProfileLaunch& l, const std::string& metric) {
  const auto* m = l.find(metric);
  if (!m) ADD_FAILURE() << "no metric " << metric << " in launch " << l.id;
  if (m && !m->value) ADD_FAILURE() << metric << " is not a number: '" << m->text << "'";
  return m && m->value ? *m->value : -1;
}

const kb::MetricSummary* summary_of(const kb::KernelSummary& k, const std::string& metric) {
  for (const auto& m : k.metrics)
    if (m.name == metric) return &m;
  return nullptr;
}

const std::string kAxpy = "axpy_kernel(float, const float *, float *, int)";

}  // namespace

TEST(NcuCsv, DetailsPageWithMetricsGivesEveryLaunchItsValues) {
  auto out = kb::parse_ncu_csv(fixture("ncu-details-metrics.csv"));
  EXPECT_EQ(out.skipped_rows, 0u);
  ASSERT_EQ(out.launches.size(), 3u);
  const auto& l0 = out.launches[0];
  EXPECT_EQ(l0.id, "0");
  EXPECT_EQ(l0.kernel, kAxpy);
  EXPECT_EQ(l0.block, "(256, 1, 1)");
  EXPECT_EQ(l0.grid, "(65536, 1, 1)");
  ASSERT_EQ(l0.metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(value(l0, "gpu__time_duration.sum"), 62432);
  EXPECT_EQ(l0.find("gpu__time_duration.sum")->unit, "ns");
  EXPECT_EQ(l0.find("gpu__time_duration.sum")->text, "62,432");
  EXPECT_EQ(l0.find("gpu__time_duration.sum")->section, "Command line profiler metrics");
  EXPECT_DOUBLE_EQ(value(l0, "dram__bytes.sum"), 183069952);
  EXPECT_EQ(l0.find("dram__bytes.sum")->unit, "byte");
  EXPECT_DOUBLE_EQ(value(out.launches[1], "gpu__time_duration.sum"), 61056);
  EXPECT_DOUBLE_EQ(value(out.launches[2], "gpu__time_duration.sum"), 60928);
  EXPECT_DOUBLE_EQ(value(out.launches[2], "dram__bytes.sum"), 180648704);
  EXPECT_TRUE(l0.advice.empty());

  auto s = kb::summarize_profile(out.launches);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kernel, kAxpy);
  EXPECT_EQ(s[0].launches, 3u);
  const auto* t = summary_of(s[0], "gpu__time_duration.sum");
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->median, 61056);
  EXPECT_DOUBLE_EQ(t->min, 60928);
  EXPECT_DOUBLE_EQ(t->max, 62432);
  EXPECT_EQ(t->n, 3u);
  EXPECT_EQ(t->unit, "ns");
}

TEST(NcuCsv, RawPageGivesThreeLaunchesWithUnitsFromTheSecondRow) {
  auto out = kb::parse_ncu_csv(fixture("ncu-raw-metrics.csv"));
  EXPECT_EQ(out.skipped_rows, 0u);
  ASSERT_EQ(out.launches.size(), 3u);
  const double durations[] = {61376, 61568, 62368};
  const double dram[] = {183088384, 183039744, 182777344};
  const double sm[] = {43.26, 43.13, 42.76};
  for (int i = 0; i < 3; ++i) {
    const auto& l = out.launches[i];
    EXPECT_EQ(l.id, std::to_string(i));
    EXPECT_EQ(l.kernel, kAxpy);
    EXPECT_EQ(l.grid, "(65536, 1, 1)");
    EXPECT_DOUBLE_EQ(value(l, "gpu__time_duration.sum"), durations[i]);
    EXPECT_DOUBLE_EQ(value(l, "dram__bytes.sum"), dram[i]);
    EXPECT_DOUBLE_EQ(value(l, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), sm[i]);
    // 281 columns, 11 of them the launch's identity.
    EXPECT_EQ(l.metrics.size(), 270u);
  }
  const auto& l0 = out.launches[0];
  EXPECT_EQ(l0.find("gpu__time_duration.sum")->unit, "ns");
  EXPECT_EQ(l0.find("sm__throughput.avg.pct_of_peak_sustained_elapsed")->unit, "%");
  EXPECT_EQ(l0.find("launch__registers_per_thread")->unit, "register/thread");
  // Text stays text; an empty cell is no number.
  ASSERT_NE(l0.find("launch__cluster_scheduling_policy"), nullptr);
  EXPECT_FALSE(l0.find("launch__cluster_scheduling_policy")->value);
  EXPECT_EQ(l0.find("launch__cluster_scheduling_policy")->text, "PolicySpread");
  EXPECT_FALSE(l0.find("launch__kernel_name")->value);
  EXPECT_DOUBLE_EQ(value(l0, "launch__grid_size"), 65536);

  auto s = kb::summarize_profile(out.launches);
  ASSERT_EQ(s.size(), 1u);
  const auto* t = summary_of(s[0], "gpu__time_duration.sum");
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->median, 61568);
  EXPECT_DOUBLE_EQ(t->min, 61376);
  EXPECT_DOUBLE_EQ(t->max, 62368);
  EXPECT_EQ(summary_of(s[0], "launch__cluster_scheduling_policy"), nullptr);  // not numeric
}

TEST(NcuCsv, SpeedOfLightSectionKeepsMetricsAndTheRuleAsAdvice) {
  auto out = kb::parse_ncu_csv(fixture("ncu-details-speedoflight.csv"));
  EXPECT_EQ(out.skipped_rows, 0u);
  ASSERT_EQ(out.launches.size(), 1u);
  const auto& l = out.launches[0];
  EXPECT_EQ(l.metrics.size(), 10u);  // the rule row is no metric
  EXPECT_DOUBLE_EQ(value(l, "Duration"), 62368);
  EXPECT_EQ(l.find("Duration")->unit, "ns");
  EXPECT_EQ(l.find("Duration")->section, "GPU Speed Of Light Throughput");
  EXPECT_DOUBLE_EQ(value(l, "DRAM Frequency"), 3198349580.98);
  EXPECT_EQ(l.find("DRAM Frequency")->unit, "hz");
  EXPECT_DOUBLE_EQ(value(l, "Compute (SM) Throughput"), 42.56);
  EXPECT_DOUBLE_EQ(value(l, "SM Active Cycles"), 89892.95);
  ASSERT_EQ(l.advice.size(), 1u);
  EXPECT_EQ(l.advice[0].rule, "SOLBottleneck");
  EXPECT_EQ(l.advice[0].type, "OPT");
  EXPECT_EQ(l.advice[0].description.rfind("Memory is more heavily utilized than Compute", 0), 0u);
}

TEST(NcuCsv, LogFileOfTheStagesCommandKeepsBothFilteredKernels) {
  // The profile stage's own command on the H200: --log-file, --page details, --print-units
  // base, --kernel-name-base mangled with ptxas's names of axpy_kernel and a kernel in an
  // unnamed namespace, --section SpeedOfLight --metrics gpu__time_duration.sum, 3 launches.
  auto out = kb::parse_ncu_csv(fixture("ncu-logfile-two-kernels.csv"));
  EXPECT_EQ(out.skipped_rows, 0u);
  ASSERT_EQ(out.launches.size(), 3u);
  EXPECT_EQ(out.launches[1].kernel, "<unnamed>::anon_kernel(float *, int)");
  EXPECT_DOUBLE_EQ(value(out.launches[0], "gpu__time_duration.sum"), 62432);
  EXPECT_DOUBLE_EQ(value(out.launches[1], "gpu__time_duration.sum"), 52736);
  EXPECT_DOUBLE_EQ(value(out.launches[1], "Duration"), 52736);
  EXPECT_EQ(out.launches[1].metrics.size(), 11u);
  ASSERT_EQ(out.launches[1].advice.size(), 1u);
  EXPECT_EQ(out.launches[1].advice[0].description.rfind("This workload exhibits low compute throughput", 0), 0u);
  auto s = kb::summarize_profile(out.launches);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(kb::kernel_short_name(s[1].kernel), "anon_kernel");
  EXPECT_EQ(s[0].launches, 2u);
  EXPECT_DOUBLE_EQ(summary_of(s[0], "gpu__time_duration.sum")->median, 62416);
  // A filter that matched nothing leaves ncu's warning and no table.
  EXPECT_TRUE(kb::parse_ncu_csv(fixture("ncu-logfile-no-match.csv")).launches.empty());
}

TEST(NcuCsv, SkipsApplicationLinesAndRepeatedHeaders) {
  const std::string text =
      "hello \"world\"\n"
      "\"not\",\"ncu\"\n"
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"k(int)\",\"gpu__time_duration.sum\",\"ns\",\"1,000\"\n"
      "{\"type\":\"bench\",\"median_us\":1}\n"
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"1\",\"k(int)\",\"gpu__time_duration.sum\",\"ns\",\"2,000.5\"\n";
  auto out = kb::parse_ncu_csv(text);
  ASSERT_EQ(out.launches.size(), 2u);
  EXPECT_DOUBLE_EQ(value(out.launches[1], "gpu__time_duration.sum"), 2000.5);
  EXPECT_EQ(out.skipped_rows, 0u);
}

TEST(ProfileParsers, MalformedInputNeverThrows) {
  const std::string details = fixture("ncu-details-metrics.csv");
  const std::string raw = fixture("ncu-raw-metrics.csv");
  std::vector<std::string> inputs = {
      "", "\n\n", "\"", "\"ID\"", "==PROF== Disconnected from process 1\n", "\xff\xfe\x00garbage",
      details.substr(0, details.size() / 2),  // cut inside a row
      raw.substr(0, raw.size() - 700),        // the last launch truncated
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"k\",\"m\",\"ns\",\"n/a\"\n\"1\",\"k\"\n\"2\",\"k\",\"m\",\"ns\",\"1\",\"x\",\"y\"\n",
      "Name\n\"a\",1,2\n", "Dispatch_Id,Kernel_Name\n1,k\n"};
  for (const auto& text : inputs) {
    EXPECT_NO_THROW({
      auto a = kb::parse_ncu_csv(text);
      auto b = kb::parse_rocprofv3_stats(text);
      auto c = kb::parse_rocprofv3_counters(text);
      kb::summarize_profile(a.launches);
      kb::summarize_profile(c.launches);
      for (const auto& l : a.launches) kb::launch_to_json(l, 4);
      kb::summary_to_json(kb::summarize_profile(b.launches), 2, 2);
    }) << text.substr(0, 80);
  }
  // A truncated raw page keeps its whole launches and counts the cut one.
  auto cut = kb::parse_ncu_csv(raw.substr(0, raw.size() - 700));
  EXPECT_EQ(cut.launches.size(), 2u);
  EXPECT_EQ(cut.skipped_rows, 1u);
  // Half a details page: the whole rows before the cut.
  auto half = kb::parse_ncu_csv(details.substr(0, details.size() / 2));
  EXPECT_GE(half.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(value(half.launches[0], "dram__bytes.sum"), 183069952);
  // Short and long rows are skipped; a value that is no number stays text.
  auto odd = kb::parse_ncu_csv(inputs[8]);
  ASSERT_EQ(odd.launches.size(), 1u);
  EXPECT_EQ(odd.skipped_rows, 2u);
  EXPECT_FALSE(odd.launches[0].find("m")->value);
  EXPECT_EQ(odd.launches[0].find("m")->text, "n/a");
  EXPECT_TRUE(kb::summarize_profile(odd.launches)[0].metrics.empty());
}

TEST(ProfileParsers, NumbersAcceptThousandsSeparatorsOnly) {
  EXPECT_DOUBLE_EQ(*kb::parse_profile_number("62,432"), 62432);
  EXPECT_DOUBLE_EQ(*kb::parse_profile_number("3,198,349,580.98"), 3198349580.98);
  EXPECT_DOUBLE_EQ(*kb::parse_profile_number(" 42.56 "), 42.56);
  EXPECT_DOUBLE_EQ(*kb::parse_profile_number("4.34259040e-02"), 0.0434259040);
  EXPECT_DOUBLE_EQ(*kb::parse_profile_number("-1"), -1);
  for (const char* bad : {"", "n/a", "inf", "nan", "1,2", "12,34,567", "1.2.3", "-", ".", "e5",
                          "PolicySpread", "(256, 1, 1)"})
    EXPECT_FALSE(kb::parse_profile_number(bad)) << bad;
}

TEST(ProfileParsers, CsvRecordsHonourQuotes) {
  EXPECT_EQ(kb::split_csv_record(R"("a,b","c""d",,e)"),
            (std::vector<std::string>{"a,b", "c\"d", "", "e"}));
  EXPECT_EQ(kb::split_csv_record("\"42.56\","), (std::vector<std::string>{"42.56", ""}));
}

TEST(Rocprofv3, KernelStatsBecomeOneRecordPerKernel) {
  auto out = kb::parse_rocprofv3_stats(fixture("rocprofv3-kernel-stats.csv"));
  EXPECT_EQ(out.skipped_rows, 0u);
  ASSERT_EQ(out.launches.size(), 2u);
  const auto& a = out.launches[0];
  EXPECT_EQ(a.kernel, "axpy_kernel(float, float const*, float*, int)");
  EXPECT_DOUBLE_EQ(value(a, "Calls"), 3);
  EXPECT_DOUBLE_EQ(value(a, "AverageNs"), 61500);
  EXPECT_EQ(a.find("AverageNs")->unit, "ns");
  EXPECT_DOUBLE_EQ(value(a, "MinNs"), 61000);
  EXPECT_DOUBLE_EQ(value(a, "MaxNs"), 62000);
  EXPECT_DOUBLE_EQ(value(a, "Percentage"), 96.79);
  EXPECT_EQ(a.find("Percentage")->unit, "%");
  EXPECT_EQ(a.find("StdDev")->unit, "ns");
  EXPECT_EQ(out.launches[1].kernel, "__amd_rocclr_fillBufferAligned");
}

TEST(Rocprofv3, CounterCollectionBecomesOneRecordPerDispatch) {
  auto out = kb::parse_rocprofv3_counters(fixture("rocprofv3-counter-collection.csv"));
  EXPECT_EQ(out.skipped_rows, 0u);
  ASSERT_EQ(out.launches.size(), 3u);
  const auto& d = out.launches[0];
  EXPECT_EQ(d.id, "3");
  EXPECT_EQ(d.kernel, "axpy_kernel(float, float const*, float*, int)");
  EXPECT_EQ(d.grid, "16777216");
  EXPECT_EQ(d.block, "256");
  EXPECT_DOUBLE_EQ(value(d, "Duration"), 62000);
  EXPECT_EQ(d.find("Duration")->unit, "ns");
  EXPECT_DOUBLE_EQ(value(d, "SQ_WAVES"), 262144);
  EXPECT_DOUBLE_EQ(value(d, "FETCH_SIZE"), 131072.5);
  EXPECT_DOUBLE_EQ(value(out.launches[2], "FETCH_SIZE"), 131074);
  auto s = kb::summarize_profile(out.launches);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].launches, 3u);
  EXPECT_DOUBLE_EQ(summary_of(s[0], "Duration")->median, 61500);
  EXPECT_DOUBLE_EQ(summary_of(s[0], "FETCH_SIZE")->max, 131074);

  // Older releases have no Kernel_Id or Accum_VGPR_Count: columns are found by name.
  auto old = kb::parse_rocprofv3_counters(
      "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\","
      "\"Grid_Size\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\","
      "\"VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\","
      "\"End_Timestamp\"\n"
      "4,4,1,1,36499,36499,1048576,\"divide_kernel(float*, float const*, float const*, int, int)\","
      "64,0,0,12,16,\"SQ_WAVES\",16384,2228955885095594,2228955885119754\n");
  ASSERT_EQ(old.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(value(old.launches[0], "SQ_WAVES"), 16384);
  EXPECT_DOUBLE_EQ(value(old.launches[0], "Duration"), 24160);
}

TEST(ProfileParsers, ShortKernelNames) {
  EXPECT_EQ(kb::kernel_short_name(kAxpy), "axpy_kernel");
  EXPECT_EQ(kb::kernel_short_name("void tile<64, (bool)1>(float *)"), "tile");
  EXPECT_EQ(kb::kernel_short_name("(anonymous namespace)::attention_rows(kfleet_attention_args)"),
            "attention_rows");
  EXPECT_EQ(kb::kernel_short_name("ns::k(int) [clone .kd]"), "k");
  EXPECT_EQ(kb::kernel_short_name("_Z11axpy_kernelfPKfPfi"), "axpy_kernel");
  EXPECT_EQ(kb::kernel_short_name(
                "_ZN49_GLOBAL__N__e33efc99_16_attention_ref_cu_7a23aae214attention_rowsE21kfleet_attention_args"),
            "attention_rows");
  EXPECT_EQ(kb::kernel_short_name("__amd_rocclr_fillBufferAligned"), "__amd_rocclr_fillBufferAligned");
  // ncu's spelling of an unnamed namespace (seen on the H200).
  EXPECT_EQ(kb::kernel_short_name("<unnamed>::attention_rows(kfleet_attention_args)"), "attention_rows");
  EXPECT_EQ(kb::kernel_short_name("<unnamed>::anon_kernel(float *, int)"), "anon_kernel");
}

TEST(ProfileParsers, JsonKeepsAskedForMetricsFirstWithinTheCap) {
  auto out = kb::parse_ncu_csv(fixture("ncu-raw-metrics.csv"));
  auto j = kb::launch_to_json(out.launches[0], 2, {"gpu__time_duration.sum", "dram__bytes.sum"});
  ASSERT_EQ(j["metrics"].size(), 2u);
  EXPECT_EQ(j["metrics"]["gpu__time_duration.sum"]["value"], 61376);
  EXPECT_EQ(j["metrics"]["gpu__time_duration.sum"]["unit"], "ns");
  EXPECT_EQ(j["metrics"]["dram__bytes.sum"]["value"], 183088384);
  EXPECT_EQ(j["metrics_left_out"], 268);
  EXPECT_EQ(j["kernel"], kAxpy);
  auto text = kb::launch_to_json(out.launches[0], 1, {"launch__cluster_scheduling_policy"});
  EXPECT_EQ(text["metrics"]["launch__cluster_scheduling_policy"]["value"], "PolicySpread");

  auto s = kb::summary_to_json(kb::summarize_profile(out.launches), 8, 1, {"gpu__time_duration.sum"});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]["name"], "axpy_kernel");
  EXPECT_EQ(s[0]["kernel"], kAxpy);
  EXPECT_EQ(s[0]["launches"], 3);
  const auto& t = s[0]["metrics"]["gpu__time_duration.sum"];
  EXPECT_EQ(t["median"], 61568);
  EXPECT_EQ(t["min"], 61376);
  EXPECT_EQ(t["max"], 62368);
  EXPECT_EQ(t["n"], 3);
  EXPECT_EQ(t["unit"], "ns");
}

TEST(ProfileCommand, NcuProfilesTheJobsKernelsByTheirPtxasNamesIntoALogFile) {
  // ptxas -v as nvcc prints it for a job with two kernels (one in an unnamed namespace).
  const std::string ptxas =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z8job_tilePf' for 'sm_90a'\n"
      "ptxas info    : Used 16 registers, used 1 barriers, 8192 bytes smem, 360 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function "
      "'_ZN49_GLOBAL__N__e33efc99_16_attention_ref_cu_7a23aae214attention_rowsE21kfleet_attention_args'"
      " for 'sm_90a'\n"
      "ptxas info    : Used 40 registers, used 0 barriers, 1024 bytes cumulative stack size\n";
  std::vector<std::string> names;
  for (const auto& u : kb::parse_ptxas_verbose(ptxas)) names.push_back(u.mangled);
  kfleet::ProfileSpec p;
  p.tool = "ncu";
  const std::vector<std::string> cmd = {"/cache/kfleet-harness", "benchmark", "--case", "small"};
  auto c = kb::ncu_profile_command("/usr/local/cuda/bin/ncu", p, names, cmd, "/w/profile");
  EXPECT_EQ(c.tool, "ncu");
  EXPECT_EQ(c.output, "/w/profile/ncu.csv");
  const std::vector<std::string> want = {
      "/usr/local/cuda/bin/ncu", "--csv", "--page", "details", "--print-units", "base",
      "--log-file", "/w/profile/ncu.csv", "--launch-count", "3", "--kernel-name-base", "mangled",
      "--kernel-name",
      "regex:^(_Z8job_tilePf|_ZN49_GLOBAL__N__e33efc99_16_attention_ref_cu_7a23aae214attention_rowsE21kfleet_attention_args)$",
      "--section", "SpeedOfLight", "--metrics", "gpu__time_duration.sum",
      "/cache/kfleet-harness", "benchmark", "--case", "small"};
  EXPECT_EQ(c.argv, want);
  EXPECT_EQ(std::count(c.argv.begin(), c.argv.end(), "--export"), 0);
  EXPECT_EQ(c.collected, (std::vector<std::string>{"section:SpeedOfLight", "gpu__time_duration.sum"}));

  // The job's metrics, with the GPU time added once, and no section.
  p.metrics = {"dram__bytes.sum", "gpu__time_duration.sum", "dram__bytes.sum"};
  c = kb::ncu_profile_command("ncu", p, {"_Z1kv", "_Z1kv"}, cmd, "/w/profile");
  auto at = std::find(c.argv.begin(), c.argv.end(), "--metrics");
  ASSERT_NE(at, c.argv.end());
  EXPECT_EQ(*(at + 1), "dram__bytes.sum,gpu__time_duration.sum");
  EXPECT_EQ(std::count(c.argv.begin(), c.argv.end(), "--section"), 0);
  EXPECT_EQ(c.kernel_filter, "regex:^(_Z1kv)$");
  p.metrics = {"sm__throughput.avg.pct_of_peak_sustained_elapsed"};
  c = kb::ncu_profile_command("ncu", p, {}, cmd, "/w/profile");
  at = std::find(c.argv.begin(), c.argv.end(), "--metrics");
  EXPECT_EQ(*(at + 1), "gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(std::count(c.argv.begin(), c.argv.end(), "--kernel-name"), 0);  // no names: no filter
  EXPECT_TRUE(c.kernel_filter.empty());
}

TEST(ProfileCommand, KernelNamesAreEscapedForTheRegex) {
  EXPECT_EQ(kb::regex_escape("_Z1kv"), "_Z1kv");
  EXPECT_EQ(kb::regex_escape("k.part$1(x)[y]{z}|a*b+c?^\\"),
            "k\\.part\\$1\\(x\\)\\[y\\]\\{z\\}\\|a\\*b\\+c\\?\\^\\\\");
  kfleet::ProfileSpec p;
  auto c = kb::ncu_profile_command("ncu", p, {"__omp_offloading.k$1"}, {"h"}, "/o");
  EXPECT_EQ(c.kernel_filter, "regex:^(__omp_offloading\\.k\\$1)$");
}

TEST(ProfileCommand, Rocprofv3WritesCsvIntoTheOutputDirectory) {
  kfleet::ProfileSpec p;
  p.tool = "rocprofv3";
  p.metrics = {"SQ_WAVES", "FETCH_SIZE"};
  auto c = kb::rocprofv3_profile_command("/opt/rocm/bin/rocprofv3", p, {"_Z1kv"}, {"h", "benchmark"}, "/w/p");
  EXPECT_EQ(c.output, "/w/p");
  EXPECT_EQ(c.argv, (std::vector<std::string>{"/opt/rocm/bin/rocprofv3", "--kernel-trace", "--stats",
                                              "--output-format", "csv", "-d", "/w/p", "-o", "profile",
                                              "--pmc", "SQ_WAVES", "FETCH_SIZE", "--", "h", "benchmark"}));
}
