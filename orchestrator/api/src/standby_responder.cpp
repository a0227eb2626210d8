#include "standby_responder.hpp"

#include <atomic>
#include <mutex>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace kfleet::api {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

struct StandbyResponder::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::string leader_url;
  std::int64_t epoch = 0;

  void serve_one(tcp::socket& s) {
    // A short receive timeout: a silent client never holds the standby up.
    struct timeval tv{2, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    boost::beast::flat_buffer buf;
    http::request<http::string_body> req;
    boost::system::error_code ec;
    http::read(s, buf, req, ec);
    if (ec) return;
    std::string url;
    std::int64_t ep = 0;
    {
      std::lock_guard<std::mutex> l(mu);
      url = leader_url;
      ep = epoch;
    }
    http::response<http::string_body> res{http::status::service_unavailable, req.version()};
    res.set("X-Kfleet-Role", "standby");
    res.set(http::field::content_type, "application/json");
    res.set(http::field::retry_after, "1");
    res.set(http::field::connection, "close");
    if (!url.empty()) res.set(http::field::location, url + std::string(req.target()));
    nlohmann::json body = {
        {"error",
         {{"code", "standby"},
          {"message", "this kfleetd is a standby; " +
                          (url.empty() ? std::string("the leader is starting")
                                       : "the leader is " + url) +
                          " (epoch " + std::to_string(ep) +
                          "); list every kfleetd URL, comma-separated, in --server / "
                          "KFLEET_SERVER to follow the leader"}}},
        {"role", "standby"},
        {"leader", url},
        {"epoch", ep}};
    res.body() = body.dump();
    res.prepare_payload();
    http::write(s, res, ec);
    s.shutdown(tcp::socket::shutdown_both, ec);
  }

  void run() {
    while (!stopping) {
      tcp::socket s(io);
      boost::system::error_code ec;
      acceptor.accept(s, ec);
      if (ec) {
        if (stopping) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      serve_one(s);
    }
  }
};

Result<std::unique_ptr<StandbyResponder>> StandbyResponder::start(const std::string& address,
                                                                  std::uint16_t port) {
  auto impl = std::make_shared<Impl>();
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(address, ec);
  if (ec) return make_error(Errc::invalid_argument, "bad listen address '" + address + "'");
  tcp::endpoint ep(addr, port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return make_error(Errc::unavailable, "cannot listen on " + address + ":" +
                                             std::to_string(port) + ": " + ec.message());
  impl->thread = std::thread([impl] { impl->run(); });
  return std::unique_ptr<StandbyResponder>(new StandbyResponder(impl));
}

StandbyResponder::~StandbyResponder() {
  impl_->stopping = true;
  boost::system::error_code ec;
  // Unblocks accept(): shutdown wakes the blocked call, close frees the port.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->acceptor.close(ec);
}

std::uint16_t StandbyResponder::port() const { return impl_->acceptor.local_endpoint().port(); }

void StandbyResponder::set_leader(const std::string& url, std::int64_t epoch) {
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->leader_url = url;
  impl_->epoch = epoch;
}

}  // namespace kfleet::api
