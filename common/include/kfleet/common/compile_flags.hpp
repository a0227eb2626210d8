#pragma once
// kernel.flags is an allow-list, not a pass-through: a flag chooses how the job's sources are
// compiled (optimisation, defines, math modes, register limits), never which programs the
// compiler runs or which files it reads and writes. -ccbin, --compiler-bindir, -Xcompiler,
// -Xlinker, --run, -o, @file, -include, plugins and the like would let a job pick the host
// compiler or run its own files (`-ccbin ./evil.sh`); they are refused with a message that says
// what is allowed. kfleetd checks at submit and the agent again before it builds.
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet {

// Ok, or an error naming the first refused flag and what kfleet allows instead.
Result<void> check_compile_flags(const std::vector<std::string>& flags);

// The allowed forms, for messages and docs.
const std::string& allowed_compile_flags_text();

}  // namespace kfleet
