#include <algorithm>

#include <gtest/gtest.h>

#include "kfleet/cli/progress.hpp"
#include "kfleet/cli/versus_view.hpp"
#include "kfleet/cli/views.hpp"
#include "fleet_reports.hpp"
#include "kfleet/testing/expect.hpp"

namespace kfleet::cli {
namespace {

constexpr TimeMs kNow = 1'763'704'000'000;  // 2025-11-21T05:46:40Z

TEST(Views, Iso8601RoundTripsWithCommonClock) {
  EXPECT_EQ(parse_iso8601_ms(format_iso8601(kNow + 123)), kNow + 123);
  EXPECT_EQ(parse_iso8601_ms("1970-01-01T00:00:01Z"), 1000);
  EXPECT_EQ(parse_iso8601_ms("yesterday"), -1);
}

TEST(Views, Ages) {
  EXPECT_EQ(format_age(59'000), "59s");
  EXPECT_EQ(format_age(125'000), "2m");
  EXPECT_EQ(format_age(3 * 3'600'000), "3h");
  EXPECT_EQ(format_age(50 * 3'600'000), "2d");
  EXPECT_EQ(format_age(-5), "-");
}

TEST(Views, TableAlignsUtf8AndColour) {
  TextTable t({"A", "B"});
  t.add_row({"696.0 µs", "x"});
  t.add_row({"\x1b[31mred\x1b[0m", "y"});
  EXPECT_EQ(t.render(), "A         B\n696.0 µs  x\n\x1b[31mred\x1b[0m       y\n");
  EXPECT_EQ(display_width("µs"), 2u);
}

TEST(Views, JobsTableShowsVerdictOrReason) {
  nlohmann::json body = {{"jobs",
      {{{"id", 12}, {"name", "fa/iter1"}, {"gpu", "L4"}, {"state", "rejected"}, {"attempts", 1},
        {"max_attempts", 3}, {"created", format_iso8601(kNow - 90'000)},
        {"verdict", {{"outcome", "rejected"}, {"gate", "performance"}, {"reason", "+6.1%"}}}},
       {{"id", 13}, {"name", "fa/iter2"}, {"gpu", "L4"}, {"state", "waiting_capacity"},
        {"state_reason", "us-east-1 stockout"}, {"attempts", 0}, {"simulated", true}}}}};
  const std::string out = render_jobs(body, kNow, false);
  kfleet::testing::expect_contains(out, {"ID  NAME", "performance: +6.1%", "1/3", "1m",
                                         "us-east-1 stockout", "fa/iter2 [sim]"});
  EXPECT_EQ(render_jobs({{"jobs", nlohmann::json::array()}}, kNow, false), "no jobs\n");
}

TEST(Views, AgentsAndBlocks) {
  nlohmann::json body = {
      {"agents", {{{"id", 3}, {"name", "l4-a"}, {"region", "us-west-2"}, {"backend", "simulated"},
                   {"state", "busy"}, {"current_run_id", 9}, {"simulated", true},
                   {"last_seen", format_iso8601(kNow - 4000)},
                   {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}}}},
      {"blocks", {{{"provider", "aws"}, {"region", "us-east-1"}, {"kind", "stockout"},
                   {"reason", "InsufficientInstanceCapacity"}, {"seconds_left", 125}}}}};
  const std::string out = render_agents(body, kNow, false);
  kfleet::testing::expect_contains(out, {"L4/sm_89", "4s ago", "region blocks:",
                                         "InsufficientInstanceCapacity  2m",
                                         "1 GPU(s) on 1 host(s): 1 busy, 0 idle"});
}

TEST(Views, AgentsSayWhoEnrolledThem) {
  nlohmann::json agents = {
      {{"id", 1}, {"name", "old"}, {"state", "idle"}, {"enrolled_by", {{"kind", "fleet_token"}}}},
      {{"id", 2}, {"name", "new"}, {"state", "idle"},
       {"enrolled_by", {{"kind", "enrol_token"}, {"enrol_token_id", 7}, {"name", "rack-3"},
                        {"minted_by", "alice"}}}},
      {{"id", 3}, {"name", "older-kfleetd"}, {"state", "idle"}}};
  const std::string out = render_agents({{"agents", agents}}, kNow, false);
  kfleet::testing::expect_contains(out, {"ENROLLED BY", "fleet token", "#7 rack-3 (alice)"});
}

TEST(Views, AgentsShowWhatTheirPythonRecords) {
  nlohmann::json agents = {
      {{"id", 1}, {"name", "py"}, {"state", "idle"},
       {"gpus", {{{"gpu_class", "H200"}, {"arch", "sm_90a"},
                  {"extra", {{"python", {{"torch", "2.11.0+cu130"}, {"triton", "3.6.0"},
                                         {"languages", {"torch", "triton"}}}}}}}}}},
      {{"id", 2}, {"name", "nopy"}, {"state", "idle"},
       {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}}};
  const std::string out = render_agents({{"agents", agents}}, kNow, false);
  EXPECT_NE(out.find("PYTHON"), std::string::npos) << out;
  EXPECT_NE(out.find("torch 2.11.0+cu130, triton 3.6.0"), std::string::npos) << out;
}

TEST(Views, AgentsCountGpusPerHost) {
  nlohmann::json agents = nlohmann::json::array();
  for (int i = 0; i < 8; ++i)
    agents.push_back({{"id", i + 1}, {"name", "h-gpu" + std::to_string(i)}, {"host", "i-0abc"},
                      {"slot", i}, {"state", i < 3 ? "busy" : "idle"},
                      {"gpus", {{{"gpu_class", "L4"}, {"arch", "sm_89"}}}}});
  agents.push_back({{"id", 9}, {"name", "solo"}, {"host", "agent:9"}, {"slot", 0}, {"state", "idle"}});
  const std::string out = render_agents({{"agents", agents}}, kNow, false);
  EXPECT_NE(out.find("i-0abc:7"), std::string::npos) << out;
  EXPECT_NE(out.find("9 GPU(s) on 2 host(s): 3 busy, 6 idle"), std::string::npos) << out;
}

TEST(Views, ResultsShowDeltaWithCi) {
  nlohmann::json body = {{"results", {{
      {"run", {{"id", 9}, {"outcome", "rejected"}, {"simulated", false},
               {"verdict", {{"outcome", "rejected"}, {"gate", "performance"}, {"median_us", 696.0},
                            {"delta_pct", 6.1}, {"ci_low_pct", 5.2}, {"ci_high_pct", 7.0}}}}},
      {"job", {{"id", 12}, {"name", "fp8-sdpa/step2"}, {"gpu", "L4"}}}}}}};
  const std::string out = render_results(body, kNow, false);
  kfleet::testing::expect_contains(out, {"12 fp8-sdpa/step2", "696.0 µs", "+6.1% [+5.2%, +7.0%]"});
}

TEST(Views, JobDetailListsRuns) {
  nlohmann::json body = {
      {"job", {{"id", 12}, {"name", "fa/iter1"}, {"gpu", "L4"}, {"state", "passed"},
               {"attempts", 2}, {"max_attempts", 3}, {"regions", {"us-west-2"}},
               {"verdict", {{"outcome", "passed"}, {"reason", "same"}}}}},
      {"runs", {{{"id", 8}, {"agent_id", 1}, {"attempt", 1}, {"outcome", "lost"}},
                {{"id", 9}, {"agent_id", 3}, {"attempt", 2}, {"outcome", "passed"}}}}};
  const std::string out = render_job_detail(body, kNow, false);
  kfleet::testing::expect_contains(out, {"job       12 fa/iter1", "L4 (us-west-2)", "PASSED: same",
                                         "lost"});
  EXPECT_EQ(out.find("cancelled"), std::string::npos) << out;  // nobody cancelled it
}

// A problem's verdict: the cases its correctness stage ran and the reference check.
TEST(Views, JobDetailShowsTheCasesRunAndTheReferenceCheck) {
  nlohmann::json body = {
      {"job", {{"id", 14}, {"name", "problems/softmax-no_max"}, {"gpu", "sm_90"}, {"state", "rejected"},
               {"attempts", 1}, {"max_attempts", 1},
               {"verdict", {{"outcome", "rejected"}, {"gate", "correctness"}, {"reason", "case stress seed 0: output y"},
                            {"metrics", {{"cases", {{{"name", "small"}, {"seeds", {0, 1}}, {"pass", true}},
                                                    {{"name", "stress"}, {"seeds", {0, 1}}, {"pass", false}}}},
                                         {"reference_check", {{"case", "small"}, {"seed", 0}, {"pass", true}}}}}}}}},
      {"runs", nlohmann::json::array()}};
  const std::string out = render_job_detail(body, kNow, false);
  EXPECT_NE(out.find("cases     small (seeds 0,1), stress (seeds 0,1) FAILED\n"), std::string::npos) << out;
  EXPECT_NE(out.find("reference GPU = fp64 CPU reference on small seed 0\n"), std::string::npos) << out;
}

// A Python launch's kernels, each with its origin as the recorder reported it: the job's code,
// or a library with its file and version; past kKernelsShown, how many more.
TEST(Views, JobDetailNamesEachKernelsOrigin) {
  nlohmann::json kernels = nlohmann::json::array();
  kernels.push_back({{"function", "_attn_fwd"}, {"origin", "job"}, {"how", "Triton cubin"}, {"file", ""}, {"package", ""}});
  kernels.push_back({{"function", "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_T1_"},
                     {"origin", "library"}, {"file", "libtorch_cuda.so"}, {"package", "torch 2.11.0"}, {"how", ""}});
  for (int i = 0; i < 12; ++i)
    kernels.push_back({{"function", "k" + std::to_string(i)}, {"origin", "library"}, {"file", "libcublasLt.so.13"}, {"package", ""}});
  nlohmann::json body = {
      {"job", {{"id", 3}, {"name", "torch/zero-then-triton"}, {"gpu", "sm_90"}, {"state", "passed"},
               {"attempts", 1}, {"max_attempts", 1},
               {"verdict", {{"outcome", "passed"}, {"reason", "passed"},
                            {"metrics", {{"kernels", {{"type", "kernels"}, {"kernels", kernels}, {"more", 2}}}}}}}}},
      {"runs", nlohmann::json::array()}};
  const std::string out = render_job_detail(body, kNow, false);
  EXPECT_NE(out.find("kernels   _attn_fwd (job: Triton cubin)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("          _ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFu... "
                     "(library: libtorch_cuda.so torch 2.11.0)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("k9 (library: libcublasLt.so.13)\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("k10 ("), std::string::npos) << out;  // the 13th and 14th are counted, not listed
  EXPECT_NE(out.find("and 4 more (kfleet --json status)\n"), std::string::npos) << out;
}

TEST(Views, JobDetailSaysWhoSubmittedAndWhoCancelled) {
  nlohmann::json body = {
      {"job", {{"id", 13}, {"name", "fa/iter2"}, {"gpu", "L4"}, {"state", "cancelled"},
               {"state_reason", "cancelled by sam"}, {"attempts", 0}, {"max_attempts", 3},
               {"submitted_by", "alice"}, {"cancelled_by", "sam"}}},
      {"runs", nlohmann::json::array()}};
  const std::string out = render_job_detail(body, kNow, false);
  EXPECT_NE(out.find("submitter alice\n"), std::string::npos) << out;
  EXPECT_NE(out.find("cancelled by sam\n"), std::string::npos) << out;
}

// A problem's kernel's verdict: its reason's last line compares it with kfleet's PyTorch
// references. Tables keep one line per job and show the speedups in a column of their own.
nlohmann::json versus_verdict() {
  return {{"outcome", "passed"},
          {"perf", "improved"},
          {"reason", "improved: -6.7% (38.2 µs vs 41.0 µs)\n0.93x eager [0.92, 0.94], 1.41x torch.compile "
                     "[1.39, 1.43] (llama3_8b, simulated)"},
          {"simulated", true},
          {"versus",
           {{{"baseline", "eager"}, {"speedup", 0.93}, {"ci_low", 0.92}, {"ci_high", 0.94},
             {"reference_us", 35.5}, {"case", "llama3_8b"}, {"cached", true}, {"simulated", true},
             {"key", {{"problem", "rmsnorm"}, {"version", 1}, {"case", "llama3_8b"}, {"gpu_class", "H200"},
                      {"torch", "2.11.0+cu130"}, {"driver", "580.95.05"}}}},
            {{"baseline", "compile"}, {"speedup", 1.41}, {"ci_low", 1.39}, {"ci_high", 1.43},
             {"reference_us", 53.9}, {"case", "llama3_8b"}, {"cached", false}, {"simulated", true},
             {"key", {{"problem", "rmsnorm"}, {"version", 1}, {"case", "llama3_8b"}, {"gpu_class", "H200"},
                      {"torch", "2.11.0+cu130"}, {"driver", "580.95.05"}}}}}}};
}

TEST(Versus, TheVerdictLineKeepsItsMarksAndEndsWithTheComparison) {
  EXPECT_EQ(format_verdict_line(versus_verdict(), false),
            "PASSED: improved: -6.7% (38.2 µs vs 41.0 µs) [simulated]\n"
            "0.93x eager [0.92, 0.94], 1.41x torch.compile [1.39, 1.43] (llama3_8b, simulated)");
  EXPECT_EQ(first_line("a\nb"), "a");
  EXPECT_EQ(first_line("a"), "a");
}

TEST(Versus, JobsTableHasAColumnForItAndOneLinePerJob) {
  nlohmann::json body = {{"jobs",
      {{{"id", 12}, {"name", "rms/iter1"}, {"gpu", "H200"}, {"state", "passed"}, {"attempts", 1},
        {"max_attempts", 3}, {"verdict", versus_verdict()}},
       {{"id", 13}, {"name", "custom"}, {"gpu", "H200"}, {"state", "passed"}, {"attempts", 1},
        {"max_attempts", 3}, {"verdict", {{"outcome", "passed"}, {"reason", "passed"}}}}}}};
  const std::string out = render_jobs(body, kNow, false);
  EXPECT_NE(out.find("VS PYTORCH"), std::string::npos) << out;
  EXPECT_NE(out.find("improved: -6.7% (38.2 µs vs 41.0 µs)  0.93x eager, 1.41x torch.compile"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;  // the header and one line per job
  // Without any comparison there is no such column.
  nlohmann::json plain = {{"jobs", {body["jobs"][1]}}};
  EXPECT_EQ(render_jobs(plain, kNow, false).find("VS PYTORCH"), std::string::npos);
}

TEST(Versus, JobDetailShowsEachComparisonAndItsCacheKey) {
  nlohmann::json body = {{"job", {{"id", 12}, {"name", "rms/iter1"}, {"gpu", "H200"}, {"state", "passed"},
                                  {"state_reason", versus_verdict()["reason"]},
                                  {"attempts", 1}, {"max_attempts", 3}, {"verdict", versus_verdict()}}},
                         {"runs", {{{"id", 9}, {"agent_id", 3}, {"attempt", 1}, {"outcome", "passed"},
                                    {"verdict", versus_verdict()}}}}};
  const std::string out = render_job_detail(body, kNow, false);
  EXPECT_NE(out.find("verdict   PASSED: improved: -6.7% (38.2 µs vs 41.0 µs) [simulated]\n"
                     "          0.93x eager [0.92, 0.94], 1.41x torch.compile [1.39, 1.43] (llama3_8b, simulated)\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("versus    0.93x eager [0.92, 0.94] (reference 35.5 µs, cached, simulated)\n"
                     "          1.41x torch.compile [1.39, 1.43] (reference 53.9 µs, timed in this run, simulated)\n"
                     "          cached by: rmsnorm@1 case llama3_8b on H200, torch 2.11.0+cu130, driver 580.95.05\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("state     passed: improved: -6.7% (38.2 µs vs 41.0 µs)\nattempts"), std::string::npos) << out;
  // The runs table: one line per run.
  EXPECT_NE(out.find("PASSED: improved: -6.7% (38.2 µs vs 41.0 µs) [simulated]  "), std::string::npos) << out;
}

TEST(Versus, AReferenceNotTimedIsShownWithItsNote) {
  const nlohmann::json v = {{{"baseline", "eager"}, {"speedup", 2.0}},
                            {{"baseline", "compile"}, {"note", "torch.compile needs triton"}}};
  EXPECT_EQ(versus_brief(v), "2.00x eager, torch.compile -");
  EXPECT_EQ(versus_detail(v, "  "), "2.00x eager (timed in this run)\n  torch.compile not timed (torch.compile needs triton)\n");
  EXPECT_EQ(versus_brief(nlohmann::json::array()), "-");
  EXPECT_EQ(versus_detail(nlohmann::json(), "  "), "");
}

// A campaign and a regression run print fast_p against each reference, with its denominator,
// and the keys their references' timings are cached by.
TEST(Versus, CampaignAndRegressionPrintFastP) {
  auto verdict = versus_verdict();
  nlohmann::json entry = {{"name", "rms/iter1"}, {"job_id", 12}, {"median_us", 38.2}, {"versus", verdict["versus"]},
                          {"reason", verdict["reason"]}, {"simulated", true}};
  nlohmann::json fast_p = {{"kernels", 2}, {"of", "finished jobs"}, {"simulated", true},
                           {"baselines", {{{"baseline", "eager"}, {"label", "eager"}, {"timed", 2},
                                           {"p", {{{"p", 1}, {"fast", 0}, {"share", 0.0}}, {{"p", 1.5}, {"fast", 0}, {"share", 0.0}}}}},
                                          {{"baseline", "compile"}, {"label", "torch.compile"}, {"timed", 2},
                                           {"p", {{{"p", 1}, {"fast", 2}, {"share", 1.0}}, {{"p", 1.5}, {"fast", 0}, {"share", 0.0}}}}}}}};
  nlohmann::json campaign = {{"name", "rms"}, {"jobs", 2}, {"current_best", entry}, {"kept_wins", nlohmann::json::array()},
                             {"rejections", {entry}}, {"roots", {entry}}, {"fast_p", fast_p}};
  const std::string c = render_campaign(campaign);
  // Each entry with its intervals, as the verdict's own line has them.
  EXPECT_NE(c.find("rms/iter1 (job 12) -> 38.2 µs; 0.93x eager [0.92, 0.94], 1.41x torch.compile [1.39, 1.43] "
                   "(llama3_8b, simulated) [simulated]"), std::string::npos) << c;
  EXPECT_NE(c.find("REJECT (improved: -6.7% (38.2 µs vs 41.0 µs))\n"), std::string::npos) << c;
  EXPECT_NE(c.find("## Against PyTorch\nfast_1    eager 0/2 (0%)   torch.compile 2/2 (100%)\n"), std::string::npos) << c;
  EXPECT_NE(c.find("of 2 finished jobs"), std::string::npos) << c;
  EXPECT_NE(c.find("reference timings cached by eager: rmsnorm@1 case llama3_8b on H200"), std::string::npos) << c;

  nlohmann::json reg = {{"id", 3}, {"suite", "nightly"}, {"state", "done"}, {"fast_p", fast_p},
                        {"cells", {{{"kernel", "rms"}, {"gpu_class", "H200"}, {"job_id", 12}, {"verdict", "same"},
                                    {"reason", verdict["reason"]}, {"versus", verdict["versus"]}}}}};
  const std::string t = render_regression_text(reg);
  EXPECT_NE(t.find("against PyTorch"), std::string::npos) << t;
  EXPECT_NE(t.find("  rms on H200: 0.93x eager [0.92, 0.94], 1.41x torch.compile [1.39, 1.43] (llama3_8b, simulated)\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("fast_1.5  eager 0/2 (0%)"), std::string::npos) << t;
  const std::string md = render_regression_markdown(reg);
  EXPECT_NE(md.find("## Against PyTorch: fast_p"), std::string::npos) << md;
  EXPECT_NE(md.find("Denominator: 2 finished jobs."), std::string::npos) << md;
  EXPECT_NE(md.find("| p | vs eager | vs torch.compile |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fast_1 | 0/2 (0%) | 2/2 (100%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| improved: -6.7% (38.2 µs vs 41.0 µs) |"), std::string::npos) << md;  // one line in its cell
  // A run of no problem's kernel says nothing of it.
  reg.erase("fast_p");
  EXPECT_EQ(render_regression_text(reg).find("against PyTorch"), std::string::npos);
}

}  // namespace
}  // namespace kfleet::cli
