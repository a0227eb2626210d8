// What the harness the agent builds is made of (kernels/harness, or share/kfleet/harness of an
// installed agent): its translation units, the text a job's define is looked for in, and the
// digest of everything that goes into the measuring process.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kfleet::backends {

// A file's bytes ("" when it cannot be read).
std::string read_whole_file(const std::filesystem::path& p);

// The harness's translation units: the units of kernels/harness/units (sources compiled
// together: their shared headers once, not once a source), then every source of src and cpu
// that no unit includes, on its own.
std::vector<std::string> harness_sources(const std::filesystem::path& hdir);

// A translation unit's text: a unit's is its members' (what a job's define applies to).
std::string harness_source_text(const std::filesystem::path& hdir, const std::string& src);

// Every harness file's name and text, and the problem library's references compiled into it,
// hashed: a change anywhere in them rebuilds the harness's objects.
std::string harness_digest(const std::filesystem::path& hdir);

}  // namespace kfleet::backends
