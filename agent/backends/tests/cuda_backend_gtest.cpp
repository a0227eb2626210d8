// The CUDA backend end to end without a GPU: a real nvcc build of a job kernel linked with a
// stand-in harness (host code that speaks the protocol), the resources gate on real ptxas
// output, the build cache, and the harness child's results, crashes and hangs.
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/harness_backend.hpp"
#include "kfleet/agent/backend.hpp"
#include "test_sandbox.hpp"
#include "kfleet/common/event.hpp"

namespace fs = std::filesystem;
using namespace kfleet;
using namespace kfleet::agent;

namespace {

const std::string kTests = fs::path(KFLEET_BACKEND_TEST_KERNELS).parent_path().string();

class RecordingSink : public EventSink {
 public:
  void emit(const std::string& type, nlohmann::json data) override {
    events.push_back({type, std::move(data)});
  }
  int count(const std::string& type) const {
    int n = 0;
    for (const auto& e : events) n += e.first == type;
    return n;
  }
  std::vector<std::pair<std::string, nlohmann::json>> events;
};

JobSpec job(std::int64_t s_dim) {
  JobSpec s;
  s.name = "t";
  s.timeout_s = 120;  // nvcc on a busy 2-core machine takes seconds; the hang case sets its own
  s.kernel.family = "attention";
  s.kernel.language = "cuda";
  s.kernel.sources = {"job_kernel.cu"};
  s.kernel.entry = "job_tile";
  ResourceBudget b;
  b.max_shared_bytes = 49152;
  b.max_spill_bytes = 0;
  s.gates.resources = b;
  CorrectnessGate g;
  g.dtype = "fp16";
  CorrectnessCase c;
  c.name = "mission";
  c.shape.dims = {{"B", 1}, {"S", s_dim}};
  c.seeds = {0, 1};
  g.cases = {c};
  g.tolerance.max_abs = 0.06;
  s.gates.correctness = g;
  return s;
}

struct Fixture {
  fs::path root = fs::temp_directory_path() / ("kfleet_cuda_be_" + std::to_string(::getpid()));
  RecordingSink sink;
  StopFlag stop;
  BackendPtr backend;
  explicit Fixture(const std::string& arch = "sm_89") {
    fs::create_directories(root / "work");
    backend = make(arch);
  }
  BackendPtr make(const std::string& arch) {
    CudaBackendOptions o;
    o.harness_dir = kTests + "/fake_harness";
    o.gpu_class = "L4";
    o.arch = arch;
    o.cache_dir = (root / "cache").string();
    o.require_exclusive = false;  // no NVML on CI hosts
    o.sandbox = test_sandbox();
    return make_cuda_backend(o);
  }
  ~Fixture() { fs::remove_all(root); }
  StageContext ctx(const JobSpec& s) {
    return StageContext{s, kTests + "/kernels", (root / "work").string(), GpuInfo{},
                        Comparison{}, sink, stop};
  }
};

}  // namespace

TEST(CudaBackend, BuildsGatesAndRunsTheHarness) {
  Fixture f;
  auto spec = job(64);
  auto c = f.ctx(spec);
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason << "\n" << b.data.dump();
  EXPECT_FALSE(b.data["cache_hit"].get<bool>());

  auto r = f.backend->resources(c);
  ASSERT_TRUE(r.ok) << r.reason;
  ASSERT_EQ(r.data["kernels"].size(), 1u);  // the harness's own code is not gated
  EXPECT_EQ(r.data["kernels"][0]["shared_bytes"], 2048 * 4);
  EXPECT_EQ(r.data["ok"], true);

  auto corr = f.backend->correctness(c);
  EXPECT_TRUE(corr.ok) << corr.reason;
  ASSERT_EQ(corr.data["rows"].size(), 2u);
  EXPECT_EQ(corr.data["rows"][1]["seed"], 1);

  c.compare.kind = "value";
  c.compare.median_us = 120;
  auto bench = f.backend->benchmark(c);
  ASSERT_TRUE(bench.ok) << bench.reason;
  // The measuring process's pipe, not the forged line it printed (which went to the log).
  EXPECT_EQ(bench.data["median_us"], 100);
  EXPECT_EQ(bench.data["timing_mode"], "replay");
  bool forged_in_log = false;
  for (const auto& [type, data] : f.sink.events)
    if (type == event_type::log_line && data.value("text", "").find("\"median_us\":1,") != std::string::npos)
      forged_in_log = true;
  EXPECT_TRUE(forged_in_log);
  EXPECT_EQ(bench.data["perf"], "improved");
  EXPECT_LT(bench.data["delta_pct"].get<double>(), -10);

  // Same inputs: the second build is a cache hit and still gates.
  auto again = f.backend->build(c);
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.data["cache_hit"].get<bool>());
  spec.gates.resources->max_shared_bytes = 1024;
  auto tight = f.backend->resources(c);
  EXPECT_FALSE(tight.ok);
  EXPECT_EQ(tight.reason, "job_tile (sm_89): 8192 bytes of shared memory > budget 1024");
}

