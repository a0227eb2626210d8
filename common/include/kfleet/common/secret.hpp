#pragma once
// Secrets (tokens) come from files or the environment, never from argv, where every local
// user could read them in `ps`.
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet {

// The first line of `path`, trimmed. An error names the file and what to fix; a file that
// group or others may read gets a warning on stderr (chmod 600).
Result<std::string> read_secret_file(const std::string& path, const std::string& what);

// `file` if set, else the environment variable `env`, else "". Errors come from the file.
Result<std::string> secret_from_file_or_env(const std::string& file, const char* env,
                                            const std::string& what);

// Names of environment variables that carry secrets and must not reach a process that runs
// someone else's code (builds, harness runs and custom steps run the job submitter's; a
// simulated-cloud agent needs none of kfleetd's): any name containing TOKEN, SECRET, PASSWORD
// or PASSWD (KFLEET_ENROL_TOKEN, KFLEET_ADMIN_TOKEN, PGPASSWORD, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, ...), and files or keys that lead to one (PGPASSFILE,
// GOOGLE_APPLICATION_CREDENTIALS, AWS_ACCESS_KEY_ID). Case-insensitive.
bool secret_variable(const std::string& name);

// This process's environment ("NAME=value") without the secret variables.
std::vector<std::string> environment_without_secrets();

}  // namespace kfleet
