#pragma once
// A broken invariant is a crash: libFuzzer keeps the input and the run fails, exactly as for a
// sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kfleet::fuzz {

// "ERROR:" in the line: libFuzzer's fork mode keeps only a worker's lines that hold it, so the
// long run's log names the broken invariant too.
[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "ERROR: fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

inline void check(bool ok, const std::string& what) {
  if (!ok) broken(what);
}

// The input as a JSON document; nothing when it is not one (then there is nothing to check).
inline std::optional<nlohmann::json> json_input(const std::uint8_t* data, std::size_t size) {
  auto doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

// Whether a parser refused its input (a Result without a value); a refusal must say why.
template <class R>
bool refused(const R& r, const std::string& what) {
  if (r) return false;
  check(!r.error().message.empty(), what);
  return true;
}

}  // namespace kfleet::fuzz
