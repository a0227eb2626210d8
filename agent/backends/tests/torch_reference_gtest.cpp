// A problem's kernel against kfleet's PyTorch references (torch_reference.hpp,
// harness_versus.cpp): the cache key and the cache, the comparison, and the whole path through
// the CUDA backend with the fake interpreter and measuring process (python_fixture.hpp): timed
// by the same replay, in the job's sandbox without the job's files, cached, and never the job's
// failure.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/torch_reference.hpp"
#include "kfleet/common/versus.hpp"
#include "python_fixture.hpp"

using namespace cuda_test;
namespace kb = kfleet::backends;

namespace {

kb::ReferenceKeyParts parts() {
  kb::ReferenceKeyParts p;
  p.problem = "rmsnorm";
  p.version = 1;
  p.case_name = "llama3_8b";
  p.gpu_class = "H200";
  p.torch = "2.11.0+cu130";
  p.triton = "3.6.0";
  p.driver = "580.95.05";
  p.measurer = std::string(64, 'a');
  p.reference = std::string(64, 'b');
  p.args = {"benchmark", "--case", "llama3_8b", "--problem-spec", "/agent/cache/problem-specs/rmsnorm@1.0123456789abcdef.spec",
            "--seed", "0", "--min-samples", "10"};
  return p;
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("kfleet_ref_cache_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

}  // namespace

// What a reference's timing depends on is its key: the problem, its version and case, the GPU
// class, torch, triton, the driver, the measuring process, the reference's own text and the
// benchmark's options. The agent's cache folder is not (the spec's path is reduced to its name).
TEST(TorchReferenceKey, NamesWhatTheTimingDependsOn) {
  const auto key = kb::torch_reference_key(parts());
  EXPECT_EQ(key["problem"], "rmsnorm");
  EXPECT_EQ(key["version"], 1);
  EXPECT_EQ(key["case"], "llama3_8b");
  EXPECT_EQ(key["gpu_class"], "H200");
  EXPECT_EQ(key["torch"], "2.11.0+cu130");
  EXPECT_EQ(key["triton"], "3.6.0");
  EXPECT_EQ(key["driver"], "580.95.05");
  EXPECT_EQ(key["measurer"], std::string(16, 'a'));
  EXPECT_EQ(key["reference"], std::string(16, 'b'));
  EXPECT_EQ(key["options"].get<std::string>().size(), 16u);

  auto moved = parts();
  moved.args[4] = "/elsewhere/problem-specs/rmsnorm@1.0123456789abcdef.spec";
  EXPECT_EQ(kb::torch_reference_key(moved), key);
  for (auto change : std::vector<std::function<void(kb::ReferenceKeyParts&)>>{
           [](auto& p) { p.version = 2; },          [](auto& p) { p.case_name = "small"; },
           [](auto& p) { p.gpu_class = "L4"; },     [](auto& p) { p.torch = "2.12.0"; },
           [](auto& p) { p.triton = "3.7.0"; },     [](auto& p) { p.driver = "590.1"; },
           [](auto& p) { p.measurer[0] = 'c'; },    [](auto& p) { p.reference[0] = 'c'; },
           [](auto& p) { p.args.back() = "20"; },
           [](auto& p) { p.args[4] = "/agent/cache/problem-specs/rmsnorm@1.fedcba9876543210.spec"; }}) {
    auto p = parts();
    change(p);
    EXPECT_NE(kb::torch_reference_key(p), key) << kb::torch_reference_key(p).dump();
  }
  EXPECT_EQ(kfleet::versus_key_text(key),
            "rmsnorm@1 case llama3_8b on H200, torch 2.11.0+cu130, triton 3.6.0, driver 580.95.05, "
            "measurer aaaaaaaaaaaaaaaa");
}

TEST(TorchReference, TheLibrarysFileAndTheProblemsEntry) {
  TempDir t;
  KernelSpec k;
  k.problem = "softmax";
  auto missing = kb::torch_reference_source(t.dir.string(), k);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no PyTorch reference of softmax"), std::string::npos);
  fs::create_directories(t.dir / "softmax");
  std::ofstream(t.dir / "softmax" / "reference_torch.py") << "# reference\n";
  auto found = kb::torch_reference_source(t.dir.string(), k);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, (t.dir / "softmax" / "reference_torch.py").string());
  EXPECT_EQ(kb::torch_reference_entry(k), "kfleet_problem_launch");
  KernelSpec attention;
  attention.family = "attention";
  EXPECT_EQ(kb::reference_problem(attention), "attention");
  EXPECT_EQ(kb::torch_reference_entry(attention), "kfleet_attention_launch");
  KernelSpec mm;
  mm.family = "scaled_mm";
  mm.problem = "scaled_mm";
  EXPECT_EQ(kb::torch_reference_entry(mm), "kfleet_scaled_mm_launch");
  KernelSpec custom;
  custom.family = "custom";
  EXPECT_EQ(kb::reference_problem(custom), "");
  // A link in the library is not a reference (the library is the agent's, its files plain).
  fs::create_directories(t.dir / "rope");
  fs::create_symlink(t.dir / "softmax" / "reference_torch.py", t.dir / "rope" / "reference_torch.py");
  KernelSpec rope;
  rope.problem = "rope";
  EXPECT_FALSE(kb::torch_reference_source(t.dir.string(), rope).ok());
}

// The cache believes only the agent's own plain file holding the very key: anything else is a
// miss, whatever it says.
TEST(ReferenceCache, KeepsTimingsAndNotesAndBelievesOnlyItsOwnFiles) {
  TempDir t;
  const kb::ReferenceCache cache((t.dir / "refs").string());
  const auto key = kb::torch_reference_key(parts());
  EXPECT_FALSE(cache.get(key, "eager"));
  kb::ReferenceTiming eager{"eager", key, {10, 11, 12}, ""};
  kb::ReferenceTiming compile{"compile", key, {}, "kfleet's PyTorch torch.compile reference could not be timed: refused"};
  ASSERT_TRUE(cache.put(eager).ok());
  ASSERT_TRUE(cache.put(compile).ok());
  auto e = cache.get(key, "eager");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->samples_us, (std::vector<double>{10, 11, 12}));
  auto c = cache.get(key, "compile");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->samples_us.empty());
  EXPECT_EQ(c->note, compile.note);
  auto other = key;
  other["case"] = "small";
  EXPECT_FALSE(cache.get(other, "eager"));

  const std::string path = cache.path_for(key, "eager");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_mode & 0022, 0u);
  // Writable by others: not believed.
  ::chmod(path.c_str(), 0666);
  EXPECT_FALSE(cache.get(key, "eager"));
  ::chmod(path.c_str(), 0644);
  ASSERT_TRUE(cache.get(key, "eager"));
  // A file holding another key under this key's name: not believed.
  nlohmann::json forged = {{"key", other}, {"baseline", "eager"}, {"samples_us", {1, 1, 1}}, {"note", ""}};
  fs::remove(path);
  std::ofstream(path) << forged.dump();
  ::chmod(path.c_str(), 0644);
  EXPECT_FALSE(cache.get(key, "eager"));
  // A link to another file: not followed.
  fs::remove(path);
  fs::create_symlink(cache.path_for(key, "compile"), path);
  EXPECT_FALSE(cache.get(key, "eager"));
  // A new timing replaces what was there.
  ASSERT_TRUE(cache.put(eager).ok());
  EXPECT_TRUE(cache.get(key, "eager"));
}

