// Content-addressed source bundles: a job's files, confined to the job YAML's folder.
#include "kfleet/common/bundle.hpp"

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "kfleet/common/sha256.hpp"

namespace kfleet {
namespace fs = std::filesystem;

namespace {

Error invalid(std::string msg) { return make_error(Errc::invalid_argument, std::move(msg)); }

// True when `p` (canonical) is `root` (canonical) or lies below it.
bool is_within(const fs::path& root, const fs::path& p) {
  auto r = root.begin();
  auto q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

Result<void> sort_unique(std::vector<BundleFile>& files) {
  std::sort(files.begin(), files.end(),
            [](const BundleFile& a, const BundleFile& b) { return a.path < b.path; });
  std::vector<BundleFile> out;
  for (auto& f : files) {
    if (!out.empty() && out.back().path == f.path) {
      if (out.back().content != f.content) {
        return invalid("bundle names '" + f.path + "' twice with different content");
      }
      continue;
    }
    out.push_back(std::move(f));
  }
  files = std::move(out);
  return ok_result();
}

}  // namespace

std::string Bundle::hash() const {
  Sha256 h;
  for (const auto& f : files) {
    h.update(f.path);
    h.update(std::string_view("\0", 1));
    h.update(sha256_hex(f.content));
    h.update("\n");
  }
  return "sha256:" + h.hex_digest();
}

std::uint64_t Bundle::total_bytes() const {
  std::uint64_t n = 0;
  for (const auto& f : files) n += f.content.size();
  return n;
}

Result<std::string> normalize_bundle_path(const std::string& rel) {
  if (rel.empty()) return invalid("source path is empty; name a file relative to the job's folder");
  if (rel.find('\\') != std::string::npos) {
    return invalid("source path '" + rel + "' contains a backslash; use '/' as the separator");
  }
  if (rel.find('\0') != std::string::npos) return invalid("source path contains a NUL byte");
  if (rel.front() == '/') {
    return invalid("source path '" + rel +
                   "' is absolute; sources must be relative to the job's folder");
  }
  std::vector<std::string> parts;
  std::stringstream ss(rel);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      return invalid("source path '" + rel +
                     "' uses '..'; sources must stay inside the job's folder (copy the file in, or name a "
                   "kernel of the library as lib:PATH)");
    }
    parts.push_back(part);
  }
  if (parts.empty()) return invalid("source path '" + rel + "' names no file");
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += '/';
    out += p;
  }
  return out;
}

