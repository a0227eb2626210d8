// Content-addressed source bundles: a job's files, confined to the job YAML's folder.
#include "kfleet/common/bundle.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
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
                     "' uses '..'; sources must stay inside the job's folder (copy the file in)");
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

Result<Bundle> pack_bundle(const std::string& base_dir, const std::vector<std::string>& rel_paths,
                           std::uint64_t max_file_bytes) {
  std::error_code ec;
  const fs::path base = fs::canonical(base_dir, ec);
  if (ec || !fs::is_directory(base)) {
    return invalid("bundle folder '" + base_dir + "' does not exist or is not a folder");
  }
  Bundle b;
  for (const auto& raw : rel_paths) {
    auto rel = normalize_bundle_path(raw);
    if (!rel) return rel.error();
    const fs::path full = base / *rel;
    if (!fs::exists(fs::symlink_status(full, ec))) {
      return invalid("source '" + *rel + "' not found in '" + base.string() + "'");
    }
    const fs::path real = fs::canonical(full, ec);
    if (ec) {
      return invalid("source '" + *rel + "' cannot be resolved (dangling symlink?): " +
                     ec.message());
    }
    if (!is_within(base, real)) {
      return invalid("source '" + *rel + "' resolves to '" + real.string() +
                     "', outside the job's folder; copy the file in instead of linking it");
    }
    if (fs::is_directory(real)) {
      return invalid("source '" + *rel + "' is a folder; list the files in it one by one");
    }
    if (!fs::is_regular_file(real)) return invalid("source '" + *rel + "' is not a regular file");
    const auto size = fs::file_size(real, ec);
    if (ec) return invalid("source '" + *rel + "' cannot be read: " + ec.message());
    if (size > max_file_bytes) {
      return make_error(Errc::too_large, "source '" + *rel + "' is " + std::to_string(size) +
                                             " bytes; the limit is " +
                                             std::to_string(max_file_bytes));
    }
    std::ifstream in(real, std::ios::binary);
    if (!in) return invalid("source '" + *rel + "' cannot be opened for reading");
    std::ostringstream content;
    content << in.rdbuf();
    b.files.push_back(BundleFile{*rel, content.str()});
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
