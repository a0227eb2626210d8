#include "common/torch_reference.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/harness_backend.hpp"
#include "kfleet/common/sha256.hpp"
#include "kfleet/common/stats.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;

namespace {

// Larger than any honest cache file (a few thousand samples): a bigger file is not read.
constexpr std::uintmax_t kMaxCacheFile = 4u << 20;

}  // namespace

std::string reference_problem(const KernelSpec& k) {
  if (!k.problem.empty()) return k.problem;
  if (k.family == "attention" || k.family == "scaled_mm") return k.family;
  return "";
}

Result<std::string> torch_reference_source(const std::string& library_dir, const KernelSpec& k) {
  const std::string problem = reference_problem(k);
  if (problem.empty()) return make_error(Errc::invalid_argument, "the job's kernel is not a problem's");
  const fs::path file = fs::path(library_dir) / problem / "reference_torch.py";
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(file, ec)))
    return make_error(Errc::not_found, "this agent's problem library has no PyTorch reference of " +
                                           problem + " (" + file.string() + ")");
  return file.string();
}

std::string torch_reference_entry(const KernelSpec& k) {
  // A job naming problem attention@2 or scaled_mm@4 is a family job (family is set from it).
  if (k.family == "attention") return "kfleet_attention_launch";
  if (k.family == "scaled_mm") return "kfleet_scaled_mm_launch";
  return "kfleet_problem_launch";
}

nlohmann::json torch_reference_key(const ReferenceKeyParts& p) {
  std::string args;
  for (std::size_t i = 0; i < p.args.size(); ++i) {
    std::string a = p.args[i];
    if (i > 0 && p.args[i - 1] == "--problem-spec") a = fs::path(a).filename().string();
    args += (args.empty() ? "" : " ") + a;
  }
  nlohmann::json key = {{"problem", p.problem},
                        {"version", p.version},
                        {"case", p.case_name},
                        {"gpu_class", p.gpu_class},
                        {"torch", p.torch},
                        {"driver", p.driver},
                        {"measurer", p.measurer.substr(0, 16)},
                        {"reference", p.reference.substr(0, 16)},
                        {"options", sha256_hex(args).substr(0, 16)}};
  if (!p.triton.empty()) key["triton"] = p.triton;
  return key;
}

std::string ReferenceCache::path_for(const nlohmann::json& key, const std::string& baseline) const {
  return (fs::path(dir_) / (sha256_hex(key.dump() + "\n" + baseline).substr(0, 32) + ".json")).string();
}

std::optional<ReferenceTiming> ReferenceCache::get(const nlohmann::json& key,
                                                   const std::string& baseline) const {
  const std::string path = path_for(key, baseline);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  const bool ours = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                    st.st_nlink == 1 && (st.st_mode & 0022) == 0 &&
                    static_cast<std::uintmax_t>(st.st_size) <= kMaxCacheFile;
  std::string text;
  if (ours) {
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (!ours) return std::nullopt;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("key", nlohmann::json()) != key ||
      j.value("baseline", nlohmann::json()) != baseline)
    return std::nullopt;
  ReferenceTiming t;
  t.baseline = baseline;
  t.key = key;
  if (j.contains("note") && j["note"].is_string()) t.note = j["note"].get<std::string>();
  if (j.contains("samples_us") && j["samples_us"].is_array())
    for (const auto& v : j["samples_us"])
      if (v.is_number()) t.samples_us.push_back(v.get<double>());
  if (t.samples_us.empty() && t.note.empty()) return std::nullopt;
  return t;
}

Result<void> ReferenceCache::put(const ReferenceTiming& t) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return make_error(Errc::unavailable, "cannot create " + dir_ + ": " + ec.message());
  const std::string path = path_for(t.key, t.baseline);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const nlohmann::json j = {{"key", t.key}, {"baseline", t.baseline}, {"samples_us", t.samples_us},
                            {"note", t.note}};
  if (auto w = write_new_file(tmp, j.dump() + "\n"); !w) return w.error();
  ::chmod(tmp.c_str(), 0644);
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return make_error(Errc::unavailable, "cannot write " + path + ": " + ec.message());
  }
  return {};
}

BaselineComparison compare_with_reference(const std::vector<double>& kernel_us,
                                          const ReferenceTiming& ref, const std::string& case_name,
                                          bool cached) {
  BaselineComparison c;
  c.baseline = ref.baseline;
  c.case_name = case_name;
  c.key = ref.key;
  c.cached = cached;
  c.note = ref.note;
  if (ref.samples_us.empty()) {
    if (c.note.empty()) c.note = "the reference was not timed";
    return c;
  }
  c.reference_us = stats::summarize(ref.samples_us).median;
  const stats::Speedup s = stats::speedup(kernel_us, ref.samples_us);
  if (!s.ok) {
    c.note = "no speedup: the kernel's or the reference's samples are not usable";
    return c;
  }
  c.speedup = s.point;
  c.ci_low = s.ci_low;
  c.ci_high = s.ci_high;
  return c;
}

}  // namespace kfleet::backends
