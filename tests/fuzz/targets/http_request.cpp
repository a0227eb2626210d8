// Bytes on kfleetd's socket: a real kfleetd (Boost.Beast server, router, access checks, handlers,
// control plane, SQLite store in a temp folder) on loopback, and each input sent raw over a
// fresh connection. Whatever comes, the answer must be HTTP (or nothing, for a request that
// never completed), never a 500, and the server must stay up.
//
// Tokens: the admin and enrolment tokens are fixed (they are in the dictionary and the seeds);
// the agent's token is made at enrolment, so inputs name it as @AGENT_TOKEN@ and its id as
// @AGENT_ID@, and the target puts the real ones in before sending. Rate limits are off so that
// every input reaches the routes. An input that revokes a token or retires an agent changes
// what later inputs can reach, so the world is made anew after one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "fuzz_check.hpp"
#include "kfleet/common/log.hpp"
#include "kfleet/api/server.hpp"

namespace {

using namespace kfleet;
namespace fs = std::filesystem;

constexpr const char* kAdmin = "kft_fuzz-admin-0123456789abcdef0123456789";
constexpr const char* kEnrol = "enrol-fuzz-7c1e9b2a44d0";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// Sends `request`, half-closes, and reads the answer until the server closes or `deadline_ms`
// passes (an event stream or a long poll stays open; it is cut off then).
//
// Every blocking call retries on EINTR: libFuzzer's -timeout is a SIGALRM every timeout/2+1
// seconds, and a poll() it interrupted used to end the exchange early. An interrupted wait
// before the first byte read as "no answer", one mid-answer as a truncated answer; neither
// depended on the input, so the crashes they made in long fork-mode runs never reproduced.
std::string exchange(std::uint16_t port, const std::string& request, int deadline_ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  fuzz::check(fd >= 0, "socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    // An interrupted connect goes on in the background: wait for it and take its result.
    int err = errno;
    if (err == EINTR) {
      pollfd p{fd, POLLOUT, 0};
      while (::poll(&p, 1, 5000) < 0 && errno == EINTR) {
      }
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err != 0)
      fuzz::broken(std::string("kfleetd stopped accepting connections: ") + std::strerror(err));
  }
  std::size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the server answered early and closed (413, 400)
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  char buf[16384];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

class World {
 public:
  World() {
    std::string t = (fs::temp_directory_path() / "kfleet-fuzz-http-XXXXXX").string();
    if (!::mkdtemp(t.data())) fuzz::broken("mkdtemp failed");
    dir_ = t;
    auto st = store::open_sqlite_store({dir_ + "/kfleet.db", false});
    if (!st) fuzz::broken(st.error().message);
    store_ = std::move(*st);
    prov_ = provision::make_static_provisioner();
    core::Config cfg;
    cfg.admin_token = kAdmin;
    cfg.enrol_token = kEnrol;
    cp_ = std::make_unique<core::ControlPlane>(io_.get_executor(), *store_,
                                               std::make_shared<SystemClock>(), *prov_, cfg);
    api::ServerOptions so;
    so.max_lease_wait_ms = 50;
    so.submit_per_minute = 0;
    so.auth_failures_per_minute = 0;
    so.max_body_bytes = 1u << 20;
    server_ = std::make_unique<api::Server>(io_, *cp_, so);
    auto port = server_->listen();
    if (!port) fuzz::broken(port.error().message);
    port_ = *port;
    cp_->start();
    thread_ = std::thread([this] { io_.run(); });
    enrol();
  }
  ~World() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    cp_.reset();
    prov_.reset();
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::uint16_t port() const { return port_; }
  std::string fill(std::string in) const {
    in = replace_all(std::move(in), "@AGENT_TOKEN@", agent_token_);
    return replace_all(std::move(in), "@AGENT_ID@", agent_id_);
  }

 private:
  void enrol() {
    const std::string body =
        R"({"name":"fz1","region":"r1","backend":"simulated","gpus":[{"gpu_class":"L4","arch":"sm_89"}]})";
    const std::string req = "POST /api/v1/agents/enrol HTTP/1.1\r\nHost: k\r\nAuthorization: Bearer " +
                            std::string(kEnrol) + "\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    const std::string ans = exchange(port_, req, 5000);
    auto p = ans.find("\r\n\r\n");
    auto doc = nlohmann::json::parse(p == std::string::npos ? "" : ans.substr(p + 4), nullptr, false);
    if (doc.is_discarded() || !doc.contains("token"))
      fuzz::broken("the fuzz world could not enrol its agent: " + ans);
    agent_token_ = doc["token"].get<std::string>();
    agent_id_ = std::to_string(doc["agent_id"].get<std::int64_t>());
  }

  std::string dir_;
  boost::asio::io_context io_;
  store::StorePtr store_;
  provision::ProvisionerPtr prov_;
  std::unique_ptr<core::ControlPlane> cp_;
  std::unique_ptr<api::Server> server_;
  std::thread thread_;
  std::uint16_t port_ = 0;
  std::string agent_token_, agent_id_;
};

// A 500 status line: at the start of the answer, or of a later answer on the same connection.
// A body may quote the request ("the request body is not JSON: ... last read: '...HTTP/1.1
// 500...'"), but only escaped, never after a real line break, so that text is not a status.
bool has_500_status(const std::string& answer) {
  for (const std::string s : {"HTTP/1.1 500", "HTTP/1.0 500"})
    if (answer.rfind(s, 0) == 0 || answer.find("\n" + s) != std::string::npos) return true;
  return false;
}

// Never destroyed at exit: the server thread may still be answering when the process ends.
World* world = nullptr;

}  // namespace

// Warnings about each refused answer would cost more than the run itself; errors still print.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kfleet::log::set_level(kfleet::log::Level::error);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!world) world = new World();
  const std::string raw(reinterpret_cast<const char*>(data), size);
  const std::string answer = exchange(world->port(), world->fill(raw), 300);
  if (!answer.empty()) {
    fuzz::check(answer.rfind("HTTP/1.1 ", 0) == 0 || answer.rfind("HTTP/1.0 ", 0) == 0,
                "kfleetd answered with something not HTTP:\n" + answer.substr(0, 2000));
    fuzz::check(!has_500_status(answer),
                "kfleetd answered 500 to a request:\n" + answer.substr(0, 2000));
  }
  if (raw.find("revoke") != std::string::npos || raw.find("retire") != std::string::npos) {
    delete world;
    world = nullptr;
  }
  return 0;
}