int objects(const StageResult& b, const char* field) {
  return b.data.at("harness_objects").at(field).get<int>();
}

TEST(CudaBackend, HarnessObjectsAreCompiledOncePerArchAndShared) {
  Fixture f;
  std::vector<std::string> said;
  f.backend->prepare([&](const std::string& m) { said.push_back(m); });
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("harness objects for sm_89 ready: 2 compiled, 0 cached"), std::string::npos)
      << said[0];

  // A new kernel builds its own sources only.
  auto spec = job(64);
  auto c = f.ctx(spec);
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason;
  EXPECT_FALSE(b.data["cache_hit"].get<bool>());
  EXPECT_EQ(objects(b, "compiled"), 0);
  EXPECT_EQ(objects(b, "reused"), 2);
  EXPECT_TRUE(f.backend->correctness(c).ok);  // the binary linked from cached objects runs

  // Another variant of it (a new define): a new binary, the same harness objects.
  auto variant = job(64);
  variant.kernel.defines.push_back({"TILE", "4"});
  auto cv = f.ctx(variant);
  auto bv = f.backend->build(cv);
  ASSERT_TRUE(bv.ok) << bv.reason;
  EXPECT_FALSE(bv.data["cache_hit"].get<bool>());
  EXPECT_EQ(objects(bv, "compiled"), 0);

  // A renamed entry recompiles only the harness source that uses the macro.
  auto renamed = job(64);
  renamed.kernel.flags = {"-DKFLEET_ATTENTION_ENTRY=fake_launch"};
  auto cr = f.ctx(renamed);
  auto br = f.backend->build(cr);
  ASSERT_TRUE(br.ok) << br.reason;
  EXPECT_EQ(objects(br, "compiled"), 1);
  EXPECT_EQ(objects(br, "reused"), 1);

  // Another arch has its own objects.
  auto other = f.make("sm_80");
  auto other_spec = job(64);
  auto co = f.ctx(other_spec);
  auto bo = other->build(co);
  ASSERT_TRUE(bo.ok) << bo.reason;
  EXPECT_EQ(objects(bo, "compiled"), 2);
}

TEST(CudaBackend, APrepareAndABuildAtOnceCompileEachObjectOnce) {
  Fixture f;
  std::vector<std::string> said;
  std::thread warm([&] { f.backend->prepare([&](const std::string& m) { said.push_back(m); }); });
  auto spec = job(64);
  auto c = f.ctx(spec);
  auto b = f.backend->build(c);
  warm.join();
  ASSERT_TRUE(b.ok) << b.reason;
  ASSERT_EQ(said.size(), 1u);
  // Whoever came second waited for the first one's compiles instead of repeating them.
  int prepared = said[0].find("2 compiled") != std::string::npos   ? 2
                 : said[0].find("1 compiled") != std::string::npos ? 1
                                                                   : 0;
  EXPECT_EQ(prepared + objects(b, "compiled"), 2) << said[0] << " / " << b.data.dump();
}