TEST(CompareWithReference, SpeedupIntervalAndTheReferencesMedian) {
  const auto key = kb::torch_reference_key(parts());
  const kb::ReferenceTiming ref{"eager", key, {149, 150, 150, 151, 150}, ""};
  const auto c = kb::compare_with_reference({99, 100, 100, 101, 100}, ref, "llama3_8b", true);
  EXPECT_EQ(c.baseline, "eager");
  ASSERT_TRUE(c.speedup);
  EXPECT_DOUBLE_EQ(*c.speedup, 1.5);
  ASSERT_TRUE(c.ci_low && c.ci_high);
  EXPECT_LE(*c.ci_low, 1.5);
  EXPECT_GE(*c.ci_high, 1.5);
  EXPECT_DOUBLE_EQ(*c.reference_us, 150);
  EXPECT_TRUE(c.cached);
  EXPECT_EQ(c.key, key);
  EXPECT_EQ(c.case_name, "llama3_8b");
  const kb::ReferenceTiming none{"compile", key, {}, "could not be timed: refused"};
  const auto n = kb::compare_with_reference({99, 100, 101}, none, "llama3_8b", false);
  EXPECT_FALSE(n.speedup);
  EXPECT_FALSE(n.reference_us);
  EXPECT_EQ(n.note, "could not be timed: refused");
}