namespace {

// Reads `rel` (already normalized) under `base` (canonical), refusing anything that resolves
// outside it. `where` names the folder in messages ("the job's folder", "the kernel library").
Result<std::string> read_confined(const fs::path& base, const std::string& rel,
                                  const std::string& shown, const std::string& where,
                                  std::uint64_t max_file_bytes) {
  std::error_code ec;
  const fs::path full = base / rel;
  if (!fs::exists(fs::symlink_status(full, ec))) {
    return invalid("source '" + shown + "' not found in '" + base.string() + "'");
  }
  const fs::path real = fs::canonical(full, ec);
  if (ec) {
    return invalid("source '" + shown + "' cannot be resolved (dangling symlink?): " +
                   ec.message());
  }
  if (!is_within(base, real)) {
    return invalid("source '" + shown + "' resolves to '" + real.string() + "', outside " + where +
                   " ('" + base.string() + "'); sources must stay inside it");
  }
  if (fs::is_directory(real)) {
    return invalid("source '" + shown + "' is a folder; list the files in it one by one");
  }
  if (!fs::is_regular_file(real)) return invalid("source '" + shown + "' is not a regular file");
  const auto size = fs::file_size(real, ec);
  if (ec) return invalid("source '" + shown + "' cannot be read: " + ec.message());
  if (size > max_file_bytes) {
    return make_error(Errc::too_large, "source '" + shown + "' is " + std::to_string(size) +
                                           " bytes; the limit is " +
                                           std::to_string(max_file_bytes));
  }
  std::ifstream in(real, std::ios::binary);
  if (!in) return invalid("source '" + shown + "' cannot be opened for reading");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

Result<fs::path> canonical_folder(const std::string& dir, const std::string& what) {
  std::error_code ec;
  const fs::path base = fs::canonical(dir, ec);
  if (ec || !fs::is_directory(base)) {
    return invalid(what + " '" + dir + "' does not exist or is not a folder");
  }
  return base;
}

}  // namespace

Result<Bundle> pack_bundle(const std::string& base_dir, const std::vector<std::string>& rel_paths,
                           std::uint64_t max_file_bytes) {
  auto base = canonical_folder(base_dir, "bundle folder");
  if (!base) return base.error();
  Bundle b;
  for (const auto& raw : rel_paths) {
    auto rel = normalize_bundle_path(raw);
    if (!rel) return rel.error();
    auto content = read_confined(*base, *rel, *rel, "the job's folder", max_file_bytes);
    if (!content) return content.error();
    b.files.push_back(BundleFile{*rel, std::move(*content)});
  }
  if (auto r = sort_unique(b.files); !r) return r.error();
  return b;
}

bool is_library_source(const std::string& entry) {
  return entry.rfind(kLibrarySourcePrefix, 0) == 0;
}

Result<std::string> normalize_source_entry(const std::string& entry) {
  if (!is_library_source(entry)) return normalize_bundle_path(entry);
  const std::string rest = entry.substr(std::string(kLibrarySourcePrefix).size());
  if (rest.empty()) {
    return invalid("source '" + entry + "' names no file; write lib:PATH, PATH relative to the "
                                        "kernel library (kernels/), e.g. lib:suite/fa_s512.cu");
  }
  if (rest.front() == '/') {
    return invalid("source '" + entry +
                   "' is absolute; lib: paths are relative to the kernel library (kernels/)");
  }
  std::stringstream ss(rest);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part == "..") {
      return invalid("source '" + entry +
                     "' uses '..'; lib: sources must stay inside the kernel library (kernels/)");
    }
  }
  auto rel = normalize_bundle_path(rest);
  if (!rel) return invalid("source '" + entry + "': " + rel.error().message);
  return std::string(kLibrarySourcePrefix) + *rel;
}

std::string source_bundle_path(const std::string& entry) {
  if (!is_library_source(entry)) return entry;
  return "lib/" + entry.substr(std::string(kLibrarySourcePrefix).size());
}

Result<std::string> find_kernel_library(const std::string& job_dir,
                                        const std::string& explicit_dir) {
  if (!explicit_dir.empty()) {
    auto d = canonical_folder(explicit_dir, "kernel library (--kernel-lib)");
    if (!d) return d.error();
    return d->string();
  }
  if (const char* env = std::getenv("KFLEET_KERNEL_LIB"); env && *env) {
    auto d = canonical_folder(env, "kernel library ($KFLEET_KERNEL_LIB)");
    if (!d) return d.error();
    return d->string();
  }
  std::error_code ec;
  fs::path p = fs::canonical(job_dir.empty() ? "." : job_dir, ec);
  if (!ec) {
    for (;;) {
      if (fs::is_regular_file(p / "kernels" / "harness" / "ABI.md", ec))
        return (p / "kernels").string();
      if (p.filename() == "kernels" && fs::is_regular_file(p / "harness" / "ABI.md", ec))
        return p.string();
      if (!p.has_parent_path() || p.parent_path() == p) break;
      p = p.parent_path();
    }
  }
  return invalid("no kernel library found for lib: sources: no kernels/harness/ABI.md at or above '" +
                 job_dir + "'; pass --kernel-lib DIR or set KFLEET_KERNEL_LIB to the kfleet "
                           "clone's kernels/ folder");
}

