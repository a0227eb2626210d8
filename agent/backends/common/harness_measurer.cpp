// The measuring process of replay mode (kernels/harness/ABI.md, "Recorded replay"), and what a
// job's build leaves behind.
//
// kfleet-measure is kfleet's own program. The agent builds it itself, outside every job's
// sandbox, from the harness's sources alone and with kfleet's flags alone, once per backend,
// compiler, arch and harness digest, into <build cache>/measure/<key>/, a folder only the agent
// can write. No part of it depends on a job: no flag, define, file or environment variable of
// a job, and no file a job's process wrote. Its objects are also the harness objects the job's
// recorder is linked with (where no entry rename applies), so nothing is compiled twice.
//
// Every file a job's build leaves is the job's data: the agent takes the build folder over once
// the job's last process has ended (links and special files removed, owned by the agent again)
// and the measuring process reads only the job's device code out of its objects.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/harness_backend.hpp"
#include "common/harness_sources.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/common/sha256.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;

namespace {

constexpr const char* kMeasureBinary = "kfleet-measure";
constexpr const char* kMeasureDigestFile = "kfleet-measure.sha256";

// Why `p` may not be part of the measuring process: a link, someone else's, or writable by
// anyone but the agent. "" when it is the agent's alone.
std::string not_the_agents(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return p.string() + ": " + std::strerror(errno);
  if (S_ISLNK(st.st_mode)) return p.string() + " is a symbolic link";
  if (st.st_uid != ::geteuid())
    return p.string() + " is owned by uid " + std::to_string(st.st_uid) + ", not the agent's";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return p.string() + " is writable by others";
  return "";
}

std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    if (line.find("error") != std::string::npos) return line;
  return tail_lines(log, 1);
}

// The agent's own compiler run on kfleet's sources: its environment without its secrets, and
// without the variables through which the toolchain would take extra flags from outside.
SubprocessSpec agent_compile(std::vector<std::string> argv) {
  SubprocessSpec sp;
  sp.trust = ProcessTrust::agent_tool;
  sp.argv = std::move(argv);
  sp.timeout_s = 900;
  sp.env = {{"NVCC_PREPEND_FLAGS", ""}, {"NVCC_APPEND_FLAGS", ""}, {"CPATH", ""},
            {"CPLUS_INCLUDE_PATH", ""}, {"C_INCLUDE_PATH", ""}, {"LIBRARY_PATH", ""},
            {"HIPCC_COMPILE_FLAGS_APPEND", ""}, {"HIPCC_LINK_FLAGS_APPEND", ""}};
  return sp;
}

}  // namespace

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) h.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  return h.hex_digest();
}

std::string take_job_files(const std::string& dir) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  std::vector<std::string> removed;
  std::error_code ec;
  // The folder itself first: a job's process could have put a link where it was (to a host
  // folder the agent would then walk and chmod as root). Such a folder is not walked at all.
  {
    struct stat top {};
    if (::lstat(dir.c_str(), &top) != 0) return ".";
    if (!S_ISDIR(top.st_mode)) {
      ::unlink(dir.c_str());
      return ".";
    }
  }
  std::vector<fs::path> paths;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    paths.push_back(it->path());
  }
  if (ec) return "cannot list " + dir + ": " + ec.message();
  // Decided for every path before anything is removed: a file with two names in the folder is
  // as suspect as one with a name outside it (removing one name would make the other look
  // single).
  std::vector<std::pair<fs::path, bool>> decided;
  for (const auto& p : paths) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;
    decided.emplace_back(p, S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_nlink == 1));
  }
  for (const auto& [p, keep] : decided) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;  // under a folder removed above
    if (!keep) {
      std::error_code rm;
      fs::remove_all(p, rm);
      removed.push_back(fs::path(p).lexically_relative(dir).string());
      continue;
    }
    if (::lchown(p.c_str(), uid, gid) != 0) {  // not made the agent's: not kept either
      std::error_code rm;
      fs::remove_all(p, rm);
      removed.push_back(fs::path(p).lexically_relative(dir).string());
      continue;
    }
    ::chmod(p.c_str(), S_ISDIR(st.st_mode) ? 0755 : (st.st_mode & 0111 ? 0755 : 0644));
  }
  if (::lchown(dir.c_str(), uid, gid) != 0)
    return "cannot take " + dir + " over from the job: " + std::strerror(errno);
  std::string said;
  for (const auto& r : removed) said += (said.empty() ? "" : ", ") + r;
  return said;
}

