#pragma once
// Where kfleet's own files are on this host: found from the running program, never from a path
// of the machine that built it. An install is a prefix (/usr from the Debian packages, or any
// folder a package was unpacked into) holding
//   bin/                kfleet-agent, kfleetd, kfleet
//   lib/kfleet/         helper programs (kfleet-seccomp-exec)
//   share/kfleet/       data: kernels/harness, kernels/problems, dashboards
// A build tree has the same shape: the build writes <build>/share/kfleet, whose entries link to
// the sources and to the built dashboards, and puts the helpers beside the agent.
#include <filesystem>
#include <string>

namespace kfleet {

// The running program (/proc/self/exe); empty when it cannot be read.
std::filesystem::path self_executable();

// <prefix>/share/kfleet/<rel> for the nearest prefix at or above `exe`'s folder where that
// exists; empty when none has it.
std::filesystem::path installed_data(const std::string& rel,
                                     const std::filesystem::path& exe = self_executable());

// A helper program of kfleet's: beside `exe`, else <prefix>/lib/kfleet/<name> for the nearest
// prefix above `exe`'s folder that has it; empty when neither does.
std::filesystem::path installed_helper(const std::string& name,
                                       const std::filesystem::path& exe = self_executable());

// Where installed_data looks for `rel`, for messages: "share/kfleet/<rel> above <exe's folder>".
std::string installed_data_hint(const std::string& rel,
                                const std::filesystem::path& exe = self_executable());

}  // namespace kfleet