namespace {

// The agent's library with kfleet's attention reference, whose text may pick a failure.
struct ReferenceFixture : PythonFixture {
  static std::string library(const fs::path& root, const std::string& text) {
    const fs::path lib = root / "library";
    fs::create_directories(lib / "attention");
    std::ofstream(lib / "attention" / "reference_torch.py") << text;
    return lib.string();
  }
  explicit ReferenceFixture(const std::string& text = "def kfleet_attention_launch(args, stream): ...\n",
                            bool triton = true, int reference_timeout_s = 1800)
      : PythonFixture(triton, library(fs::temp_directory_path() / ("kfleet_cuda_be_" + std::to_string(::getpid())), text),
                      reference_timeout_s) {}
  StageContext gpu_ctx(const JobSpec& s) {
    StageContext c = py_ctx(s);
    c.gpu.gpu_class = "L4";
    c.gpu.driver = "580.95.05";
    return c;
  }
  // The Python job (S=64) on an L4 agent: built, then benchmarked; each benchmark() after it
  // is the next iteration of a search.
  JobSpec spec = PythonFixture::py_job(64);
  StageContext ctx = gpu_ctx(spec);
  StageResult build_and_benchmark() {
    EXPECT_TRUE(backend->build(ctx).ok);
    return backend->benchmark(ctx);
  }
};

const nlohmann::json* comparison(const StageResult& r, const std::string& baseline) {
  if (!r.data.contains("versus")) return nullptr;
  for (const auto& c : r.data["versus"])
    if (c.value("baseline", "") == baseline) return &c;
  return nullptr;
}

}  // namespace

