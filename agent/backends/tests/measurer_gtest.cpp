// The measuring process is kfleet's (kernels/harness/ABI.md, "The measuring process is kfleet's"):
// built by the agent, the same for every job, out of every job's reach, and checked before use;
// and what a job's processes leave behind is taken over as the job's data.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cuda_fixture.hpp"

using namespace cuda_test;

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

namespace {

// job(64) built by f's backend: its context, and the measuring process its build made with that
// file's sha256 then (both "" when the build failed, and the test fails).
struct HonestBuild {
  JobSpec spec = job(64);
  StageContext ctx;
  std::string measurer, sha256;
  explicit HonestBuild(Fixture& f) : ctx(f.ctx(spec)) {
    auto b = f.backend->build(ctx);
    EXPECT_TRUE(b.ok) << b.reason;
    if (!b.ok) return;
    measurer = b.data.value("measurer", "");
    sha256 = kfleet::backends::file_sha256(measurer);
  }
};

}  // namespace

// A job's process cannot write the measuring process: its folder is not in a job's sandbox,
// and where a job's link reads its objects they are read-only binds of root-owned 0444 files.
TEST(CudaBackend, AJobsBuildCannotWriteTheMeasuringProcess) {
  Fixture f;
  HonestBuild honest(f);
  const std::string measurer = honest.measurer, before = honest.sha256;
  ASSERT_FALSE(measurer.empty());

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
  EXPECT_TRUE(f.backend->correctness(honest.ctx).ok);
}

// A sandboxed process that can see the measuring process's folder (as a job's link sees its
// objects) still cannot write it: read-only binds of files the agent owns.
TEST(CudaBackend, TheMeasuringProcessIsReadOnlyWhereAJobProcessSeesIt) {
  Fixture f;
  HonestBuild honest(f);
  const std::string measurer = honest.measurer, before = honest.sha256;
  ASSERT_FALSE(measurer.empty());
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
  auto r = f.correctness_of(19);
  expect_kernels_rejection(r, {"replay mode refused the launch list"});
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
  // A folder replaced by a link (to a host folder) is not walked: nothing there is touched.
  const fs::path host = d / "host";
  fs::create_directories(host);
  std::ofstream(host / "secret") << "s";
  ::chmod((host / "secret").c_str(), 0600);
  fs::create_symlink(host, d / "linked");
  EXPECT_EQ(kfleet::backends::take_job_files((d / "linked").string()), ".");
  EXPECT_FALSE(fs::exists(fs::symlink_status(d / "linked")));
  struct stat st {};
  ASSERT_EQ(::stat((host / "secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The agent's own file is created anew, never through a link left there.
  fs::create_symlink("/etc/hostname", d / "done");
  ASSERT_TRUE(kfleet::backends::write_new_file((d / "done").string(), "key\n").ok());
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(d / "done")));
  fs::remove_all(d);
}