TEST(CudaBackend, ReportsFailuresCrashesAndHangs) {
  Fixture f;
  auto spec = job(7);
  auto c = f.ctx(spec);
  ASSERT_TRUE(f.backend->build(c).ok);
  auto wrong = f.backend->correctness(c);
  EXPECT_FALSE(wrong.ok);
  EXPECT_FALSE(wrong.infra_error);
  EXPECT_EQ(wrong.reason, "case mission seed 0: max_abs 0.21 > 0.06");

  spec.gates.correctness->cases[0].shape.dims = {{"S", 13}};
  auto crash = f.backend->correctness(c);
  EXPECT_FALSE(crash.ok);
  EXPECT_FALSE(crash.infra_error);
  EXPECT_EQ(crash.reason.rfind("harness crashed (SIGSEGV)", 0), 0u) << crash.reason;

  spec.gates.correctness->cases[0].shape.dims = {{"S", 99}};
  spec.timeout_s = 1;
  auto hang = f.backend->correctness(c);
  EXPECT_FALSE(hang.ok);
  EXPECT_NE(hang.reason.find("timed out"), std::string::npos) << hang.reason;
}

// The measuring process is kfleet's: the same file, with the same content, whatever a job's
// flags and defines; none of it in a job's cache entry (kernels/harness/ABI.md, issue 49).
TEST(CudaBackend, JobsWithOtherFlagsAndDefinesGetTheVeryMeasuringProcess) {
  Fixture f;
  auto a = job(64);
  a.kernel.defines = {{"TILE", "4"}, {"UNROLL", ""}};
  a.kernel.flags = {"-O2", "-DEXTRA=1"};
  auto b = job(64);
  b.kernel.defines = {{"TILE", "8"}};
  b.kernel.flags = {"--use_fast_math", "-DKFLEET_ATTENTION_ENTRY=fake_launch"};
  auto ca = f.ctx(a);
  auto ba = f.backend->build(ca);
  ASSERT_TRUE(ba.ok) << ba.reason;
  ASSERT_TRUE(f.backend->correctness(ca).ok);
  auto cb = f.ctx(b);
  auto bb = f.backend->build(cb);
  ASSERT_TRUE(bb.ok) << bb.reason;
  ASSERT_TRUE(f.backend->correctness(cb).ok);
  ASSERT_NE(ba.data["cache_key"], bb.data["cache_key"]);  // two builds, two recorders

  const std::string ma = ba.data["measurer"], mb = bb.data["measurer"];
  EXPECT_EQ(ma, mb);
  EXPECT_EQ(ba.data["measurer_sha256"], bb.data["measurer_sha256"]);
  EXPECT_EQ(kfleet::backends::file_sha256(ma), ba.data["measurer_sha256"].get<std::string>());
  // Outside every job's entry, owned by the agent, writable by nobody.
  const fs::path cache = f.root / "cache";
  EXPECT_EQ(fs::path(ma).parent_path().parent_path(), cache / "measure");
  struct stat st {};
  ASSERT_EQ(::stat(ma.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_mode & 0777, 0555u);
  for (const auto& built : {ba, bb}) {
    const fs::path entry = fs::path(built.data["binary"].get<std::string>()).parent_path();
    EXPECT_FALSE(fs::exists(entry / "kfleet-measure")) << entry;
  }
  // The benchmark's verdict data names it.
  ca.compare.kind = "value";
  ca.compare.median_us = 120;
  auto bench = f.backend->benchmark(ca);
  ASSERT_TRUE(bench.ok) << bench.reason;
  EXPECT_EQ(bench.data["measurer_sha256"], ba.data["measurer_sha256"]);
}

// A job's process cannot write the measuring process: its folder is not in a job's sandbox,
// and where a job's link reads its objects they are read-only binds of root-owned 0444 files.
TEST(CudaBackend, AJobsBuildCannotWriteTheMeasuringProcess) {
  Fixture f;
  auto honest = job(64);
  auto ch = f.ctx(honest);
  auto bh = f.backend->build(ch);
  ASSERT_TRUE(bh.ok) << bh.reason;
  const std::string measurer = bh.data["measurer"];
  const std::string before = kfleet::backends::file_sha256(measurer);

  JobSpec spec;
  spec.timeout_s = 30;
  spec.kernel.family = "custom";
  spec.kernel.language = "cuda";
  const std::string dir = fs::path(measurer).parent_path().string();
  const std::string object = dir + "/main.cpp.o";
  spec.kernel.steps = CustomSteps{
      "echo forged > " + measurer + " || echo 'cannot write the measurer' >&2; "
      "echo forged > " + object + " || echo 'cannot write its object' >&2; exit 3",
      "true", "true", ""};
  auto c = f.ctx(spec);
  auto b = f.backend->build(c);
  EXPECT_FALSE(b.ok);
  std::string log;
  for (const auto& [type, data] : f.sink.events)
    if (type == event_type::log_line) log += data.value("text", "") + "\n";
  // Where it failed: the path does not exist in the job's sandbox.
  EXPECT_NE(log.find("cannot write the measurer"), std::string::npos) << log;
  EXPECT_NE(log.find("cannot write its object"), std::string::npos) << log;
  EXPECT_NE(log.find("Directory nonexistent"), std::string::npos) << log;
  EXPECT_EQ(kfleet::backends::file_sha256(measurer), before);
  EXPECT_TRUE(f.backend->correctness(ch).ok);
}

// A sandboxed process that can see the measuring process's folder (as a job's link sees its
// objects) still cannot write it: read-only binds of files the agent owns.
TEST(CudaBackend, TheMeasuringProcessIsReadOnlyWhereAJobProcessSeesIt) {
  Fixture f;
  auto honest = job(64);
  auto ch = f.ctx(honest);
  auto bh = f.backend->build(ch);
  ASSERT_TRUE(bh.ok) << bh.reason;
  const std::string measurer = bh.data["measurer"];
  const std::string before = kfleet::backends::file_sha256(measurer);
  kfleet::backends::SubprocessSpec sp;
  sp.sandbox_policy = test_sandbox();
  sp.sandbox.readable = {fs::path(measurer).parent_path().string()};
  sp.argv = {"/bin/sh", "-c", "echo forged > " + measurer + "; echo x > " +
                                  fs::path(measurer).parent_path().string() + "/new.o"};
  sp.timeout_s = 30;
  auto r = kfleet::backends::run_subprocess(sp);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->ok());
  // Both writes refused: the read-only bind or the agent's 0555/0444 modes, whichever the
  // kernel checks first.
  int refused = 0;
  for (std::size_t at = 0; (at = r->err.find("cannot create", at)) != std::string::npos; ++at) ++refused;
  EXPECT_EQ(refused, 2) << r->err;
  EXPECT_TRUE(r->err.find("Read-only file system") != std::string::npos ||
              r->err.find("Permission denied") != std::string::npos) << r->err;
  EXPECT_EQ(kfleet::backends::file_sha256(measurer), before);
}