Result<Bundle> pack_job_bundle(const std::string& job_dir, const std::vector<std::string>& entries,
                               const std::string& library_dir, std::uint64_t max_file_bytes) {
  auto base = canonical_folder(job_dir.empty() ? "." : job_dir, "job folder");
  if (!base) return base.error();
  std::optional<fs::path> lib;
  Bundle b;
  for (const auto& raw : entries) {
    auto entry = normalize_source_entry(raw);
    if (!entry) return entry.error();
    if (!is_library_source(*entry)) {
      auto content = read_confined(*base, *entry, *entry, "the job's folder", max_file_bytes);
      if (!content) return content.error();
      b.files.push_back(BundleFile{*entry, std::move(*content)});
      continue;
    }
    if (!lib) {
      auto found = find_kernel_library(base->string(), library_dir);
      if (!found) return found.error();
      lib = fs::path(*found);
    }
    const std::string rel = entry->substr(std::string(kLibrarySourcePrefix).size());
    auto content = read_confined(*lib, rel, *entry, "the kernel library", max_file_bytes);
    if (!content) return content.error();
    b.files.push_back(BundleFile{source_bundle_path(*entry), std::move(*content)});
  }
  if (auto r = sort_unique(b.files); !r) return r.error();
  return b;
}

nlohmann::json bundle_to_json(const Bundle& b) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : b.files) {
    files.push_back({{"path", f.path}, {"data_b64", base64_encode(f.content)}});
  }
  return {{"hash", b.hash()}, {"files", std::move(files)}};
}

Result<Bundle> bundle_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array()) {
    return invalid("bundle JSON must be an object with a 'files' array");
  }
  Bundle b;
  for (const auto& f : j["files"]) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() ||
        !f.contains("data_b64") || !f["data_b64"].is_string()) {
      return invalid("each bundle file must be {\"path\": string, \"data_b64\": string}");
    }
    auto rel = normalize_bundle_path(f["path"].get<std::string>());
    if (!rel) return rel.error();
    auto data = base64_decode(f["data_b64"].get<std::string>());
    if (!data) return make_error(Errc::invalid_argument, "bundle file '" + *rel + "': " +
                                                             data.error().message);
    b.files.push_back(BundleFile{*rel, std::move(*data)});
  }
  if (auto r = sort_unique(b.files); !r) return r.error();
  if (j.contains("hash")) {
    if (!j["hash"].is_string()) return invalid("bundle 'hash' must be a string");
    const auto want = j["hash"].get<std::string>();
    if (want != b.hash()) {
      return invalid("bundle hash mismatch: JSON says " + want + " but the content hashes to " +
                     b.hash() + " (corrupted or edited in transit)");
    }
  }
  return b;
}

Result<void> unpack_bundle(const Bundle& b, const std::string& dir) {
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  if (ec || !fs::is_directory(root)) {
    return invalid("unpack folder '" + dir + "' does not exist or is not a folder");
  }
  for (const auto& f : b.files) {
    auto rel = normalize_bundle_path(f.path);
    if (!rel) return rel.error();
    const fs::path target = root / *rel;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return invalid("cannot create folder for '" + *rel + "': " + ec.message());
    // A symlink already inside dir could redirect the write; check the resolved target.
    const fs::path real = fs::weakly_canonical(target, ec);
    if (ec || !is_within(root, real)) {
      return invalid("bundle file '" + *rel + "' would be written outside '" + root.string() +
                     "'");
    }
    std::ofstream out(real, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(Errc::internal, "cannot write '" + real.string() + "'");
    out.write(f.content.data(), static_cast<std::streamsize>(f.content.size()));
    if (!out) return make_error(Errc::internal, "short write to '" + real.string() + "'");
  }
  return ok_result();
}

std::string base64_encode(const std::string& bytes) {
  static const char* kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    std::uint32_t v = (std::uint8_t(bytes[i]) << 16) | (std::uint8_t(bytes[i + 1]) << 8) |
                      std::uint8_t(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    std::uint32_t v = std::uint8_t(bytes[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    std::uint32_t v = (std::uint8_t(bytes[i]) << 16) | (std::uint8_t(bytes[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

Result<std::string> base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return invalid("base64 length must be a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return invalid("base64 padding '=' may only end the text");
      v[k] = value(c);
      if (v[k] < 0) return invalid(std::string("base64 has an invalid character '") + c + "'");
    }
    const std::uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += char((n >> 16) & 0xff);
    if (pad < 2) out += char((n >> 8) & 0xff);
    if (pad < 1) out += char(n & 0xff);
  }
  return out;
}

}  // namespace kfleet
