#include "kfleet/common/bundle.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

namespace kfleet {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("kfleet-bundle-" + std::to_string(rd()) + "-" +
                                         std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void write(const std::string& rel, const std::string& content) const {
    fs::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel, std::ios::binary) << content;
  }

 private:
  fs::path path_;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(BundlePath, NormalizesAndRefusesEscapes) {
  EXPECT_EQ(*normalize_bundle_path("a.cu"), "a.cu");
  EXPECT_EQ(*normalize_bundle_path("./src//b.cu"), "src/b.cu");
  for (const char* bad : {"", "/etc/passwd", "../x.cu", "src/../../x.cu", "a\\b.cu", ".", "./"}) {
    auto r = normalize_bundle_path(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(normalize_bundle_path("../x.cu").error().message.find(".."), std::string::npos);
}

TEST(Bundle, HashIndependentOfOrderAndSensitiveToBytes) {
  TempDir d;
  d.write("a.cu", "kernel a");
  d.write("inc/b.h", "header b");
  auto b1 = pack_bundle(d.path().string(), {"a.cu", "inc/b.h"});
  auto b2 = pack_bundle(d.path().string(), {"inc/b.h", "./a.cu", "a.cu"});
  ASSERT_TRUE(b1.ok()) << b1.error().message;
  ASSERT_TRUE(b2.ok()) << b2.error().message;
  EXPECT_EQ(b1->files.size(), 2u);
  EXPECT_EQ(b2->files.size(), 2u);
  EXPECT_EQ(b1->files[0].path, "a.cu");
  EXPECT_EQ(b1->hash(), b2->hash());
  EXPECT_EQ(b1->hash().rfind("sha256:", 0), 0u);
  EXPECT_EQ(b1->total_bytes(), 16u);

  d.write("a.cu", "kernel b");
  auto b3 = pack_bundle(d.path().string(), {"a.cu", "inc/b.h"});
  ASSERT_TRUE(b3.ok());
  EXPECT_NE(b1->hash(), b3->hash());

  // Renaming a file changes the hash even when bytes are identical.
  Bundle renamed = *b1;
  renamed.files[0].path = "a2.cu";
  EXPECT_NE(renamed.hash(), b1->hash());
}

// A clone: <root>/kernels/{harness/ABI.md, suite/k.cu} and a job folder <root>/jobs/x.
struct Clone {
  TempDir root;
  Clone() {
    root.write("kernels/harness/ABI.md", "abi");
    root.write("kernels/suite/k.cu", "library kernel");
    root.write("jobs/x/job.yaml", "name: x");
    root.write("jobs/x/a.cu", "job kernel");
  }
  std::string job() const { return (root.path() / "jobs" / "x").string(); }
  std::string lib() const { return fs::canonical(root.path() / "kernels").string(); }
};

TEST(LibrarySources, EntriesNormalizeAndRefuseEscapes) {
  EXPECT_EQ(*normalize_source_entry("lib:suite//./k.cu"), "lib:suite/k.cu");
  EXPECT_EQ(*normalize_source_entry("a.cu"), "a.cu");
  EXPECT_EQ(source_bundle_path("lib:suite/k.cu"), "lib/suite/k.cu");
  EXPECT_EQ(source_bundle_path("suite/k.cu"), "suite/k.cu");
  for (const char* bad : {"lib:", "lib:/etc/passwd", "lib:../harness/src/x.cu",
                          "lib:suite/../../x.cu", "lib:a\\b.cu"}) {
    auto r = normalize_source_entry(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("lib:"), std::string::npos) << r.error().message;
  }
  EXPECT_NE(normalize_source_entry("lib:../x.cu").error().message.find("kernel library"),
            std::string::npos);
}

TEST(LibrarySources, PackedFromTheClonesKernelsFolderAndHashed) {
  Clone c;
  auto b = pack_job_bundle(c.job(), {"a.cu", "lib:suite/k.cu"});
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_EQ(b->files.size(), 2u);
  EXPECT_EQ(b->files[0].path, "a.cu");
  EXPECT_EQ(b->files[1].path, "lib/suite/k.cu");
  EXPECT_EQ(b->files[1].content, "library kernel");
  // The library file's content is part of the hash: editing it changes the bundle.
  const auto before = b->hash();
  c.root.write("kernels/suite/k.cu", "library kernel, edited");
  auto b2 = pack_job_bundle(c.job(), {"a.cu", "lib:suite/k.cu"});
  ASSERT_TRUE(b2.ok());
  EXPECT_NE(b2->hash(), before);
  // Unpacked, the file sits where the agent compiles it from.
  TempDir out;
  ASSERT_TRUE(unpack_bundle(*b2, out.path().string()).ok());
  EXPECT_EQ(read(out.path() / source_bundle_path("lib:suite/k.cu")), "library kernel, edited");
}

TEST(LibrarySources, LibraryFromFlagThenEnvThenClone) {
  Clone c;
  TempDir other;
  other.write("suite/k.cu", "other library");
  EXPECT_EQ(*find_kernel_library(c.job()), c.lib());
  auto flag = pack_job_bundle(c.job(), {"lib:suite/k.cu"}, other.path().string());
  ASSERT_TRUE(flag.ok()) << flag.error().message;
  EXPECT_EQ(flag->files[0].content, "other library");
  ::setenv("KFLEET_KERNEL_LIB", other.path().string().c_str(), 1);
  auto env = find_kernel_library(c.job());
  ::unsetenv("KFLEET_KERNEL_LIB");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(*env, fs::canonical(other.path()).string());
  // Outside any clone and with neither flag nor env: an error that says what to do.
  TempDir lone;
  lone.write("job.yaml", "name: x");
  auto none = pack_job_bundle(lone.path().string(), {"lib:suite/k.cu"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--kernel-lib"), std::string::npos) << none.error().message;
  // A job without lib: sources never needs a library.
  lone.write("a.cu", "x");
  EXPECT_TRUE(pack_job_bundle(lone.path().string(), {"a.cu"}).ok());
  // Only a folder named kernels/ that holds harness/ABI.md is a library: not another name with
  // harness/ABI.md, nor kernels/ without it.
  lone.write("mylib/harness/ABI.md", "abi");
  lone.write("mylib/jobs/x/job.yaml", "name: x");
  lone.write("kernels/jobs/x/job.yaml", "name: x");
  for (const char* job : {"mylib/jobs/x", "kernels/jobs/x"}) {
    auto r = find_kernel_library((lone.path() / job).string());
    EXPECT_FALSE(r.ok()) << job << " found " << (r.ok() ? *r : "");
  }
  lone.write("kernels/harness/ABI.md", "abi");
  auto inside = find_kernel_library((lone.path() / "kernels" / "jobs" / "x").string());
  ASSERT_TRUE(inside.ok()) << inside.error().message;
  EXPECT_EQ(*inside, fs::canonical(lone.path() / "kernels").string());
  auto bad_flag = find_kernel_library(c.job(), (lone.path() / "nope").string());
  ASSERT_FALSE(bad_flag.ok());
  EXPECT_NE(bad_flag.error().message.find("--kernel-lib"), std::string::npos);
}

TEST(LibrarySources, ConfinedToTheLibrary) {
  Clone c;
  TempDir outside;
  outside.write("secret.cu", "nope");
  fs::create_symlink(outside.path() / "secret.cu", c.root.path() / "kernels" / "suite" / "link.cu");
  auto link = pack_job_bundle(c.job(), {"lib:suite/link.cu"});
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.error().message.find("outside the kernel library"), std::string::npos)
      << link.error().message;
  auto up = pack_job_bundle(c.job(), {"lib:../jobs/x/a.cu"});
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.error().message.find("'..'"), std::string::npos) << up.error().message;
  auto missing = pack_job_bundle(c.job(), {"lib:suite/nope.cu"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("not found"), std::string::npos);
  // Plain entries are still confined to the job's folder.
  EXPECT_FALSE(pack_job_bundle(c.job(), {"../../kernels/suite/k.cu"}).ok());
}

TEST(Bundle, RefusesEscapesMissingAndFolders) {
  TempDir outside;
  outside.write("secret.txt", "nope");
  TempDir d;
  d.write("job/a.cu", "x");
  fs::create_symlink(outside.path() / "secret.txt", d.path() / "job" / "link.cu");
  fs::create_symlink(d.path() / "job" / "a.cu", d.path() / "job" / "inner.cu");
  const auto base = (d.path() / "job").string();

  auto link = pack_bundle(base, {"link.cu"});
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.error().message.find("outside"), std::string::npos) << link.error().message;
  EXPECT_FALSE(pack_bundle(base, {"../job/a.cu"}).ok());
  EXPECT_FALSE(pack_bundle(base, {(d.path() / "job" / "a.cu").string()}).ok());
  auto missing = pack_bundle(base, {"nope.cu"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("not found"), std::string::npos);
  d.write("job/sub/c.cu", "c");
  auto folder = pack_bundle(base, {"sub"});
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.error().message.find("folder"), std::string::npos);
  // A symlink that stays inside is fine and carries the target's bytes.
  auto inner = pack_bundle(base, {"inner.cu"});
  ASSERT_TRUE(inner.ok()) << inner.error().message;
  EXPECT_EQ(inner->files[0].content, "x");
  auto big = pack_bundle(base, {"a.cu"}, 0);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, Errc::too_large);
  EXPECT_NE(big.error().message.find("'a.cu' is 1 bytes; the limit is 0"), std::string::npos)
      << big.error().message;
  EXPECT_TRUE(pack_bundle(base, {"a.cu"}, 1).ok()) << "a file of exactly the limit";
  // The bundle's folder must be a folder.
  auto file_base = pack_bundle((d.path() / "job" / "a.cu").string(), {"a.cu"});
  ASSERT_FALSE(file_base.ok());
  EXPECT_NE(file_base.error().message.find("does not exist or is not a folder"), std::string::npos)
      << file_base.error().message;
}

TEST(Bundle, JsonRoundTripAndHashCheck) {
  Bundle b;
  b.files = {{"a.cu", std::string("bin\0ary\xff", 8)}, {"dir/b.h", "hello"}};
  const auto j = bundle_to_json(b);
  auto back = bundle_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->files.size(), 2u);
  EXPECT_EQ(back->files[0].content, b.files[0].content);
  EXPECT_EQ(back->hash(), b.hash());

  auto tampered = j;
  tampered["files"][1]["data_b64"] = base64_encode("hellp");
  auto bad = bundle_from_json(tampered);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("mismatch"), std::string::npos);

