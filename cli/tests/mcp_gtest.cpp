// `kfleet mcp` without a server: the JSON-RPC side (lifecycle, tools/list, errors) and making a
// child from its parent and one change.
#include <sstream>

#include <gtest/gtest.h>

#include "mcp/compose.hpp"
#include "mcp/schemas.hpp"
#include "mcp/server.hpp"
#include "mcp/tools.hpp"
#include "problems_view.hpp"
#include "../../common/tests/test_paths.hpp"

namespace kfleet::cli::mcp {
namespace {

using nlohmann::json;

std::vector<json> exchange(const std::vector<json>& requests, std::vector<Tool> tools) {
  std::stringstream in, out;
  for (const auto& r : requests) in << r.dump() << "\n";
  in << "this is not json\n";
  Server server(in, out, std::move(tools), "1", "how to use it");
  EXPECT_EQ(server.serve(), 0);
  std::vector<json> replies;
  std::string line;
  while (std::getline(out, line)) replies.push_back(json::parse(line));
  return replies;
}

Tool echo_tool() {
  return {"echo", "Echo", "says it back", {{"type", "object"}}, {{"type", "object"}}, json::object(),
          [](const json& args, Call& call) -> ToolResult {
            if (args.contains("fail")) return tool_error("refused: " + args["fail"].get<std::string>());
            call.progress(1, 2.0, "half way");
            return {{{"said", args.value("say", "")}}, ""};
          }};
}

TEST(McpServer, SpeaksTheLifecycleAndTools) {
  auto r = exchange(
      {{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
        {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()},
                    {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}},
       {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
       {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}},
       {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/call"},
        {"params", {{"name", "echo"}, {"arguments", {{"say", "hi"}}}, {"_meta", {{"progressToken", "p1"}}}}}},
       {{"jsonrpc", "2.0"}, {"id", "s"}, {"method", "tools/call"},
        {"params", {{"name", "echo"}, {"arguments", {{"fail", "already tried"}}}}}},
       {{"jsonrpc", "2.0"}, {"id", 5}, {"method", "tools/call"}, {"params", {{"name", "nope"}}}},
       {{"jsonrpc", "2.0"}, {"id", 6}, {"method", "resources/list"}},
       {{"jsonrpc", "2.0"}, {"id", 7}, {"method", "ping"}}},
      {echo_tool()});
  ASSERT_EQ(r.size(), 9u);  // no answer to the notification; one to the line that is not JSON
  EXPECT_EQ(r[0]["id"], 1);
  EXPECT_EQ(r[0]["result"]["protocolVersion"], "2025-06-18");  // the client's, when spoken
  EXPECT_EQ(r[0]["result"]["serverInfo"]["name"], "kfleet");
  EXPECT_TRUE(r[0]["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(r[1]["result"]["tools"][0]["name"], "echo");
  EXPECT_TRUE(r[1]["result"]["tools"][0].contains("outputSchema"));
  EXPECT_EQ(r[2]["method"], "notifications/progress");  // before the answer it belongs to
  EXPECT_EQ(r[2]["params"]["progressToken"], "p1");
  EXPECT_EQ(r[2]["params"]["message"], "half way");
  EXPECT_EQ(r[3]["id"], 3);
  EXPECT_EQ(r[3]["result"]["structuredContent"]["said"], "hi");
  EXPECT_EQ(json::parse(r[3]["result"]["content"][0]["text"].get<std::string>())["said"], "hi");
  EXPECT_EQ(r[4]["id"], "s");
  EXPECT_TRUE(r[4]["result"]["isError"]);
  EXPECT_EQ(r[4]["result"]["content"][0]["text"], "refused: already tried");
  EXPECT_EQ(r[5]["error"]["code"], -32602);  // unknown tool: a protocol error
  EXPECT_EQ(r[6]["error"]["code"], -32601);
  EXPECT_EQ(r[7]["result"], json::object());
  EXPECT_EQ(r[8]["error"]["code"], -32700);
}

TEST(McpServer, AnswersAnUnknownRevisionWithItsNewest) {
  auto r = exchange({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                      {"params", {{"protocolVersion", "1999-01-01"}}}}},
                    {});
  EXPECT_EQ(r[0]["result"]["protocolVersion"], kProtocolVersions.front());
}

const char* kParentYaml = R"(name: c/root
campaign: c
target: {gpu: L4}
kernel:
  family: attention
  language: cuda
  sources: [fa.cu]
  defines: {STAGES: 2, OLD: 1}
  flags: [-O3, -lineinfo]
)";

TEST(ComposeChild, AppliesOneChangeToTheParent) {
  auto c = parse_change({{"defines_set", {{"STAGES", 3}, {"O_ACCUM_HALF", "1"}}},
                         {"defines_removed", {"OLD"}},
                         {"flags_added", {"--use_fast_math"}},
                         {"flags_removed", {"-lineinfo"}},
                         {"files", {{{"path", "fa.cu"}, {"content", "new\n"}}}}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  Bundle parent{{{"fa.cu", "old\n"}, {"util.h", "u\n"}}};
  auto child = compose_child(kParentYaml, parent, "c/child", "c/root", *c);
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_NE(child->yaml.find("name: c/child"), std::string::npos) << child->yaml;
  EXPECT_NE(child->yaml.find("parent: c/root"), std::string::npos) << child->yaml;
  EXPECT_NE(child->yaml.find("STAGES: 3"), std::string::npos) << child->yaml;
  EXPECT_NE(child->yaml.find("O_ACCUM_HALF: 1"), std::string::npos) << child->yaml;
  EXPECT_EQ(child->yaml.find("OLD"), std::string::npos) << child->yaml;
  EXPECT_NE(child->yaml.find("[-O3, --use_fast_math]"), std::string::npos) << child->yaml;
  EXPECT_EQ(child->bundle.files[0].content, "new\n");
  EXPECT_EQ(child->bundle.files[1].content, "u\n");
}

TEST(ComposeChild, RefusesWhatIsNotAChangeOfThisParent) {
  Bundle parent{{{"fa.cu", "old\n"}}};
  auto compose = [&](const json& change) -> std::string {
    auto c = parse_change(change);
    if (!c) return c.error().message;
    auto child = compose_child(kParentYaml, parent, "x", "c/root", *c);
    return child ? "" : child.error().message;
  };
  EXPECT_NE(compose(json::object()).find("change is empty"), std::string::npos);
  EXPECT_NE(compose({{"files", {{{"path", "other.cu"}, {"content", ""}}}}}).find("has no file other.cu (it has fa.cu)"),
            std::string::npos);
  EXPECT_NE(compose({{"files", {{{"path", "../x"}, {"content", ""}}}}}).find("../x"), std::string::npos);
  EXPECT_NE(compose({{"defines_removed", {"NOPE"}}}).find("does not define NOPE"), std::string::npos);
  EXPECT_NE(compose({{"flags_added", {"-O3"}}}).find("already has flag -O3"), std::string::npos);
  EXPECT_NE(compose({{"flags_removed", {"-g"}}}).find("has no flag -g"), std::string::npos);
  EXPECT_NE(compose({{"defines_set", {{"A", {1, 2}}}}}).find("defines_set.A"), std::string::npos);
}

TEST(McpTools, CampaignLogReadsLikeSeed002) {
  json c = {{"name", "fa"},
            {"current_best", {{"name", "fa/k1"}, {"job_id", 3}, {"median_us", 36.5}}},
            {"kept_wins", {{{"name", "fa/k1"}, {"job_id", 3}, {"change", "kernel.defines +H=1"}, {"delta_pct", -3.9}}}},
            {"rejections", {{{"name", "fa/r1"}, {"job_id", 2}, {"reason", "rejected at correctness: max_abs 0.2"}}}},
            {"no_repeat", {{{"name", "fa/r2"}, {"job_id", 4}, {"change_summary", "fa.cu +2 -1"},
                            {"state", "rejected"}, {"delta_pct", 2.0}, {"simulated", true}}}},
            {"pending", json::array()}};
  const std::string md = campaign_log_markdown(c);
  EXPECT_NE(md.find("Current baseline: fa/k1 (job 3) -> 36.50 us"), std::string::npos) << md;
  EXPECT_NE(md.find("- fa/k1 (job 3): kernel.defines +H=1, -3.9%: KEEP"), std::string::npos) << md;
  EXPECT_NE(md.find("- fa/r1 (job 2): REJECT (rejected at correctness: max_abs 0.2)"), std::string::npos) << md;
  EXPECT_NE(md.find("## No-Repeat Map"), std::string::npos);
  EXPECT_NE(md.find("- fa/r2 (job 4): fa.cu +2 -1, +2.0% [simulated]: rejected"), std::string::npos) << md;
}

TEST(McpTools, GatesComeFromTheRunsEvents) {
  json job = {{"state", "rejected"}, {"simulated", false},
              {"verdict", {{"gate", "performance"}, {"outcome", "rejected"}}},
              {"spec", {{"kernel", {{"family", "custom"}}}}}};
  std::vector<json> events = {
      {{"type", "resources"}, {"data", {{"kernels", {{{"name", "k"}, {"registers", 96}}}}}}},
      {{"type", "stage.finished"}, {"data", {{"stage", "resources"}, {"ok", true}}}},
      {{"type", "correctness"}, {"data", {{"case", "small"}, {"seed", 0}, {"ok", true}}}},
      {{"type", "bench.result"}, {"data", {{"median_us", 40.0}, {"n", 30}, {"rel_stdev_pct", 0.4},
                                           {"timing", "events_only"}, {"delta_pct", 5.0}}}}};
  auto g = gates_from_events(job, events);
  EXPECT_EQ(g["gates"]["resources"]["ok"], true);
  EXPECT_EQ(g["gates"]["correctness"]["passed"], 1);
  EXPECT_TRUE(g["gates"]["correctness"]["ok"].is_null());  // its stage did not say
  EXPECT_EQ(g["gates"]["benchmark"]["ok"], false);          // the verdict rejected it there
  EXPECT_EQ(g["gates"]["benchmark"]["noise_pct"], 0.4);
  EXPECT_EQ(g["gates"]["benchmark"]["timing_mode"], "events_only");
  EXPECT_EQ(g["marks"]["simulated"], false);
  EXPECT_EQ(g["marks"]["self_reported"], true);  // family custom: its own scripts timed it
  EXPECT_TRUE(g["marks"]["in_process"].is_null());  // the agent did not say how it timed
}

// A problem's kernel: the benchmark gate carries the verdict's comparisons with kfleet's
// PyTorch references, and the campaign's log its fast_p, the rejection's reason on one line.
TEST(McpTools, TheComparisonsWithPyTorchAndFastPAreInTheOutput) {
  const json versus = {{{"baseline", "eager"}, {"speedup", 1.2}, {"ci_low", 1.19}, {"ci_high", 1.21}, {"case", "small"}},
                       {{"baseline", "compile"}, {"speedup", 0.9}, {"ci_low", 0.89}, {"ci_high", 0.91}, {"case", "small"}}};
  json job = {{"state", "passed"}, {"verdict", {{"outcome", "passed"}, {"versus", versus}}}};
  std::vector<json> events = {{{"type", "bench.result"}, {"data", {{"median_us", 40.0}, {"versus", versus}}}}};
  EXPECT_EQ(gates_from_events(job, events)["gates"]["benchmark"]["versus"], versus);
  job["verdict"].erase("versus");  // an older kfleetd: the bench result's
  EXPECT_EQ(gates_from_events(job, events)["gates"]["benchmark"]["versus"], versus);
  EXPECT_FALSE(gates_from_events(job, {{{"type", "bench.result"}, {"data", {{"median_us", 1.0}}}}})["gates"]["benchmark"]
                   .contains("versus"));
  // The tool's schema documents them (the SDK test checks every answer against it).
  EXPECT_TRUE(schema::verdict_output()["properties"]["verdict"]["properties"]["versus"]["items"]["properties"].contains("ci_low"));
  EXPECT_TRUE(schema::campaign_output()["properties"]["fast_p"]["properties"].contains("kernels"));
  // And a Python launch's kernels with their origins (the verdict's metrics, passed on whole).
  const json launched = schema::verdict_output()["properties"]["verdict"]["properties"]["metrics"]["properties"]["kernels"];
  EXPECT_EQ(launched["properties"]["kernels"]["items"]["properties"]["origin"]["enum"], json({"job", "library"}));

  json c = {{"name", "fa"},
            {"current_best", {{"name", "fa/k1"}, {"job_id", 3}, {"median_us", 36.5}, {"versus", versus}}},
            {"kept_wins", json::array()},
            {"rejections", {{{"name", "fa/r1"}, {"job_id", 2}, {"reason", "rejected at performance: +3%\n0.9x eager"}}}},
            {"no_repeat", json::array()}, {"pending", json::array()},
            {"fast_p", {{"kernels", 2}, {"of", "finished jobs"},
                        {"baselines", {{{"baseline", "eager"}, {"label", "eager"}, {"timed", 1},
                                        {"p", {{{"p", 1}, {"fast", 1}, {"share", 0.5}}}}}}}}}};
  const std::string md = campaign_log_markdown(c);
  EXPECT_NE(md.find("fa/k1 (job 3) -> 36.50 us; 1.20x eager [1.19, 1.21], 0.90x torch.compile [0.89, 0.91] (small)"),
            std::string::npos) << md;
  EXPECT_NE(md.find("REJECT (rejected at performance: +3%)\n"), std::string::npos) << md;
  EXPECT_NE(md.find("## Against PyTorch (fast_p)\nfast_1    eager 1/2 (50%)\n"), std::string::npos) << md;
}

// The agent says how it timed in its bench result (and the verdict's metrics): replayed from a
// process that ran none of the job's code, or in-process.
TEST(McpTools, TheInProcessMarkComesFromTheAgentsTimingMode) {
  json job = {{"state", "passed"}, {"verdict", {{"outcome", "passed"}}}};
  auto bench = [](const char* mode) {
    return std::vector<json>{{{"type", "bench.result"}, {"data", {{"median_us", 40.0}, {"timing_mode", mode}}}}};
  };
  EXPECT_EQ(gates_from_events(job, bench("in_process"))["marks"]["in_process"], true);
  EXPECT_EQ(gates_from_events(job, bench("replay"))["marks"]["in_process"], false);
  job["verdict"]["metrics"] = {{"timing_mode", "in_process"}};
  EXPECT_EQ(gates_from_events(job, {})["marks"]["in_process"], true);
}

// The problem library's tools: a search agent lists the problems, reads one's contract and its
// starter, and learns how a job names it, from the same code as `kfleet problems`.
TEST(McpProblems, ListAndShowOneProblemsContract) {
  const std::string lib = (testing::source_dir() / "kernels/problems").string();
  EnvLookup env = [lib](const std::string& k) -> std::optional<std::string> {
    if (k == "KFLEET_PROBLEMS_DIR") return lib;
    return std::nullopt;
  };
  auto call = [](const std::string& name, const json& args) {
    return json{{"jsonrpc", "2.0"}, {"id", name + args.dump()}, {"method", "tools/call"},
                {"params", {{"name", name}, {"arguments", args}}}};
  };
  auto r = exchange({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}},
                     call("kfleet_list_problems", json::object()),
                     call("kfleet_get_problem", {{"name", "rmsnorm"}}),
                     call("kfleet_get_problem", {{"name", "rmsnrom"}})},
                    problem_tools(env));
  ASSERT_EQ(r.size(), 5u);
  ASSERT_EQ(r[0]["result"]["tools"].size(), 2u);
  EXPECT_EQ(r[0]["result"]["tools"][0]["name"], "kfleet_list_problems");
  EXPECT_EQ(r[0]["result"]["tools"][1]["name"], "kfleet_get_problem");

  const json& list = r[1]["result"]["structuredContent"];
  EXPECT_EQ(list["library"], lib);
  std::vector<std::string> names;
  for (const auto& p : list["problems"]) names.push_back(p["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"attention", "fp8_block_gemm", "grouped_gemm", "rmsnorm",
                                             "rope", "scaled_mm", "softmax", "topk"}));