// The job's Triton kernel (100 µs) against the eager reference (150 µs) and the compile one
// (80 µs): 1.50x and 0.80x, each recorded once by kfleet's recorder outside the job's files and
// replayed by the same measuring process; the second benchmark reads both from the cache.
TEST(CudaBackend, AProblemsKernelIsComparedWithKfleetsPyTorchReferencesByTheSameReplay) {
  ReferenceFixture f;
  auto bench = f.build_and_benchmark();
  ASSERT_TRUE(bench.ok) << bench.reason;
  EXPECT_EQ(bench.data["median_us"], 100);
  ASSERT_EQ(bench.data["versus"].size(), 2u) << bench.data.dump();
  const auto* eager = comparison(bench, "eager");
  const auto* compile = comparison(bench, "compile");
  ASSERT_TRUE(eager && compile) << bench.data["versus"].dump();
  EXPECT_DOUBLE_EQ(eager->value("speedup", -1.0), 1.5) << eager->dump();
  EXPECT_DOUBLE_EQ(eager->value("reference_us", -1.0), 150);
  EXPECT_DOUBLE_EQ(compile->value("speedup", -1.0), 0.8) << compile->dump();
  EXPECT_LE(eager->value("ci_low", 9.0), 1.5);
  EXPECT_GE(eager->value("ci_high", -1.0), 1.5);
  EXPECT_FALSE(eager->value("cached", true));
  EXPECT_EQ((*eager)["case"], "mission");
  const auto& key = (*eager)["key"];
  EXPECT_EQ(key["problem"], "attention");
  EXPECT_EQ(key["case"], "mission");
  EXPECT_EQ(key["gpu_class"], "L4");
  EXPECT_EQ(key["torch"], "2.9.0");
  EXPECT_EQ(key["triton"], "3.5.0");
  EXPECT_EQ(key["driver"], "580.95.05");
  EXPECT_EQ(key["measurer"], bench.data["measurer_sha256"].get<std::string>().substr(0, 16));
  EXPECT_EQ(f.recordings_by("reference"), 2);
  // Each recording was told to compile in its own process (the sandbox limits memory: no
  // inductor worker pool) and to write its Python stacks 15 s before the agent's time limit.
  int told = 0;
  for (const auto& [type, data] : f.sink.events)
    if (type == event_type::log_line && data.value("text", "").find("reference_env") != std::string::npos) {
      const auto said = nlohmann::json::parse(data.value("text", ""));
      EXPECT_EQ(said.value("compile_threads", ""), "1") << said.dump();
      EXPECT_EQ(said.value("stacks_after_s", ""), "1785") << said.dump();
      ++told;
    }
  EXPECT_EQ(told, 2);
  // Nothing of the references' folders is left behind.
  EXPECT_TRUE(fs::is_empty(f.root / "cache" / "torch-references" / "work"));

  // The next iteration of the search: both from the cache, nothing recorded again.
  auto again = f.backend->benchmark(f.ctx);
  ASSERT_TRUE(again.ok) << again.reason;
  EXPECT_EQ(f.recordings_by("reference"), 2);
  ASSERT_TRUE(comparison(again, "eager") && comparison(again, "compile"));
  EXPECT_TRUE(comparison(again, "eager")->value("cached", false));
  EXPECT_TRUE(comparison(again, "compile")->value("cached", false));
  EXPECT_DOUBLE_EQ(comparison(again, "compile")->value("speedup", -1.0), 0.8);

  // Other bench options are another key: timed again.
  auto more = f.spec;
  more.benchmark.min_samples = 20;
  auto c2 = f.gpu_ctx(more);
  ASSERT_TRUE(f.backend->build(c2).ok);
  auto third = f.backend->benchmark(c2);
  ASSERT_TRUE(third.ok) << third.reason;
  EXPECT_EQ(f.recordings_by("reference"), 4);
  EXPECT_NE((*comparison(third, "eager"))["key"]["options"], key["options"]);
}

// A reference that cannot be recorded or timed is the fleet's note: the kernel's benchmark
// still passes, with no speedup for that reference. A refusal is cached (it would be refused
// again); a setup failure of the agent's Python is not (the next job tries again).
TEST(CudaBackend, AReferenceThatCannotBeTimedIsANoteNeverTheJobsFailure) {
  {
    ReferenceFixture f("COMPILE_REFUSED\n");
    auto bench = f.build_and_benchmark();
    ASSERT_TRUE(bench.ok) << bench.reason;
    EXPECT_FALSE(bench.infra_error);
    EXPECT_DOUBLE_EQ(comparison(bench, "eager")->value("speedup", -1.0), 1.5);
    const auto& compile = *comparison(bench, "compile");
    EXPECT_FALSE(compile.contains("speedup"));
    const std::string note = compile.value("note", "");
    EXPECT_NE(note.find("kfleet's PyTorch torch.compile reference could not be timed"), std::string::npos) << note;
    EXPECT_NE(note.find("cudnn_x"), std::string::npos) << note;
    auto again = f.backend->benchmark(f.ctx);
    ASSERT_TRUE(again.ok);
    EXPECT_TRUE(comparison(again, "compile")->value("cached", false));
    EXPECT_EQ(f.recordings_by("reference"), 1);  // the eager one, once
  }
  {
    ReferenceFixture f("SETUP_FAIL\n");
    auto bench = f.build_and_benchmark();
    ASSERT_TRUE(bench.ok) << bench.reason;
    for (const char* b : {"eager", "compile"}) {
      const auto& cmp = *comparison(bench, b);
      EXPECT_FALSE(cmp.contains("speedup")) << cmp.dump();
      EXPECT_NE(cmp.value("note", "").find("torch sees no CUDA device"), std::string::npos) << cmp.dump();
      EXPECT_NE(cmp.value("note", "").find("the fleet's failure"), std::string::npos) << cmp.dump();
    }
    auto again = f.backend->benchmark(f.ctx);
    ASSERT_TRUE(again.ok);
    EXPECT_FALSE(comparison(again, "eager")->value("cached", false));
  }
  {
    // No triton on this agent: torch.compile has nothing to generate (the fleet's setup, not
    // cached); eager is still timed. The job is CUDA: the reference does not need its language.
    ReferenceFixture f("def kfleet_attention_launch(args, stream): ...\n", /*triton=*/false);
    auto spec = job(64);
    StageContext c{spec, kTests + "/kernels", (f.root / "work").string(), GpuInfo{}, Comparison{}, f.sink, f.stop};
    c.gpu.gpu_class = "L4";
    ASSERT_TRUE(f.backend->build(c).ok);
    auto bench = f.backend->benchmark(c);
    ASSERT_TRUE(bench.ok) << bench.reason;
    EXPECT_DOUBLE_EQ(comparison(bench, "eager")->value("speedup", -1.0), 1.5);
    const auto& compile = *comparison(bench, "compile");
    EXPECT_FALSE(compile.contains("speedup"));
    EXPECT_NE(compile.value("note", "").find("torch.compile needs triton"), std::string::npos) << compile.dump();
    EXPECT_EQ(f.recordings_by("reference"), 1);
  }
}

