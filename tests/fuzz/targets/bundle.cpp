// A job's source bundle as kfleetd receives it (POST /api/v1/jobs "bundle") and as the agent
// unpacks it into its build folder: {"hash", "files": [{"path", "data_b64"}]} ->
// bundle_from_json -> unpack_bundle. Every accepted path must stay normalized, the wire form
// must round-trip, and unpacking must write only inside its folder and exactly the bytes sent.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz_check.hpp"
#include "kfleet/common/bundle.hpp"

namespace fs = std::filesystem;

namespace {

// One scratch folder per process; each input unpacks into <scratch>/u, which is removed after.
const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string t = (fs::temp_directory_path() / "kfleet-fuzz-bundle-XXXXXX").string();
    if (!::mkdtemp(t.data())) kfleet::fuzz::broken("mkdtemp failed");
    return fs::path(t);
  }();
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kfleet;
  const auto doc = fuzz::json_input(data, size);
  if (!doc) return 0;
  auto b = bundle_from_json(*doc);
  if (fuzz::refused(b, "a refused bundle must say why")) return 0;
  for (std::size_t i = 0; i < b->files.size(); ++i) {
    const auto& f = b->files[i];
    auto again = normalize_bundle_path(f.path);
    fuzz::check(again && *again == f.path, "an accepted bundle path is not normalized: " + f.path);
    fuzz::check(i == 0 || b->files[i - 1].path < f.path, "bundle files not sorted and unique");
    auto decoded = base64_decode(base64_encode(f.content));
    fuzz::check(decoded && *decoded == f.content, "base64 round trip changed a file");
  }
  auto back = bundle_from_json(bundle_to_json(*b));
  fuzz::check(back && back->hash() == b->hash(), "bundle wire form does not round-trip");

  const fs::path out = scratch() / "u";
  fs::create_directory(out);
  auto unpacked = unpack_bundle(*b, out.string());
  if (unpacked) {
    for (const auto& f : b->files)
      fuzz::check(slurp(out / f.path) == f.content, "unpacked file differs: " + f.path);
  }
  // Nothing may land beside the unpack folder.
  for (const auto& e : fs::directory_iterator(scratch()))
    fuzz::check(e.path() == out, "unpack wrote outside its folder: " + e.path().string());
  fs::remove_all(out);
  return 0;
}
