#pragma once
// The agent's side of the sandbox's syscall filter (seccomp_filter.hpp). run_subprocess makes a
// unix socket pair per sandboxed process and passes one end to kfleet-seccomp-exec, which sends
// back the filter's listener. The agent, root and outside the sandbox (where the job can
// neither kill nor trace it), then receives each call the filter denied, names it in the
// process's log, and answers EPERM. Nothing is ever let through from here: the filter's denials
// are final, this only says what they were. When the agent is gone the kernel answers ENOSYS.
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kfleet::backends {

class SeccompSupervisor {
 public:
  // `control`: the agent's end of the socket pair; owned from here on.
  explicit SeccompSupervisor(int control);
  ~SeccompSupervisor();
  SeccompSupervisor(const SeccompSupervisor&) = delete;
  SeccompSupervisor& operator=(const SeccompSupervisor&) = delete;

  // What to poll for POLLIN: the socket until the listener came, then the listener; -1 once
  // neither is left (the helper failed before sending it, or every filtered process is gone).
  int fd() const { return listener_ >= 0 ? listener_ : control_; }
  bool listening() const { return listener_ >= 0; }

  // Handles what poll reported on fd(): takes the listener, or answers one denied call with
  // EPERM. The first time a call is denied, `log` gets its line before the call returns, so
  // that it precedes what the process prints about it; repeats are counted for finish().
  void handle(short revents, const std::function<void(const std::string&)>& log);

  // Lines for the end of the process: how many more times the calls already named were
  // denied, and how many calls were not named at all.
  std::vector<std::string> finish();

  // The calls denied, described ("ptrace", "clone with CLONE_NEWUSER"), each once, in order.
  const std::vector<std::string>& denied() const { return order_; }

 private:
  void receive_listener();
  int control_ = -1, listener_ = -1;
  std::map<std::string, unsigned long> counts_;
  std::vector<std::string> order_;
  unsigned long unnamed_ = 0;
};

// "sandbox: denied ptrace (EPERM) in 'gdb': job processes may not trace or read other
// processes (docs/sandbox.md, "The syscall filter")"
std::string denial_line(const std::string& call, const std::string& why, const std::string& program);

}  // namespace kfleet::backends
