#pragma once
// The job spec's vocabulary in one place: the keys allowed at each object level and the enum
// values. The parser checks against these and a test checks docs/job-schema.json against them,
// so the editor schema cannot drift from what the parser accepts.
#include <string>
#include <string_view>
#include <vector>

namespace kfleet::spec {

struct KeyTable {
  std::string level;              // "" (top), "kernel", "gates.correctness.cases[]", ...
  std::vector<std::string> keys;  // in documentation order
};

// Every object level of a job spec; levels that hold free-form maps (params, dtype, shape,
// defines, slower_pct) are not listed because their keys are the user's.
const std::vector<KeyTable>& key_tables();
// The keys allowed at `level`; aborts on an unknown level (a programming error).
const std::vector<std::string>& keys_at(std::string_view level);

const std::vector<std::string>& families();        // attention | scaled_mm | custom
const std::vector<std::string>& languages();       // cuda | hip | triton | torch
const std::vector<std::string>& metrics();         // time | gflops | tflops | gbps
const std::vector<std::string>& profile_tools();   // ncu | rocprofv3
const std::vector<std::string>& profile_whens();   // always | rejected | never
const std::vector<std::string>& fail_stages();     // build | resources | ... (not "")

// The closest allowed word within a small edit distance, or "" when nothing is close.
std::string closest(std::string_view word, const std::vector<std::string>& allowed);
std::string join_words(const std::vector<std::string>& words);  // "a, b, c"

}  // namespace kfleet::spec
