#include "loopback_http.hpp"

#include <sstream>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "kfleet/testing/loopback.hpp"

namespace kfleet::provision::testing {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

struct LoopbackHttpServer::Impl {
  Handler handler;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;

  asio::awaitable<void> serve(tcp::socket socket) {
    beast::flat_buffer buffer;
    try {
      for (;;) {
        Request req;
        co_await http::async_read(socket, buffer, req, asio::use_awaitable);
        Response res = handler(req);
        res.version(req.version());
        res.keep_alive(req.keep_alive());
        const bool cut = res.count(kCutHeader) > 0;
        res.erase(kCutHeader);
        res.prepare_payload();
        if (cut) {  // the status line and headers, then the connection closes without the body
          http::response_serializer<http::string_body> head{res};
          co_await http::async_write_header(socket, head, asio::use_awaitable);
          beast::error_code ignored;
          socket.shutdown(tcp::socket::shutdown_both, ignored);
          break;
        }
        co_await http::async_write(socket, res, asio::use_awaitable);
        if (!req.keep_alive()) break;
      }
    } catch (const std::exception&) {
      // The client closed the connection.
    }
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      asio::co_spawn(io, serve(std::move(socket)), asio::detached);
    }
  }
};

LoopbackHttpServer::LoopbackHttpServer(Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  kfleet::testing::listen_on_loopback(impl_->acceptor);
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  impl_->thread = std::thread([i = impl_.get()] { i->io.run(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
  impl_->io.stop();
  impl_->thread.join();
}

std::string LoopbackHttpServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->acceptor.local_endpoint().port());
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::multimap<std::string, std::string> parse_form(const std::string& body) {
  std::multimap<std::string, std::string> p;
  std::istringstream in(body);
  std::string pair;
  while (std::getline(in, pair, '&')) {
    auto eq = pair.find('=');
    if (eq != std::string::npos) p.emplace(url_decode(pair.substr(0, eq)), url_decode(pair.substr(eq + 1)));
  }
  return p;
}

}  // namespace kfleet::provision::testing
