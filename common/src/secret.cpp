#include "kfleet/common/secret.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace kfleet {

Result<std::string> read_secret_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return make_error(Errc::invalid_argument, "cannot read the " + what + " file " + path +
                                                  ": no such file (or no permission)");
  if (!S_ISREG(st.st_mode))
    return make_error(Errc::invalid_argument, "the " + what + " file " + path + " is not a file");
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    std::cerr << "warning: the " << what << " file " << path
              << " is readable by other users; chmod 600 it\n";
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line))
    return make_error(Errc::invalid_argument, "the " + what + " file " + path + " is empty");
  auto b = line.find_first_not_of(" \t\r\n");
  auto e = line.find_last_not_of(" \t\r\n");
  if (b == std::string::npos)
    return make_error(Errc::invalid_argument, "the " + what + " file " + path + " is empty");
  return line.substr(b, e - b + 1);
}

Result<std::string> secret_from_file_or_env(const std::string& file, const char* env,
                                            const std::string& what) {
  if (!file.empty()) return read_secret_file(file, what);
  const char* v = env ? std::getenv(env) : nullptr;
  return std::string(v ? v : "");
}

}  // namespace kfleet

extern "C" char** environ;

namespace kfleet {

bool secret_variable(const std::string& name) {
  std::string n = name;
  for (auto& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"TOKEN", "SECRET", "PASSWORD", "PASSWD"})
    if (n.find(word) != std::string::npos) return true;
  return n == "PGPASSFILE" || n == "GOOGLE_APPLICATION_CREDENTIALS" || n == "AWS_ACCESS_KEY_ID";
}

std::vector<std::string> environment_without_secrets() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos || secret_variable(kv.substr(0, eq))) continue;
    out.push_back(kv);
  }
  return out;
}

}  // namespace kfleet
