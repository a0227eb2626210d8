#pragma once
// A job's source files travel as a content-addressed bundle. Paths are relative to the job
// YAML's folder and confined to it: no absolute paths, no "..", no symlinks that leave it.
// The hash covers the sorted (path, content) pairs, so the same content gives the same hash.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/result.hpp"

namespace kfleet {

struct BundleFile {
  std::string path;     // normalized, relative, forward slashes
  std::string content;  // raw bytes
};

struct Bundle {
  std::vector<BundleFile> files;  // sorted by path, unique
  std::string hash() const;       // "sha256:<hex>"
  std::uint64_t total_bytes() const;
};

// Checks one relative path from a job file: returns it normalized or an error saying why not.
Result<std::string> normalize_bundle_path(const std::string& rel);

// Reads the files named (relative to base_dir) into a bundle. Refuses paths that escape
// base_dir, including through symlinks, and files over max_file_bytes.
Result<Bundle> pack_bundle(const std::string& base_dir, const std::vector<std::string>& rel_paths,
                           std::uint64_t max_file_bytes = 16u << 20);

// Wire form: {"hash": "...", "files": [{"path": "...", "data_b64": "..."}]}. Decoding checks
// every path again and, when the JSON carries a hash, that it matches the content.
nlohmann::json bundle_to_json(const Bundle& b);
Result<Bundle> bundle_from_json(const nlohmann::json& j);

// Kernel library sources. A kernel.sources entry "lib:REL" names REL inside the kernel library
// (the repo's kernels/ folder), so a job can use a suite kernel without a copy beside its YAML.
// It is read from the library, confined to it exactly as plain entries are confined to the job's
// folder, content-hashed with the rest, and travels in the bundle (and lands in the agent's
// build folder) as "lib/REL".
inline constexpr const char* kLibrarySourcePrefix = "lib:";
bool is_library_source(const std::string& entry);

// Checks one kernel.sources entry: returns it normalized (a "lib:" prefix kept) or an error that
// says what to fix.
Result<std::string> normalize_source_entry(const std::string& entry);

// The path a (normalized) kernel.sources entry has inside the bundle: "lib/REL" for "lib:REL",
// the entry itself otherwise.
std::string source_bundle_path(const std::string& entry);

// The kernel library to resolve "lib:" entries against: `explicit_dir` when given (the CLI's
// --kernel-lib), else $KFLEET_KERNEL_LIB, else the nearest folder named kernels/ that holds
// harness/ABI.md at or above `job_dir` (the clone the job file lives in).
Result<std::string> find_kernel_library(const std::string& job_dir,
                                        const std::string& explicit_dir = "");

// Packs a job's kernel.sources: plain entries from job_dir, "lib:" entries from the kernel
// library (looked up with find_kernel_library only when an entry needs it).
Result<Bundle> pack_job_bundle(const std::string& job_dir, const std::vector<std::string>& entries,
                               const std::string& library_dir = "",
                               std::uint64_t max_file_bytes = 16u << 20);

// Writes the bundle under dir (which must exist), refusing any path that escapes it.
Result<void> unpack_bundle(const Bundle& b, const std::string& dir);

std::string base64_encode(const std::string& bytes);
Result<std::string> base64_decode(const std::string& text);

}  // namespace kfleet