  auto escaping = j;
  escaping.erase("hash");
  escaping["files"][0]["path"] = "../../etc/cron.d/x";
  EXPECT_FALSE(bundle_from_json(escaping).ok());
  EXPECT_FALSE(bundle_from_json(nlohmann::json::array()).ok());
}

TEST(Bundle, UnpackWritesTreeAndRefusesEscape) {
  Bundle b;
  b.files = {{"a.cu", "A"}, {"x/y/z.h", "Z"}};
  TempDir d;
  ASSERT_TRUE(unpack_bundle(b, d.path().string()).ok());
  EXPECT_EQ(read(d.path() / "a.cu"), "A");
  EXPECT_EQ(read(d.path() / "x/y/z.h"), "Z");

  Bundle evil;
  evil.files = {{"../evil.txt", "E"}};
  EXPECT_FALSE(unpack_bundle(evil, d.path().string()).ok());
  EXPECT_FALSE(fs::exists(d.path().parent_path() / "evil.txt"));

  // A symlinked folder inside the target must not redirect writes outside it.
  TempDir outside;
  fs::create_symlink(outside.path(), d.path() / "out");
  Bundle via_link;
  via_link.files = {{"out/f.txt", "F"}};
  EXPECT_FALSE(unpack_bundle(via_link, d.path().string()).ok());
  EXPECT_FALSE(fs::exists(outside.path() / "f.txt"));

  // Into a file, or a folder that is not there: refused, nothing written.
  for (const fs::path& into : {d.path() / "a.cu", d.path() / "none"}) {
    auto r = unpack_bundle(b, into.string());
    ASSERT_FALSE(r.ok()) << into;
    EXPECT_NE(r.error().message.find("does not exist or is not a folder"), std::string::npos)
        << r.error().message;
  }
  EXPECT_EQ(read(d.path() / "a.cu"), "A");
  EXPECT_FALSE(fs::exists(d.path() / "none"));
}

TEST(Base64, RoundTripsAllLengthsAndRejectsJunk) {
  std::string s;
  for (int i = 0; i < 300; ++i) {
    auto enc = base64_encode(s);
    auto dec = base64_decode(enc);
    ASSERT_TRUE(dec.ok()) << i;
    EXPECT_EQ(*dec, s);
    s.push_back(char(i * 37));
  }
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_FALSE(base64_decode("Zm8").ok());
  EXPECT_FALSE(base64_decode("Zm*=").ok());
  EXPECT_FALSE(base64_decode("Z=8=").ok());
}

}  // namespace
}  // namespace kfleet
