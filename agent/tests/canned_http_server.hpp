#pragma once
// A small synchronous Boost.Beast server for client tests: binds 127.0.0.1:0, serves each
// connection on its own thread (keep-alive honoured), answers through a handler and records
// every request it saw. A reply can also be a fault: a connection reset (RST) or a stall that
// answers nothing until the client gives up.
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include "kfleet/testing/loopback.hpp"

namespace kfleet::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct SeenRequest {
  std::string method, target, body, authorization, last_event_id, content_type;
};

// What the handler answers: a normal response, or raw bytes written before closing (SSE).
struct CannedReply {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> raw_chunks;  // when non-empty: written as-is, then the socket closes
  bool reset = false;                   // no answer: the connection is reset (SO_LINGER 0)
  std::chrono::milliseconds stall{0};   // no answer for this long (or until the server stops),
                                        // then the connection closes
};

class CannedHttpServer {
 public:
  using Handler = std::function<CannedReply(const SeenRequest&)>;

  explicit CannedHttpServer(Handler h) : handler_(std::move(h)), acceptor_(ioc_) {
    kfleet::testing::listen_on_loopback(acceptor_);
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~CannedHttpServer() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    stall_cv_.notify_all();
    boost::system::error_code ec;
    {
      // close() does not wake a thread blocked in accept(); a connection does.
      tcp::socket waker(ioc_);
      waker.connect({asio::ip::make_address("127.0.0.1"), port_}, ec);
    }
    if (accept_thread_.joinable()) accept_thread_.join();
    acceptor_.close(ec);
    {
      // Wakes each connection's thread from its read through the descriptor alone: a socket
      // object is its thread's until that thread is joined (Asio's sockets are not safe to
      // close from another thread while one reads them; ThreadSanitizer saw that race here).
      std::lock_guard<std::mutex> l(mu_);
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : conn_threads_) t.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  std::vector<SeenRequest> requests() const {
    std::lock_guard<std::mutex> l(mu_);
    return seen_;
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      auto sock = std::make_shared<tcp::socket>(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(*sock, ec);
      if (ec || stopping_) return;
      connections_++;
      std::lock_guard<std::mutex> l(mu_);
      sockets_.push_back(sock);
      open_fds_.insert(sock->native_handle());
      conn_threads_.emplace_back([this, sock] { serve(*sock); });
    }
  }

  void serve(tcp::socket& sock) {
    beast::flat_buffer buf;
    while (!stopping_) {
      http::request<http::string_body> req;
      boost::system::error_code ec;
      http::read(sock, buf, req, ec);
      if (ec) return;
      SeenRequest seen{std::string(req.method_string()), std::string(req.target()), req.body(),
                       std::string(req[http::field::authorization]),
                       std::string(req["Last-Event-ID"]),
                       std::string(req[http::field::content_type])};
      {
        std::lock_guard<std::mutex> l(mu_);
        seen_.push_back(seen);
      }
      CannedReply r = handler_(seen);
      if (r.stall.count() > 0) {
        std::unique_lock<std::mutex> l(mu_);
        stall_cv_.wait_for(l, r.stall, [&] { return stopping_.load(); });
        close_locked(sock);
        return;
      }
      if (r.reset) {
        sock.set_option(asio::socket_base::linger(true, 0), ec);
        std::lock_guard<std::mutex> l(mu_);
        close_locked(sock);
        return;
      }
      if (!r.raw_chunks.empty()) {
        for (const auto& c : r.raw_chunks) {
          asio::write(sock, asio::buffer(c), ec);
          if (ec) return;
        }
        sock.shutdown(tcp::socket::shutdown_both, ec);
        return;
      }
      http::response<http::string_body> res{static_cast<http::status>(r.status), req.version()};
      res.set(http::field::content_type, r.content_type);
      for (const auto& [k, v] : r.headers) res.set(k, v);
      res.body() = r.body;
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::write(sock, res, ec);
      if (ec || !req.keep_alive()) return;
    }
  }

  // Closes a connection's socket on its own thread, under mu_: the destructor then no longer
  // shuts its descriptor down (the number may be reused by then).
  void close_locked(tcp::socket& sock) {
    boost::system::error_code ec;
    open_fds_.erase(sock.native_handle());
    sock.close(ec);
  }

  Handler handler_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::condition_variable stall_cv_;
  std::vector<SeenRequest> seen_;
  std::vector<std::shared_ptr<tcp::socket>> sockets_;  // closed when the server is gone
  std::set<int> open_fds_;                              // their descriptors not yet closed
  std::vector<std::thread> conn_threads_;
  std::thread accept_thread_;
};

}  // namespace kfleet::testing