// A compile reference still tuning at the agent's --reference-timeout is ended there, and one
// that declines the case says so: notes, and the kernel's verdict as it was.
TEST(CudaBackend, AReferencePastTheAgentsTimeoutOrDecliningTheCaseIsANote) {
  {
    ReferenceFixture f("COMPILE_HANGS\n", true, 2);
    const auto t0 = std::chrono::steady_clock::now();
    auto bench = f.build_and_benchmark();
    ASSERT_TRUE(bench.ok) << bench.reason;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
    EXPECT_DOUBLE_EQ(comparison(bench, "eager")->value("speedup", -1.0), 1.5);
    const auto& compile = *comparison(bench, "compile");
    EXPECT_FALSE(compile.contains("speedup"));
    EXPECT_NE(compile.value("note", "").find("its recording (at most 2 s)"), std::string::npos) << compile.dump();
  }
  {
    ReferenceFixture f("EAGER_DECLINES\n");
    auto bench = f.build_and_benchmark();
    ASSERT_TRUE(bench.ok) << bench.reason;
    const auto& eager = *comparison(bench, "eager");
    EXPECT_FALSE(eager.contains("speedup"));
    EXPECT_NE(eager.value("note", "").find("declined the case (it returned kfleet.UNSUPPORTED)"),
              std::string::npos) << eager.dump();
    EXPECT_DOUBLE_EQ(comparison(bench, "compile")->value("speedup", -1.0), 0.8);
  }
}

// A library without the problem's reference, and an agent that cannot record torch at all:
// notes, and the kernel's benchmark as it was.
TEST(CudaBackend, WithoutAReferenceOrTorchTheVerdictSaysWhyAndTheKernelIsTimed) {
  PythonFixture none(true, (fs::temp_directory_path() / ("kfleet_cuda_be_" + std::to_string(::getpid())) / "empty").string());
  auto spec = PythonFixture::py_job(64);
  auto c = none.py_ctx(spec);
  ASSERT_TRUE(none.backend->build(c).ok);
  auto bench = none.backend->benchmark(c);
  ASSERT_TRUE(bench.ok) << bench.reason;
  ASSERT_EQ(bench.data["versus"].size(), 2u);
  for (const auto& cmp : bench.data["versus"]) {
    EXPECT_FALSE(cmp.contains("speedup"));
    EXPECT_NE(cmp.value("note", "").find("no PyTorch reference of attention"), std::string::npos) << cmp.dump();
  }
  // A job that is not a problem's kernel has no comparison at all.
  Fixture plain;
  auto custom = job(64);
  custom.kernel.family = "custom";
  custom.kernel.steps = CustomSteps{"", "", "echo '{\"metric\":\"time_us\",\"value\":5}'", ""};
  auto cc = plain.ctx(custom);
  auto cb = plain.backend->benchmark(cc);
  ASSERT_TRUE(cb.ok) << cb.reason;
  EXPECT_FALSE(cb.data.contains("versus"));
}