Result<void> write_new_file(const std::string& path, const std::string& text) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return make_error(Errc::unavailable, "cannot replace " + path + ": " + std::strerror(errno));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(Errc::unavailable, "cannot create " + path + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return make_error(Errc::unavailable, "cannot write " + path + ": " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return {};
}

std::vector<std::string> job_device_code(const std::string& binary) {
  std::vector<std::string> objects;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(binary).parent_path(), ec)) {
    if (e.path().extension() == ".o" && e.is_regular_file(ec) && !e.is_symlink(ec))
      objects.push_back(e.path().string());
  }
  std::sort(objects.begin(), objects.end());
  return objects;
}

Result<std::optional<MeasuringProcess>> HarnessBackend::measuring_process(
    const Compiler& cc, const std::string& cache_dir, const std::string& digest,
    const std::vector<std::string>& sources) {
  std::lock_guard<std::mutex> lock(measurer_mu_);
  const fs::path hdir = cfg_.harness_dir;
  // kfleet's flags: the harness's include folder, nothing else (the backend adds its own
  // optimisation and arch flags in harness_compile_argv and link_argv).
  const std::vector<std::string> flags = {"-I" + (hdir / "include").string()};
  std::string key_text = std::string("kfleet-measure 1\n") + name() + "\n" + cc.path + "\n" +
                         cc.version + "\n" + cfg_.arch + "\n" + digest + "\n";
  for (const auto& s : sources) key_text += fs::path(s).filename().string() + "\n";
  const std::string key = sha256_hex(key_text);
  if (auto it = measurers_.find(key); it != measurers_.end()) {
    MeasuringProcess found = it->second;
    found.built = false;
    found.seconds = 0;
    return std::optional<MeasuringProcess>(found);
  }

  const auto t0 = std::chrono::steady_clock::now();
  const fs::path root = fs::path(cache_dir) / "measure";
  const fs::path dir = root / key.substr(0, 32);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return make_error(Errc::unavailable, "cannot create " + root.string() + ": " + ec.message());
  ::chmod(root.c_str(), 0755);
  if (auto why = not_the_agents(root); !why.empty())
    return make_error(Errc::unavailable, "the measuring process's folder is not the agent's alone: " + why);

  MeasuringProcess m;
  m.dir = dir.string();
  m.binary = (dir / kMeasureBinary).string();
  for (const auto& s : sources) m.objects.push_back((dir / (fs::path(s).filename().string() + ".o")).string());

  // One built earlier (by this agent, or another sharing the cache) is used only when every
  // part of it is the agent's alone and the binary is the one its digest file names.
  auto adopt = [&]() -> std::string {
    if (auto why = not_the_agents(dir); !why.empty()) return why;
    for (const auto& p : m.objects)
      if (auto why = not_the_agents(p); !why.empty()) return why;
    if (auto why = not_the_agents(m.binary); !why.empty()) return why;
    const fs::path digest_file = dir / kMeasureDigestFile;
    if (auto why = not_the_agents(digest_file); !why.empty()) return why;
    std::string want = read_whole_file(digest_file);
    while (!want.empty() && (want.back() == '\n' || want.back() == ' ')) want.pop_back();
    m.sha256 = file_sha256(m.binary);
    if (m.sha256.empty() || m.sha256 != want)
      return m.binary + " does not match its digest (" + want + " recorded, " + m.sha256 + " now)";
    return "";
  };

  if (fs::exists(fs::symlink_status(dir, ec))) {
    if (const std::string why = adopt(); why.empty()) {
      m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      measurers_[key] = m;
      return std::optional<MeasuringProcess>(m);
    } else {
      log::warn(name(), "the measuring process in ", dir.string(), " is not used and is built again: ", why);
      fs::remove_all(dir, ec);
    }
  }

  // Built in a staging folder only the agent can enter, then renamed into place whole.
  const fs::path staging = root / (".build-" + key.substr(0, 16) + "-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())));
  fs::remove_all(staging, ec);
  if (::mkdir(staging.c_str(), 0700) != 0)
    return make_error(Errc::unavailable, "cannot create " + staging.string() + ": " + std::strerror(errno));
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      if (!p.empty()) fs::remove_all(p, e);
    }
  } cleanup{staging};

  std::vector<std::vector<std::string>> compiles;
  std::vector<std::string> staged;
  for (const auto& src : sources) {
    const std::string obj = (staging / (fs::path(src).filename().string() + ".o")).string();
    auto argv = harness_compile_argv(cc, cfg_.arch, flags, src, obj);
    if (!argv) return std::optional<MeasuringProcess>();  // no runnable harness on this host
    compiles.push_back(*argv);
    staged.push_back(obj);
  }
  std::atomic<std::size_t> next{0};
  std::mutex err_mu;
  std::string failure;
  auto worker = [&] {
    for (std::size_t i; (i = next++) < compiles.size();) {
      auto res = run_subprocess(agent_compile(compiles[i]));
      std::string why;
      if (!res.ok()) why = res.error().message;
      else if (!res->ok())
        why = fs::path(sources[i]).filename().string() + ": " + res->describe() + ": " +
              first_error_line(res->err + res->out);
      if (!why.empty()) {
        std::lock_guard<std::mutex> l(err_mu);
        if (failure.empty()) failure = why;
      }
    }
  };
  const std::size_t n = std::min<std::size_t>(compiles.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t i = 0; i < n; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (!failure.empty()) return make_error(Errc::internal, "building the measuring process: " + failure);

  auto link = run_subprocess(agent_compile(link_argv(cc, cfg_.arch, {}, staged, (staging / kMeasureBinary).string())));
  if (!link.ok()) return link.error();
  if (!link->ok())
    return make_error(Errc::internal, "linking the measuring process: " + link->describe() + ": " +
                                          first_error_line(link->err + link->out));
  for (const auto& o : staged) ::chmod(o.c_str(), 0444);
  ::chmod((staging / kMeasureBinary).c_str(), 0555);
  m.sha256 = file_sha256((staging / kMeasureBinary).string());
  if (auto w = write_new_file((staging / kMeasureDigestFile).string(), m.sha256 + "\n"); !w) return w.error();
  ::chmod((staging / kMeasureDigestFile).c_str(), 0444);
  ::chmod(staging.c_str(), 0755);
  if (::rename(staging.c_str(), dir.c_str()) != 0) {
    // Another agent sharing the cache finished the same build first: use its copy, if it holds.
    if (const std::string why = adopt(); !why.empty())
      return make_error(Errc::unavailable, "the measuring process in " + dir.string() + ": " + why);
  } else {
    cleanup.p.clear();
  }
  m.built = true;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  measurers_[key] = m;
  return std::optional<MeasuringProcess>(m);
}

Result<void> HarnessBackend::check_measurer(const MeasuringProcess& m) const {
  if (auto why = not_the_agents(m.binary); !why.empty())
    return make_error(Errc::unavailable, "the measuring process is not the agent's alone: " + why);
  const std::string now = file_sha256(m.binary);
  if (now != m.sha256)
    return make_error(Errc::unavailable, "the measuring process " + m.binary + " changed since it was built (sha256 " +
                                             m.sha256 + ", now " + (now.empty() ? "unreadable" : now) +
                                             "): nothing is measured with it; restart the agent to build it again");
  return {};
}

}  // namespace kfleet::backends