  const json& p = r[2]["result"]["structuredContent"];
  ASSERT_FALSE(r[2]["result"].value("isError", false)) << r[2].dump();
  EXPECT_EQ(p["ref"], "rmsnorm@2");
  EXPECT_EQ(p["required_cases"], json::array({"stress"}));
  EXPECT_EQ(p["entry"], "kfleet_problem_launch");
  ASSERT_EQ(p["slots"].size(), 3u);
  EXPECT_EQ(p["slots"][0]["name"], "x");
  EXPECT_EQ(p["slots"][2]["name"], "y");
  EXPECT_EQ(p["slots"][2]["role"], "output");
  EXPECT_EQ(p["dims"][1]["name"], "H");
  EXPECT_EQ(p["scalars"][0]["name"], "eps");
  EXPECT_EQ(p["cases"][2]["name"], "llama3_8b");
  EXPECT_EQ(p["cases"][2]["dims"]["H"], 4096);
  EXPECT_NE(p["outputs"][0]["check"].get<std::string>().find("tolerance"), std::string::npos);
  EXPECT_EQ(p["outputs"][0]["must_reject"][0], "zeros");
  EXPECT_NE(p["job"].get<std::string>().find("problem: rmsnorm@2"), std::string::npos);
  EXPECT_NE(p["job"].get<std::string>().find("{name: stress, seeds: [0]}"), std::string::npos);
  // The same text and starter `kfleet problems show rmsnorm` prints: one copy of that code.
  const ProblemLibrary l = load_problem_library(lib);
  EXPECT_EQ(p["contract"], render_problem_contract(*l.find("rmsnorm")));
  EXPECT_EQ(p["starter"], render_problem_starter(*l.find("rmsnorm")));
  EXPECT_NE(p["starter"].get<std::string>().find("kfleet_problem_launch"), std::string::npos);

  EXPECT_TRUE(r[3]["result"]["isError"]);
  EXPECT_NE(r[3]["result"]["content"][0]["text"].get<std::string>().find("no problem 'rmsnrom'"),
            std::string::npos);
}

}  // namespace
}  // namespace kfleet::cli::mcp
