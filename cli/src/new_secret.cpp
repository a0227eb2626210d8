#include "new_secret.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <ostream>

#include "json_fields.hpp"
#include "kfleet/cli/exit_code.hpp"

namespace kfleet::cli {

namespace {

bool write_0600(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

}  // namespace

int show_new_secret(Session& s, const nlohmann::json& reply, const nlohmann::json& t,
                    const std::string& what, const std::string& out_file, const std::string& revoke) {
  const std::string secret = str_field(t, "token");
  if (!out_file.empty()) {
    if (!write_0600(out_file, secret + "\n")) {
      s.io().err << "kfleet: cannot create " << out_file
                 << " (it must not exist yet); the token is lost, revoke it: " << revoke << " "
                 << t.value("id", 0) << "\n";
      return static_cast<int>(exit_usage);
    }
    s.io().out << what << ", written to " << out_file << "\n";
    return 0;
  }
  if (s.json()) {
    s.io().out << reply.dump(2) << "\n";
    return 0;
  }
  s.io().out << secret << "\n";
  s.io().err << what << ": shown once, kfleetd keeps only its hash\n";
  return 0;
}

}  // namespace kfleet::cli
