// The listener and the per-connection session (state lives on the coroutine frame). Bodies
// over the limit get 413 before they are read; malformed requests get 400; a handler that
// throws gets 500 and the server keeps serving.
#include "kfleet/api/server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "http.hpp"
#include "kfleet/common/log.hpp"

namespace kfleet::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

boost::asio::awaitable<std::optional<Response>> lease(Ctx&, std::int64_t max_wait_ms);

struct Server::Impl {
  Impl(asio::io_context& io, core::ControlPlane& cp, ServerOptions o)
      : io(io), cp(cp), opts(std::move(o)), acceptor(io), routes(make_routes()) {
    for (auto& r : routes)
      if (!r.handler) {
        const std::int64_t max_wait = opts.max_lease_wait_ms;
        r.handler = [max_wait](Ctx& c) { return lease(c, max_wait); };
      }
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket sock = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        log::warn("api", "accept: ", ec.message());
        continue;
      }
      asio::co_spawn(acceptor.get_executor(), session(beast::tcp_stream(std::move(sock))),
                     asio::detached);
    }
  }

  asio::awaitable<std::optional<Response>> dispatch(const Request& req, beast::tcp_stream& stream) {
    std::string_view target = req.target();
    auto qpos = target.find('?');
    std::string_view path = target.substr(0, qpos);
    Ctx ctx{req, stream, cp, {}, {}, {}};
    if (qpos != std::string_view::npos) ctx.query = parse_query(target.substr(qpos + 1));
    if (auto it = req.find(http::field::authorization); it != req.end()) {
      std::string_view v = it->value();
      if (v.substr(0, 7) == "Bearer ") ctx.bearer = std::string(v.substr(7));
    }
    bool path_known = false;
    for (const auto& r : routes) {
      std::map<std::string, std::string> params;
      if (!match_path(r.pattern, path, params)) continue;
      path_known = true;
      if (r.method != req.method()) continue;
      ctx.params = std::move(params);
      co_return co_await r.handler(ctx);
    }
    if (path_known)
      co_return error_response(req, http::status::method_not_allowed, "method_not_allowed",
                               std::string(req.method_string()) + " is not allowed on " +
                                   std::string(path));
    if (path.substr(0, 5) == "/api/")
      co_return error_response(req, http::status::not_found, "not_found",
                               "no such endpoint: " + std::string(path) + " (see openapi.yaml)");
    if (req.method() != http::verb::get && req.method() != http::verb::head)
      co_return error_response(req, http::status::method_not_allowed, "method_not_allowed",
                               "only GET is served outside /api/");
    co_return co_await serve_static(ctx, opts.static_dir);
  }

  asio::awaitable<void> session(beast::tcp_stream stream) {
    beast::flat_buffer buf;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(opts.max_body_bytes);
      parser.header_limit(64 * 1024);
      stream.expires_after(std::chrono::seconds(75));  // idle keep-alive and slow senders
      boost::system::error_code ec;
      co_await http::async_read(stream, buf, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::end_of_stream || ec == asio::error::eof ||
          ec == asio::error::connection_reset || ec == beast::error::timeout ||
          ec == asio::error::operation_aborted)
        break;
      if (ec) {
        Request dummy;
        dummy.version(11);
        Response res = ec == http::error::body_limit
                           ? error_response(dummy, http::status::payload_too_large, "too_large",
                                            "request body over the " +
                                                std::to_string(opts.max_body_bytes) +
                                                "-byte limit (kfleetd --max-body-bytes)")
                           : error_response(dummy, http::status::bad_request, "bad_request",
                                            "malformed HTTP request: " + ec.message());
        res.keep_alive(false);
        res.prepare_payload();
        stream.expires_after(std::chrono::seconds(10));
        co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
        break;
      }
      Request req = parser.release();
      stream.expires_never();  // handlers may long-poll or stream
      std::optional<Response> res;
      try {
        res = co_await dispatch(req, stream);
      } catch (const nlohmann::json::exception& e) {
        res = error_response(req, http::status::bad_request, "invalid_request",
                             std::string("bad JSON value: ") + e.what());
      } catch (const boost::system::system_error& e) {
        break;  // the client went away mid-stream
      } catch (const std::exception& e) {
        log::error("api", req.method_string(), " ", req.target(), ": ", e.what());
        res = error_response(req, http::status::internal_server_error, "internal", e.what());
      }
      if (!res) break;  // streamed: the handler wrote and the connection ends
      res->keep_alive(req.keep_alive());
      res->prepare_payload();
      stream.expires_after(std::chrono::seconds(30));
      co_await http::async_write(stream, *res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !req.keep_alive()) break;
    }
    boost::system::error_code ignore;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignore);
  }

  asio::io_context& io;
  core::ControlPlane& cp;
  ServerOptions opts;
  tcp::acceptor acceptor;
  std::vector<Route> routes;
};

Server::Server(asio::io_context& io, core::ControlPlane& cp, ServerOptions o)
    : impl_(std::make_unique<Impl>(io, cp, std::move(o))) {}
Server::~Server() = default;

Result<std::uint16_t> Server::listen() {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(impl_->opts.address, ec);
  if (ec) return make_error(Errc::invalid_argument, "bad listen address '" + impl_->opts.address + "'");
  tcp::endpoint ep(addr, impl_->opts.port);
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return make_error(Errc::unavailable, "cannot listen on " + impl_->opts.address + ":" +
                                             std::to_string(impl_->opts.port) + ": " + ec.message());
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  return a.local_endpoint().port();
}

void Server::stop() {
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
}

std::uint16_t Server::port() const {
  boost::system::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

}  // namespace kfleet::api
