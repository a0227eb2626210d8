// kfleet problems: the library listed and one problem's contract shown, from the repository's
// kernels/problems (or --dir / $KFLEET_PROBLEMS_DIR), with no server and no token.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../../common/tests/test_paths.hpp"
#include "kfleet/cli/app.hpp"
#include "kfleet/common/clock.hpp"
#include "problems_view.hpp"
#include "run_kfleet.hpp"

namespace kfleet::cli {
namespace {
namespace fs = std::filesystem;

const std::string kLibrary = (testing::source_dir() / "kernels/problems").string();

using test::Ran;

// kfleet with the repository's library as $KFLEET_PROBLEMS_DIR, unless `env` says otherwise.
Ran run_kfleet(std::vector<std::string> args,
               std::map<std::string, std::string> env = {{"KFLEET_PROBLEMS_DIR", kLibrary}}) {
  return test::run_kfleet(std::move(args), std::move(env));
}

TEST(ProblemsCommand, ListsTheLibrary) {
  const Ran r = run_kfleet({"problems"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("NAME            VERSION  ABI        CASES  SUMMARY\n", 0), 0u) << r.out;
  for (const char* n : {"attention", "fp8_block_gemm", "grouped_gemm", "rmsnorm", "rope", "scaled_mm", "softmax", "topk"})
    EXPECT_NE(r.out.find(std::string("\n") + n + " "), std::string::npos) << n << "\n" << r.out;
  EXPECT_NE(r.out.find("rmsnorm         2        generic    5      RMSNorm over the hidden dimension"), std::string::npos) << r.out;
}

TEST(ProblemsCommand, ListsAsJson) {
  const Ran r = run_kfleet({"problems", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["problems"].size(), 8u);
  EXPECT_EQ(j["problems"][0]["name"], "attention");
  EXPECT_EQ(j["problems"][0]["abi"], "attention");
}

TEST(ProblemsCommand, ShowsTheContractAndAStarter) {
  const Ran r = run_kfleet({"problems", "show", "rope"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {
           "rope v2: rotary embedding applied in place",
           "extern \"C\" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream);",
           "dims (args->dims[i]):\n  0  T\n  1  HQ\n  2  HK\n  3  D\n  4  P\n",
           "  0  q          inout  bf16   [T, HQ, D]  normal(mean 0, std 1) -> check tolerance |x - ref| <= 0.02 + 0.01 * |ref|; must reject: zeros, copy of q",
           "  2  positions  input  int32  [T]         integers in [0, 127]",
           "  small: T=8 HQ=4 HK=2 D=64 P=128  (",
           "kernel naive: naive.cu (cuda, hip)",
           "  stress (required): T=64 HQ=32 HK=8 D=64 P=131072  (",
           "    positions: integers in [0, 131071]",
           "    q: normal(mean 0, std 1), 2 outlier columns (5, 37) at +-[50, 500]",
           "every job runs the required case stress (a job may add cases and seeds, not drop one)",
           "enum { Q = 0, K = 1, POSITIONS = 2, COS_SIN = 3, NUM_TENSORS = 4 };",
           "  // q: bf16 [T, HQ, D], inout (read it, then overwrite it)",
       }) {
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing: " << want << "\n" << r.out;
  }
  const Ran s = run_kfleet({"problems", "show", "rope", "--starter"});
  EXPECT_EQ(s.out.rfind("// Starter for problem rope v2 (", 0), 0u) << s.out;
  EXPECT_EQ(s.out.find("dims (args->dims[i])"), std::string::npos);
  const Ran t = run_kfleet({"problems", "show", "topk"});
  EXPECT_NE(t.out.find("check topk: the k largest of each row of x, in order; tied values in any index order; must reject: zeros, iota"), std::string::npos) << t.out;
  const Ran f = run_kfleet({"problems", "show", "fp8_block_gemm"});
  EXPECT_NE(f.out.find("fp8 e4m3, real = code * a_scale of its 1x128 block"), std::string::npos) << f.out;
  const Ran a = run_kfleet({"problems", "show", "attention", "--starter"});
  EXPECT_NE(a.out.find("extern \"C\" int kfleet_attention_launch(const kfleet_attention_args* args"), std::string::npos) << a.out;
  // A case with its own bounds says so under the case (scaled_mm@4's n8192: atol grows with K).
  const Ran m = run_kfleet({"problems", "show", "scaled_mm"});
  EXPECT_NE(m.out.find("    d checked: tolerance |x - ref| <= 0.028 + 0.01 * |ref| rel_l2 <= 0.01\n"), std::string::npos) << m.out;
  const auto mj = nlohmann::json::parse(run_kfleet({"problems", "show", "scaled_mm", "--json"}).out);
  EXPECT_NE(m.out.find("    d checked: tolerance |x - ref| <= 0.01 + 0.01 * |ref| + 0.001 * sum |terms| rel_l2 <= 0.01\n"),
            std::string::npos) << m.out;  // stress
  for (const auto& c : mj["cases"])
    EXPECT_EQ(c.contains("check"), c["name"] == "n8192" || c["name"] == "stress") << c.dump();
  EXPECT_EQ(mj["cases"][2]["check"]["d"], "tolerance |x - ref| <= 0.028 + 0.01 * |ref| rel_l2 <= 0.01");
}

TEST(ProblemsCommand, UnknownProblemSuggestsTheNearest) {
  const Ran r = run_kfleet({"problems", "show", "rmsnrom"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "kfleet: no problem 'rmsnrom' in " + kLibrary + "; did you mean 'rmsnorm'?\n");
}

TEST(ProblemsCommand, DirFlagWinsAndIssuesAreNamed) {
  const fs::path dir = fs::temp_directory_path() / ("kfleet-problems-" + std::to_string(::getpid())) / "problems";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir / "bad");
  std::ofstream(dir / "bad" / "problem.yaml") << "problem: bad\nversion: one\n";
  const Ran r = run_kfleet({"problems", "--dir", dir.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "no problems in " + dir.string() + "\n");
  EXPECT_NE(r.err.find((dir / "bad/problem.yaml").string() + ":2:10: version: must be a whole number, not 'one'"), std::string::npos) << r.err;
  fs::remove_all(dir.parent_path());
}

TEST(ProblemsCommand, NeedsNoServerOrToken) {
  // No KFLEET_SERVER, no token, an unreadable config path: the library is local.
  const Ran r = run_kfleet({"problems", "show", "softmax"}, {{"KFLEET_PROBLEMS_DIR", kLibrary}, {"KFLEET_CONFIG", "/nonexistent/config.yaml"}});
  EXPECT_EQ(r.code, 0) << r.err;
}

// A library kernel's slot, dimension and scalar indices are the ones its problem.yaml gives:
// each enum line of the starter (generated from the definition) is in the kernel verbatim, so
// a definition and its kernels cannot drift apart unnoticed.
TEST(ProblemsCommand, LibraryKernelsUseTheStartersIndices) {
  const ProblemLibrary lib = load_problem_library(kLibrary);
  int checked = 0;
  for (const auto& p : lib.problems) {
    if (p.abi != "generic") continue;
    std::istringstream starter(render_problem_starter(p));
    std::vector<std::string> enums;
    for (std::string line; std::getline(starter, line);)
      if (line.rfind("enum {", 0) == 0) enums.push_back(line);
    ASSERT_FALSE(enums.empty());
    // The library's kernels, and the test kernels beside them (wrong, do-nothing, shortcuts).
    std::vector<fs::path> files;
    for (const auto& k : p.kernels)
      files.push_back(problem_file_path(lib.root, (fs::path(lib.root) / p.name).string(), k.source));
    for (const auto& e : fs::directory_iterator(fs::path(lib.root) / p.name / "tests"))
      if (e.path().extension() == ".cu" && e.path().filename() != "nothing.cu") files.push_back(e.path());
    for (const auto& f : files) {
      std::ifstream in(f);
      std::stringstream text;
      text << in.rdbuf();
      for (const auto& e : enums) {
        EXPECT_NE(text.str().find(e), std::string::npos) << p.name << "/" << f.filename() << " lacks: " << e;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 12);
}

}  // namespace
}  // namespace kfleet::cli
