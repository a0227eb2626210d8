#pragma once
// kernel.flags is an allow-list, not a pass-through: a flag chooses how the job's sources are
// compiled (optimisation, defines, math modes, register limits), never which programs the
// compiler runs or which files it reads and writes. -ccbin, --compiler-bindir, -Xcompiler,
// -Xlinker, --run, -o, @file, -include, plugins and the like would let a job pick the host
// compiler or run its own files (`-ccbin ./evil.sh`); they are refused with a message that says
// what is allowed. kfleetd checks at submit and the agent again before it builds.
//
// And nothing a job writes into the compiler's command line carries shell syntax. nvcc runs its
// build steps through a shell and writes a -D value into them between double quotes, where
// `$(...)`, backticks and `\` still work: `defines: {X: "$(touch /tmp/x)"}` runs a command in the
// compile step. So a flag, a define's name and value, and the kernel's entry (which becomes
// -DKFLEET_ATTENTION_ENTRY=<entry>) hold only characters that need no quoting in a POSIX shell,
// inside double quotes or not; define names and the entry are C identifiers. kfleetd and the CLI
// check at submit (the job parser), the agent again before it builds.
//
// This is defence in depth, not the defence. The measuring process is built from kfleet's own
// sources alone (kernels/harness: of the job it takes only the entry's name, and the device code
// it loads at run time), and every compile step runs in the job's sandbox, where the job's own
// host code runs anyway: a command smuggled into a compile step would run in that sandbox too.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kfleet/common/jobspec.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet {

// Ok, or an error naming the first refused flag (kernel.flags[i]) and what kfleet allows instead.
Result<void> check_compile_flags(const std::vector<std::string>& flags);

// The first refused flag of `flags`: its index, and why (without the field).
struct FlagProblem {
  std::size_t index = 0;
  std::string message;
};
std::optional<FlagProblem> compile_flags_problem(const std::vector<std::string>& flags);

// Why a define's name, a define's value or the kernel's entry is refused (the value, the
// character, shown so that a terminal prints it as it is, and what is allowed), or nullopt.
// The message does not name the field: the caller does (kernel.defines.NAME, kernel.entry).
std::optional<std::string> define_name_problem(std::string_view name);
std::optional<std::string> define_value_problem(std::string_view value);
std::optional<std::string> entry_problem(std::string_view entry);

// Every compile input of a kernel at once, as the agent checks a job before it builds: the
// entry, each define's name and value, and the flags. Ok, or an error whose message starts
// with the field ("kernel.defines.TILE: ...", "kernel.flags[2]: ...").
Result<void> check_kernel_compile_inputs(const KernelSpec& k);

// `s` as one line a terminal shows as it is: printable ASCII kept, anything else as \xNN
// (\n, \t, \r for those), cut after `max` bytes with "...".
std::string shown_safely(std::string_view s, std::size_t max = 80);

// The allowed forms, for messages and docs.
const std::string& allowed_compile_flags_text();

}  // namespace kfleet