// What the agent built is checked before every stage: a measuring process changed behind its
// back is not used, and one found in the cache that is not the agent's alone is built again.
TEST(CudaBackend, AChangedMeasuringProcessIsNeverUsed) {
  Fixture f;
  auto spec = job(64);
  auto c = f.ctx(spec);
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason;
  const std::string measurer = b.data["measurer"];
  ::chmod(measurer.c_str(), 0755);
  std::ofstream(measurer, std::ios::app) << "tampered";
  ::chmod(measurer.c_str(), 0555);
  auto r = f.backend->correctness(c);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.infra_error);
  EXPECT_NE(r.reason.find("changed since it was built"), std::string::npos) << r.reason;

  // A new agent finds it in the cache, sees it does not match its digest, and builds it anew.
  auto fresh = f.make("sm_89");
  auto b2 = fresh->build(c);
  ASSERT_TRUE(b2.ok) << b2.reason;
  EXPECT_EQ(b2.data["measurer"], b.data["measurer"]);
  EXPECT_EQ(b2.data["measurer_sha256"], b.data["measurer_sha256"]);
  EXPECT_TRUE(fresh->correctness(c).ok);

  // One owned by another uid (what a job's process would leave) is not adopted either.
  auto third = f.make("sm_89");
  ::chown(measurer.c_str(), 65534, 65534);
  auto b3 = third->build(c);
  ASSERT_TRUE(b3.ok) << b3.reason;
  struct stat st {};
  ASSERT_EQ(::stat(measurer.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

// The recorder's launch list is read only as a regular file of its own: a link it leaves there
// (to a host file the measuring process's sandbox would bind) is the kernel's rejection.
TEST(CudaBackend, ALaunchListLeftAsALinkIsRefused) {
  Fixture f;
  auto spec = job(19);
  auto c = f.ctx(spec);
  ASSERT_TRUE(f.backend->build(c).ok);
  auto r = f.backend->correctness(c);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.infra_error);
  EXPECT_NE(r.reason.find("replay mode refused the launch list"), std::string::npos) << r.reason;
}

// A Python kernel through the CudaBackend without a GPU or torch: a fake interpreter that answers
// discover_python's probe and, as the recorder (kfleet_record.py's command line), writes a
// launch list and a device-code image; the stand-in measuring process replays them.
struct PythonFixture : Fixture {
  fs::path bundle = root / "bundle";
  fs::path python = root / "py" / "python3";
  // `triton`: whether the probe finds triton (without it: torch only).
  explicit PythonFixture(bool triton = true) {
    fs::create_directories(bundle);
    fs::create_directories(python.parent_path());
    std::ofstream(bundle / "attn.py") << "def kfleet_attention_launch(args, stream):\n    return 0\n";
    std::ofstream(python)
        << "#!/bin/sh\n"
        << "if [ \"$1\" = -I ]; then\n"
        << "  echo 'KFLEET_PYTHON_PROBE {\"python\": \"" << python.string() << "\", \"python_version\": "
        << "\"3.12.3\", \"torch\": \"2.9.0\", \"torch_cuda\": \"12.8\", \"keep_graph\": true, "
        << (triton ? "\"triton\": \"3.5.0\", " : "\"triton_error\": \"No module named triton\", ")
        << "\"cc\": \"/usr/bin/cc\", \"cuda_home\": \"/usr/local/cuda\"}'\n"
        << "  exit 0\n"
        << "fi\n"
        << "while [ $# -gt 0 ]; do\n"
        << "  case \"$1\" in\n"
        << "    --measure) m=$2; shift;; --device-code-dir) d=$2; shift;; --record) l=$2; shift;;\n"
        << "    --shape) shape=$2; shift;; --source) src=$2; shift;; --language) lang=$2; shift;;\n"
        << "  esac; shift\n"
        << "done\n"
        // What the agent must give it: the measuring process (for the plan), its launch module,
        // CC and CUDA_HOME, and a HOME and TMPDIR it can write.
        << "[ -x \"$m\" ] && [ -r \"$src\" ] && [ \"$lang\" = triton ] || { echo '{\"type\":\"error\","
           "\"phase\":\"setup\",\"message\":\"no plan\"}'; exit 3; }\n"
        << "[ -n \"$CC\" ] && [ -n \"$CUDA_HOME\" ] && touch \"$HOME/h\" \"$TMPDIR/t\" || { echo "
           "'{\"type\":\"error\",\"phase\":\"setup\",\"message\":\"environment\"}'; exit 3; }\n"
        << "case \"$shape\" in\n"
        << "  *S=5) echo '{\"type\":\"error\",\"phase\":\"record\",\"message\":\"replay mode refused the "
           "launch (correctness): kernel at::x (operation 1) has no device code the recorder can give "
           "the measuring process\"}'; exit 4;;\n"
        << "  *S=21) ln -s /etc/hostname \"$d/0123456789abcdef.cubin\";;\n"
        << "  *S=22) echo x > \"$d/0123456789abcdef.cubin\"; ln \"$d/0123456789abcdef.cubin\" \"$d/aaaaaaaaaaaaaaaa.cubin\";;\n"
        << "  *S=23) ;;\n"
        << "  *) echo cubin > \"$d/0123456789abcdef.cubin\";;\n"
        << "esac\n"
        << "echo 'kfleet-launch-list 1' > \"$l\"\n"
        << "echo '{\"type\":\"recorded\",\"lists\":1,\"by\":\"python\"}'\n";
    ::chmod(python.c_str(), 0755);
    CudaBackendOptions o;
    o.harness_dir = kTests + "/fake_harness";
    o.gpu_class = "L4";
    o.arch = "sm_89";
    o.cache_dir = (root / "cache").string();
    o.require_exclusive = false;
    o.sandbox = test_sandbox();
    o.python = python.string();
    backend = make_cuda_backend(o);
  }
  static JobSpec py_job(std::int64_t s_dim) {
    JobSpec s = job(s_dim);
    s.kernel.language = "triton";
    s.kernel.sources = {"attn.py"};
    s.kernel.entry = "";
    s.gates.resources.reset();
    return s;
  }
  StageContext py_ctx(const JobSpec& s) {
    return StageContext{s, bundle.string(), (root / "work").string(), GpuInfo{}, Comparison{}, sink, stop};
  }
  int python_recordings() const {
    int n = 0;
    for (const auto& [type, data] : sink.events)
      n += type == event_type::log_line && data.value("text", "").find("\"by\":\"python\"") != std::string::npos;
    return n;
  }
};

TEST(CudaBackend, APythonKernelIsRecordedByPythonAndReplayedByTheMeasuringProcess) {
  PythonFixture f;
  auto spec = PythonFixture::py_job(64);
  auto c = f.py_ctx(spec);
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason << "\n" << b.data.dump();
  EXPECT_EQ(b.data["recorder"], "python");
  EXPECT_EQ(b.data["binary"], (f.bundle / "attn.py").string());
  EXPECT_FALSE(b.data.value("measurer", "").empty());
  // Nothing of the job was compiled: no cache entry but the measuring process's.
  for (const auto& e : fs::directory_iterator(f.root / "cache"))
    EXPECT_FALSE(fs::exists(e.path() / "kfleet-harness")) << e.path();

  auto r = f.backend->resources(c);
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_TRUE(r.data.contains("skipped"));

  auto corr = f.backend->correctness(c);
  ASSERT_TRUE(corr.ok) << corr.reason;
  ASSERT_EQ(corr.data["rows"].size(), 2u);
  EXPECT_EQ(f.python_recordings(), 1);

  auto bench = f.backend->benchmark(c);
  ASSERT_TRUE(bench.ok) << bench.reason;
  EXPECT_EQ(bench.data["median_us"], 100);  // the measuring process's pipe
  EXPECT_EQ(bench.data["timing_mode"], "replay");
  EXPECT_EQ(bench.data["measurer_sha256"], b.data["measurer_sha256"]);
  EXPECT_EQ(f.python_recordings(), 2);
  // The recorder's device code is the agent's now: not writable by the job's uid.
  struct stat st {};
  ASSERT_EQ(::stat((f.root / "work" / "device-code-2" / "0123456789abcdef.cubin").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_mode & 0022, 0u);

  auto prof = f.backend->profile(c);
  EXPECT_TRUE(prof.ok);
}

// What the Python recorder leaves is the job's data: a refusal is the kernel's rejection, and
// device code that is a link, a second name of one file, or missing is refused before the
// measuring process is given it.
TEST(CudaBackend, APythonRecordersRefusalAndBadDeviceCodeAreTheKernelsRejection) {
  PythonFixture f;
  const std::vector<std::pair<int, std::string>> cases = {
      {5, "has no device code the recorder can give the measuring process"},
      {21, "0123456789abcdef.cubin"},
      {22, "aaaaaaaaaaaaaaaa.cubin"},
      {23, "wrote no device code"}};
  for (const auto& [s_dim, why] : cases) {
    auto spec = PythonFixture::py_job(s_dim);
    auto c = f.py_ctx(spec);
    ASSERT_TRUE(f.backend->build(c).ok) << s_dim;
    auto r = f.backend->correctness(c);
    EXPECT_FALSE(r.ok) << s_dim;
    EXPECT_FALSE(r.infra_error) << s_dim << ": " << r.reason;
    EXPECT_NE(r.reason.find(why), std::string::npos) << s_dim << ": " << r.reason;
  }
}

TEST(CudaBackend, APythonThatCannotRecordTheLanguageIsTheFleetsSetup) {
  PythonFixture f(/*triton=*/false);
  auto spec = PythonFixture::py_job(64);
  auto c = f.py_ctx(spec);
  auto b = f.backend->build(c);
  EXPECT_FALSE(b.ok);
  EXPECT_TRUE(b.infra_error);
  EXPECT_NE(b.reason.find("cannot record triton kernels"), std::string::npos) << b.reason;
  EXPECT_NE(b.reason.find("triton: No module named triton"), std::string::npos) << b.reason;
}

// Interleaved A/B: a Python candidate against a CUDA reference, each side recorded its own way
// and replayed by the same measuring process.
TEST(CudaBackend, APythonCandidateInterleavesWithACudaReference) {
  PythonFixture f;
  auto spec = PythonFixture::py_job(64);
  spec.benchmark.max_rounds = 2;
  spec.benchmark.max_time_s = 2;
  auto c = f.py_ctx(spec);
  c.compare.kind = "baseline";
  c.compare.label = "cuda reference";
  c.compare.interleave = true;
  c.compare.spec = job(64);
  c.compare.bundle_hash = "ref";
  c.baseline_bundle_dir = kTests + "/kernels";
  auto b = f.backend->build(c);
  ASSERT_TRUE(b.ok) << b.reason << "\n" << b.data.dump();
  ASSERT_TRUE(b.data.contains("baseline_build"));
  auto bench = f.backend->benchmark(c);
  ASSERT_TRUE(bench.ok) << bench.reason << "\n" << bench.data.dump();
  EXPECT_GE(f.python_recordings(), 2);
  int cuda_recordings = 0;
  for (const auto& [type, data] : f.sink.events)
    cuda_recordings += type == event_type::log_line && data.value("text", "") == "{\"lists\":1,\"type\":\"recorded\"}";
  EXPECT_GE(cuda_recordings, 2);
}

// Whatever a job's processes leave in its build folder is the job's data: links and special
// files are removed before the agent writes a file beside them or moves the folder into the cache.
TEST(JobFiles, LinksAndSpecialFilesAreNotKept) {
  const fs::path d = fs::temp_directory_path() / ("kfleet_take_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "sub");
  std::ofstream(d / "kernel.cu.o") << "object";
  std::ofstream(d / "sub" / "kept") << "x";
  fs::create_symlink("/etc/hostname", d / "compile.log");
  fs::create_symlink("/etc", d / "sub" / "etc");
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  std::ofstream(d / "twice") << "y";
  fs::create_hard_link(d / "twice", d / "twice2");
  const std::string removed = kfleet::backends::take_job_files(d.string());
  EXPECT_TRUE(fs::exists(d / "kernel.cu.o"));
  EXPECT_TRUE(fs::exists(d / "sub" / "kept"));
  for (const char* gone : {"compile.log", "sub/etc", "fifo", "twice", "twice2"}) {
    EXPECT_FALSE(fs::exists(fs::symlink_status(d / gone))) << gone;
    EXPECT_NE(removed.find(gone), std::string::npos) << removed;
  }
  // The agent's own file is created anew, never through a link left there.
  fs::create_symlink("/etc/hostname", d / "done");
  ASSERT_TRUE(kfleet::backends::write_new_file((d / "done").string(), "key\n").ok());
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(d / "done")));
  fs::remove_all(d);
}

TEST(CudaBackend, ARecorderRefusalIsTheKernelsRejection) {
  Fixture f;
  auto spec = job(5);
  auto c = f.ctx(spec);
  ASSERT_TRUE(f.backend->build(c).ok);
  auto r = f.backend->correctness(c);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.infra_error);
  EXPECT_NE(r.reason.find("replay mode refused the launch"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("host function node"), std::string::npos) << r.reason;
}

// A launch function that aborts in the recorder (here: it starts threads until the sandbox's
// process limit refuses one, as a job that interposes every descriptor it finds once did) is the
// job's failure, and the verdict names the recorder, the signal, the limit and what it printed:
// not "harness crashed", which would blame the measuring process.
TEST(CudaBackend, ARecorderThatAbortsIsNamedNotTheHarness) {
  Fixture f;
  auto spec = job(17);
  auto c = f.ctx(spec);
  ASSERT_TRUE(f.backend->build(c).ok);
  auto r = f.backend->correctness(c);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.infra_error);
  EXPECT_EQ(r.reason.rfind("the recorder (the job's launch function under capture) was killed by "
                           "SIGABRT (after the sandbox's process limit refused a new process or "
                           "thread): ", 0), 0u) << r.reason;
  EXPECT_NE(r.reason.find("Resource temporarily unavailable"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find("harness crashed"), std::string::npos) << r.reason;
}

TEST(CudaBackend, InProcessTimingIsAskedForSaidAndNeverRoot) {
  Fixture f;
  auto spec = job(64);
  spec.kernel.params = {{"timing", "in_process"}};
  auto c = f.ctx(spec);
  ASSERT_TRUE(f.backend->build(c).ok);
  auto bench = f.backend->benchmark(c);
  if (::geteuid() == 0) {
    EXPECT_FALSE(bench.ok);
    EXPECT_FALSE(bench.infra_error);
    EXPECT_NE(bench.reason.find("refuses to run as root"), std::string::npos) << bench.reason;
    return;
  }
  ASSERT_TRUE(bench.ok) << bench.reason;
  EXPECT_EQ(bench.data["median_us"], 100);  // from the pipe, here too
  EXPECT_EQ(bench.data["timing_mode"], "in_process");
  EXPECT_EQ(bench.data["timing_mode_note"],
            "in-process timing: the kernel's host code ran in the measuring process");
}

TEST(CudaBackend, ACompileErrorIsAOneLineReason) {
  Fixture f;
  fs::path bundle = f.root / "bundle";
  fs::create_directories(bundle);
  std::ofstream(bundle / "job_kernel.cu") << "__global__ void k() { this is not cuda; }\n";
  auto spec = job(64);
  StageContext c{spec, bundle.string(), (f.root / "work").string(), GpuInfo{}, Comparison{},
                 f.sink, f.stop};
  auto b = f.backend->build(c);
  EXPECT_FALSE(b.ok);
  EXPECT_FALSE(b.infra_error);
  EXPECT_NE(b.reason.find("compile failed"), std::string::npos) << b.reason;
  EXPECT_NE(b.reason.find("error"), std::string::npos) << b.reason;
}

TEST(CustomFamily, RunsStepsAndParsesMetricLines) {
  Fixture f;
  JobSpec spec;
  spec.timeout_s = 10;
  spec.kernel.family = "custom";
  spec.kernel.language = "cuda";
  spec.kernel.steps = CustomSteps{"true", "exit 0",
                                  "echo log; echo '{\"metric\":\"time_ms\",\"value\":2.0,"
                                  "\"samples\":[2.0,2.0,2.01,1.99,2.0]}'",
                                  ""};
  auto c = f.ctx(spec);
  c.compare.median_us = 2200;  // every sample is >= 8% faster
  EXPECT_TRUE(f.backend->build(c).ok);
  EXPECT_TRUE(f.backend->correctness(c).ok);
  auto b = f.backend->benchmark(c);
  ASSERT_TRUE(b.ok) << b.reason;
  EXPECT_DOUBLE_EQ(b.data["median_us"].get<double>(), 2000.0);
  EXPECT_EQ(b.data["perf"], "improved");
  spec.kernel.steps->test = "echo broken >&2; exit 4";
  auto t = f.backend->correctness(c);
  EXPECT_FALSE(t.ok);
  EXPECT_NE(t.reason.find("exit code 4"), std::string::npos) << t.reason;
}

TEST(MetricLines, OnlyWellFormedMetricsCount) {
  auto m = kfleet::backends::parse_metric_lines(
      "hello\n{\"metric\":\"gflops\",\"value\":3.5}\n{\"metric\":\"x\"}\n{bad json\n"
      "{\"value\":1}\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["metric"], "gflops");
}
