#pragma once
// Process and waiting helpers for end-to-end tests: spawn real binaries with their output in
// a log file, kill them (-9 too), and wait for a condition with a deadline (never a sleep).
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kfleet::e2e {

class Proc {
 public:
  Proc() = default;
  // Starts argv[0] with argv in its own process group; stdout+stderr go to log_path.
  static Proc spawn(const std::vector<std::string>& argv, const std::string& log_path,
                    const std::map<std::string, std::string>& env = {});
  Proc(Proc&& o) noexcept;
  Proc& operator=(Proc&& o) noexcept;
  Proc(const Proc&) = delete;
  ~Proc();  // SIGKILLs a process still running: tests never leak children

  pid_t pid() const { return pid_; }
  bool running();
  void kill9();                 // SIGKILL the whole process group, reap it
  int terminate(int timeout_ms = 5000);  // SIGTERM, then SIGKILL; returns the exit status
  int wait(int timeout_ms);     // -1 on timeout
  const std::string& log_path() const { return log_; }
  std::string log() const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::string log_;
};

struct CmdResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs a command to completion (with a timeout) and captures its output.
CmdResult run_cmd(const std::vector<std::string>& argv, int timeout_ms = 120000,
                  const std::map<std::string, std::string>& env = {});

// Polls pred every few ms until it holds or the deadline passes; returns whether it held.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll = std::chrono::milliseconds(20));

std::string make_temp_dir(const std::string& prefix);
void write_file(const std::string& path, const std::string& content);
std::string read_file(const std::string& path);
// The .log files in dir whose names start with `prefix`, each as its last `keep` bytes: for a
// failed check's message.
std::string log_tails(const std::string& dir, const std::string& prefix = "", std::size_t keep = 6000);

}  // namespace kfleet::e2e
