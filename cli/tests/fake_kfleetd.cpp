#include "fake_kfleetd.hpp"

#include <atomic>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <nlohmann/json.hpp>

#include "kfleet/testing/loopback.hpp"

namespace kfleet::cli::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct FakeKfleetd::Impl {
  Handler handler;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::thread thread;
  std::atomic<bool> stopping{false};
  mutable std::mutex mu;
  std::vector<RecordedRequest> seen;
  tcp::socket* current = nullptr;  // guarded by mu: shut down on stop to end a blocked read

  void serve(tcp::socket& sock) {
    beast::flat_buffer buf;
    while (!stopping) {
      http::request<http::string_body> req;
      beast::error_code ec;
      http::read(sock, buf, req, ec);
      if (ec) return;
      RecordedRequest r{std::string(req.method_string()), std::string(req.target()),
                        std::string(req[http::field::authorization]),
                        std::string(req[http::field::accept]),
                        std::string(req["Last-Event-ID"]), req.body()};
      {
        std::lock_guard lk(mu);
        seen.push_back(r);
      }
      CannedReply c = handler(r);
      http::response<http::string_body> res{static_cast<http::status>(c.status), req.version()};
      res.set(http::field::content_type, c.content_type);
      res.body() = c.body;
      // A stream ends by closing, as kfleetd's does when the job ends.
      const bool stream = c.content_type == "text/event-stream";
      res.keep_alive(!stream && req.keep_alive());
      res.prepare_payload();
      http::write(sock, res, ec);
      if (ec || !res.keep_alive()) {
        sock.shutdown(tcp::socket::shutdown_both, ec);
        return;
      }
    }
  }

  void run() {
    while (!stopping) {
      tcp::socket sock(ioc);
      beast::error_code ec;
      acceptor.accept(sock, ec);
      if (ec || stopping) return;
      {
        std::lock_guard lk(mu);
        current = &sock;
      }
      serve(sock);
      std::lock_guard lk(mu);
      current = nullptr;
    }
  }
};

FakeKfleetd::FakeKfleetd(Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  kfleet::testing::listen_on_loopback(impl_->acceptor);
  impl_->thread = std::thread([this] { impl_->run(); });
}

FakeKfleetd::~FakeKfleetd() {
  impl_->stopping = true;
  {
    std::lock_guard lk(impl_->mu);
    beast::error_code ec;
    if (impl_->current) impl_->current->shutdown(tcp::socket::shutdown_both, ec);
  }
  // Wake a blocked accept() with a connection of our own.
  beast::error_code ec;
  tcp::socket poke(impl_->ioc);
  poke.connect(impl_->acceptor.local_endpoint(), ec);
  impl_->thread.join();
}

std::string FakeKfleetd::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->acceptor.local_endpoint().port());
}

std::vector<RecordedRequest> FakeKfleetd::requests() const {
  std::lock_guard lk(impl_->mu);
  return impl_->seen;
}

std::string sse_body(const std::vector<std::string>& event_json, bool dropped) {
  std::string out = ": keep-alive\n\n";
  for (const auto& e : event_json) {
    auto j = nlohmann::json::parse(e);
    out += "id: " + std::to_string(j.value("id", 0)) + "\nevent: " + j.value("type", "") +
           "\ndata: " + j.dump() + "\n\n";
  }
  if (!dropped) out += "event: end\ndata: {}\n\n";
  return out;
}

}  // namespace kfleet::cli::testing
