#include "common/seccomp_supervisor.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "common/seccomp_filter.hpp"

namespace kfleet::backends {
namespace {

// Calls named one by one in a process's log; past that they are only counted.
constexpr std::size_t kMaxNamed = 16;

// The program a denied call came from, as its /proc comm says (the job's own text: printable
// characters only).
std::string program_of(unsigned pid) {
  if (pid == 0) return "";
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  for (char& ch : comm)
    if (ch < 0x20 || ch > 0x7e || ch == '\'') ch = '?';
  return comm;
}

}  // namespace

std::string denial_line(const std::string& call, const std::string& why, const std::string& program) {
  std::string line = "sandbox: denied " + call + " (EPERM)";
  if (!program.empty()) line += " in '" + program + "'";
  if (!why.empty()) line += ": job processes may not " + why;
  return line + " (docs/sandbox.md, \"The syscall filter\")";
}

SeccompSupervisor::SeccompSupervisor(int control) : control_(control) {}

SeccompSupervisor::~SeccompSupervisor() {
  // Closing the listener answers any call still waiting with ENOSYS.
  if (listener_ >= 0) ::close(listener_);
  if (control_ >= 0) ::close(control_);
}

void SeccompSupervisor::receive_listener() {
  seccomp::ListenerMessage m;
  msghdr& msg = m.msg;
  const ssize_t n = ::recvmsg(control_, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n > 0) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
        continue;
      int fd;
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
      if (listener_ < 0) listener_ = fd;
      else ::close(fd);
    }
  }
  // One message is all the helper sends; EOF without it: it failed and said why on stderr.
  ::close(control_);
  control_ = -1;
}

void SeccompSupervisor::handle(short revents, const std::function<void(const std::string&)>& log) {
  if (listener_ < 0) {
    if (control_ >= 0 && (revents & (POLLIN | POLLHUP | POLLERR))) receive_listener();
    return;
  }
  if (!(revents & POLLIN)) {
    // Every process under the filter has ended (POLLHUP since Linux 5.8).
    if (revents & (POLLHUP | POLLERR | POLLNVAL)) {
      ::close(listener_);
      listener_ = -1;
    }
    return;
  }
  seccomp_notif req;
  std::memset(&req, 0, sizeof req);  // the kernel wants it zeroed
  if (::ioctl(listener_, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return;  // the caller died (ENOENT)
  std::string why;
  const std::string call = seccomp::describe_call(req.data, &why);
  if (counts_[call]++ == 0) {
    if (order_.size() < kMaxNamed) {
      order_.push_back(call);
      log(denial_line(call, why, program_of(req.pid)));
    } else {
      counts_.erase(call);
      ++unnamed_;
    }
  }
  seccomp_notif_resp resp;
  std::memset(&resp, 0, sizeof resp);
  resp.id = req.id;
  resp.error = -EPERM;
  (void)::ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, &resp);  // ENOENT: it died meanwhile
}

std::vector<std::string> SeccompSupervisor::finish() {
  std::vector<std::string> out;
  for (const auto& call : order_) {
    const unsigned long more = counts_[call] - 1;
    if (more) out.push_back("sandbox: denied " + call + " " + std::to_string(more) + " more time" + (more == 1 ? "" : "s"));
  }
  if (unnamed_)
    out.push_back("sandbox: denied " + std::to_string(unnamed_) + " more call" + (unnamed_ == 1 ? "" : "s") +
                  " of other kinds");
  return out;
}

}  // namespace kfleet::backends
