#include "support.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kfleet::e2e {

Proc Proc::spawn(const std::vector<std::string>& argv, const std::string& log_path,
                 const std::map<std::string, std::string>& env) {
  Proc p;
  p.log_ = log_path;
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  p.pid_ = pid;
  return p;
}

Proc::Proc(Proc&& o) noexcept : pid_(o.pid_), status_(o.status_), log_(std::move(o.log_)) {
  o.pid_ = -1;
}
Proc& Proc::operator=(Proc&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0) kill9();
    pid_ = o.pid_;
    status_ = o.status_;
    log_ = std::move(o.log_);
    o.pid_ = -1;
  }
  return *this;
}
Proc::~Proc() {
  if (pid_ > 0) kill9();
}

bool Proc::running() {
  if (pid_ <= 0) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = st;
    pid_ = -1;
    return false;
  }
  return r == 0;
}

void Proc::kill9() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int st = 0;
  waitpid(pid_, &st, 0);
  status_ = st;
  pid_ = -1;
}

int Proc::wait(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (pid_ > 0) {
    if (!running()) break;
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

int Proc::terminate(int timeout_ms) {
  if (pid_ <= 0) return wait(0);
  ::kill(pid_, SIGTERM);
  int rc = wait(timeout_ms);
  if (rc == -1) {
    kill9();
    return wait(0);
  }
  return rc;
}

std::string Proc::log() const { return read_file(log_); }

CmdResult run_cmd(const std::vector<std::string>& argv, int timeout_ms,
                  const std::map<std::string, std::string>& env) {
  std::string path = (std::filesystem::temp_directory_path() / "kfleet-cmd-XXXXXX").string();
  char* tmpl = path.data();
  int fd = mkstemp(tmpl);
  if (fd >= 0) close(fd);
  CmdResult out;
  {
    Proc p = Proc::spawn(argv, tmpl, env);
    out.exit_code = p.wait(timeout_ms);
    if (out.exit_code == -1) p.kill9();
  }
  out.output = read_file(tmpl);
  unlink(tmpl);
  return out;
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

std::string make_temp_dir(const std::string& prefix) {
  std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  return buf.data();
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string log_tails(const std::string& dir, const std::string& prefix, std::size_t keep) {
  std::string out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".log" || name.rfind(prefix, 0) != 0) continue;
    std::string t = read_file(e.path().string());
    if (t.size() > keep) t = "...\n" + t.substr(t.size() - keep);
    out += "----- " + name + "\n" + t + "\n";
  }
  return out;
}

}  // namespace kfleet::e2e
