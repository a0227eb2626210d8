#pragma once
// Secrets (tokens) come from files or the environment, never from argv, where every local
// user could read them in `ps`.
#include <string>

#include "kfleet/common/result.hpp"

namespace kfleet {

// The first line of `path`, trimmed. An error names the file and what to fix; a file that
// group or others may read gets a warning on stderr (chmod 600).
Result<std::string> read_secret_file(const std::string& path, const std::string& what);

// `file` if set, else the environment variable `env`, else "". Errors come from the file.
Result<std::string> secret_from_file_or_env(const std::string& file, const char* env,
                                            const std::string& what);

}  // namespace kfleet
