// The listener and the per-connection session (state lives on the coroutine frame). Bodies
// over the limit get 413 before they are read; malformed requests get 400; a handler that
// throws gets 500 and the server keeps serving.
#include "kfleet/api/server.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>
#include <type_traits>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/asio/write.hpp>
#ifdef KFLEET_HAVE_TLS
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#endif

#include "authorizer.hpp"
#include "http.hpp"
#include "standby_responder.hpp"
#include "kfleet/common/log.hpp"

namespace kfleet::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

boost::asio::awaitable<std::optional<Response>> lease(Ctx&, std::int64_t max_wait_ms);

bool tls_available() {
#ifdef KFLEET_HAVE_TLS
  return true;
#else
  return false;
#endif
}

namespace {

// Each connection is a socket (a file descriptor) and the coroutine that serves it: an agent
// waiting in a long poll holds one (kfleet-agent keeps a second for its heartbeats), so the
// process's soft limit on open files (often 1,024) is raised to its hard limit. Returns the
// limit in force.
rlim_t raise_open_files_limit() {
  rlimit l{};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0) return 0;
  if (l.rlim_cur < l.rlim_max) {
    rlimit want = l;
    want.rlim_cur = l.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) l = want;
  }
  return l.rlim_cur;
}

// accept() failed for want of a file descriptor (or kernel memory): the connections already
// open are served on, and accepting resumes a moment later instead of spinning.
bool out_of_descriptors(const boost::system::error_code& ec) {
  const int e = ec.value();
  return ec.category() == boost::system::system_category() &&
         (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM);
}

template <class Stream>
asio::awaitable<void> write_all(Stream& s, std::string data) {
  beast::get_lowest_layer(s).expires_after(std::chrono::seconds(30));
  co_await asio::async_write(s, asio::buffer(data), asio::use_awaitable);
}

// Whether the TLS peer showed a client certificate that the client CA verified.
template <class Stream>
bool client_cert_verified(Stream&) {
  return false;
}
#ifdef KFLEET_HAVE_TLS
template <>
bool client_cert_verified(beast::ssl_stream<beast::tcp_stream>& s) {
  SSL* ssl = s.native_handle();
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  X509* cert = SSL_get1_peer_certificate(ssl);
#else
  X509* cert = SSL_get_peer_certificate(ssl);
#endif
  if (!cert) return false;
  X509_free(cert);
  return SSL_get_verify_result(ssl) == X509_V_OK;
}
#endif

}  // namespace

struct Server::Impl {
  Impl(asio::io_context& io, core::ControlPlane& cp, ServerOptions o)
      : io(io), cp(&cp), opts(std::move(o)), acceptor(io), routes(make_routes()),
        auth(AuthRules{opts.metrics_open, !opts.tls_client_ca_file.empty(), opts.submit_per_minute,
                       opts.auth_failures_per_minute},
             opts.clock ? opts.clock : std::make_shared<SystemClock>()) {
    for (auto& r : routes)
      if (!r.handler) {
        const std::int64_t max_wait = opts.max_lease_wait_ms;
        r.handler = [max_wait](Ctx& c) { return lease(c, max_wait); };
      }
  }

  Result<void> setup_tls() {
    if (opts.tls_cert_file.empty() && opts.tls_key_file.empty()) {
      if (!opts.tls_client_ca_file.empty())
        return make_error(Errc::invalid_argument, "--tls-client-ca needs --tls-cert and --tls-key");
      return {};
    }
    if (opts.tls_cert_file.empty() || opts.tls_key_file.empty())
      return make_error(Errc::invalid_argument, "TLS needs both --tls-cert and --tls-key");
#ifdef KFLEET_HAVE_TLS
    ssl_ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    boost::system::error_code ec;
    ssl_ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    SSL_CTX_set_min_proto_version(ssl_ctx->native_handle(), TLS1_2_VERSION);
    ssl_ctx->use_certificate_chain_file(opts.tls_cert_file, ec);
    if (ec)
      return make_error(Errc::invalid_argument,
                        "cannot load the TLS certificate " + opts.tls_cert_file + ": " + ec.message());
    ssl_ctx->use_private_key_file(opts.tls_key_file, asio::ssl::context::pem, ec);
    if (ec)
      return make_error(Errc::invalid_argument,
                        "cannot load the TLS key " + opts.tls_key_file + ": " + ec.message());
    if (!opts.tls_client_ca_file.empty()) {
      ssl_ctx->load_verify_file(opts.tls_client_ca_file, ec);
      if (ec)
        return make_error(Errc::invalid_argument, "cannot load the client CA " +
                                                      opts.tls_client_ca_file + ": " + ec.message());
      // Optional at the handshake (browsers and the CLI have none); agent routes demand it.
      ssl_ctx->set_verify_mode(asio::ssl::verify_peer);
    }
    return {};
#else
    return make_error(Errc::invalid_argument,
                      "this kfleetd was built without OpenSSL: no TLS (install libssl-dev and rebuild)");
#endif
  }

  // A connection accepted: its session runs on the server's one thread.
  void start_session(tcp::socket sock) {
#ifdef KFLEET_HAVE_TLS
    if (ssl_ctx) {
      asio::co_spawn(acceptor.get_executor(), tls_session(std::move(sock)), asio::detached);
      return;
    }
#endif
    asio::co_spawn(acceptor.get_executor(), session(beast::tcp_stream(std::move(sock)), false),
                   asio::detached);
  }

  asio::awaitable<void> accept_loop() {
    asio::steady_timer pause(acceptor.get_executor());
    auto last_warned = std::chrono::steady_clock::time_point{};
    // Each time the loop runs it takes every connection already waiting, not one: the thread
    // gets here between its other work, and 10,000 agents connecting within 200 ms overflowed
    // the listen backlog one accept a turn (20,569 of their connects timed out in the 50,000
    // queued drain). A synchronous accept on the non-blocking acceptor returns would_block
    // when the backlog is empty; any other error is left to the next async_accept.
    {
      boost::system::error_code nb;
      acceptor.non_blocking(true, nb);
    }
    for (;;) {
      boost::system::error_code ec;
      tcp::socket sock = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        if (!out_of_descriptors(ec)) {
          log::warn("api", "accept: ", ec.message());
          continue;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now - last_warned > std::chrono::minutes(1)) {
          last_warned = now;
          log::warn("api", "accept: ", ec.message(), " (open files limit ",
                    raise_open_files_limit(), "): new connections wait while the ",
                    "open ones are served; raise LimitNOFILE (systemd) or ulimit -n");
        }
        pause.expires_after(std::chrono::milliseconds(100));
        co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      start_session(std::move(sock));
      for (int more = 0; more < kAcceptBurst; ++more) {
        tcp::socket next(acceptor.get_executor());
        acceptor.accept(next, ec);
        if (ec) break;
        start_session(std::move(next));
      }
    }
  }
  static constexpr int kAcceptBurst = 4096;  // at most a listen backlog's worth a turn

#ifdef KFLEET_HAVE_TLS
  asio::awaitable<void> tls_session(tcp::socket sock) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(sock)), *ssl_ctx);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(15));
    boost::system::error_code ec;
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;  // plain HTTP, a bad client certificate, or a scanner
    const bool cert_ok = client_cert_verified(stream);
    co_await session(std::move(stream), cert_ok);
  }
#endif

  // The pages a user reads most, which the read thread serves (serve_reads()): the job list,
  // one job and the agent list. Their handlers read the store through Ctx::store() and the
  // control plane only through what it shares with another thread (overlay_live,
  // region_blocks_now, provisioning_stopped_reason, cached_user).
  static bool read_thread_route(const Request& req) {
    if (req.method() != http::verb::get) return false;
    const std::string_view target = req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == "/api/v1/jobs" || path == "/api/v1/agents") return true;
    constexpr std::string_view job = "/api/v1/jobs/";
    if (path.substr(0, job.size()) != job) return false;
    const std::string_view id = path.substr(job.size());
    return !id.empty() && id.find('/') == std::string_view::npos;
  }

  // Whether the read thread serves this request: one of its routes, on a leader, with a token
  // this leader has checked already (cached_user) from an address not held back for failed
  // authentications. Anything else (no token, a token not yet seen, a refusal to give) is the
  // control plane thread's, which authorizes it in full.
  bool for_read_thread(const Request& req, const std::string& peer) {
    if (!reader || opts.role == "standby" || !read_thread_route(req)) return false;
    auto it = req.find(http::field::authorization);
    if (it == req.end()) return false;
    const std::string_view v = it->value();
    if (v.substr(0, 7) != "Bearer ") return false;
    auto p = cp->cached_user(std::string(v.substr(7)));
    if (!p) return false;
    return !auth.held_back(peer);
  }

  // Moves a plain connection to the other thread's io_context with the request it just read
  // (and whatever the client sent after it, in buf): its session goes on there.
  void hand_over(beast::tcp_stream& stream, beast::flat_buffer buf, Request req, bool to_reader) {
    asio::io_context& to = to_reader ? reader->io : io;
    boost::system::error_code ec;
    tcp::socket& from = stream.socket();
    const auto protocol = from.local_endpoint(ec).protocol();
    if (ec) return;  // the client is gone
    const auto fd = from.release(ec);
    if (ec) return;
    tcp::socket moved(to);
    moved.assign(protocol, fd, ec);
    if (ec) {
      ::close(fd);
      return;
    }
    asio::co_spawn(to,
                   session(beast::tcp_stream(std::move(moved)), false, to_reader, std::move(buf),
                           std::optional<Request>(std::move(req))),
                   asio::detached);
  }

  template <class Stream>
  asio::awaitable<std::optional<Response>> dispatch(const Request& req, Stream& stream,
                                                    const std::string& peer, bool client_cert_ok,
                                                    bool on_reader) {
    std::string_view target = req.target();
    auto qpos = target.find('?');
    std::string_view path = target.substr(0, qpos);
    const bool standby = opts.role == "standby";
    // A standby acts on nothing: every write goes to the leader before any other check.
    if (standby && !standby_serves(req.method(), nullptr))
      co_return standby_redirect(req, leader_url, leader_epoch);
    Ctx ctx{req, [&stream](std::string s) { return write_all(stream, std::move(s)); }, *cp,
            {}, {}, {}};
    ctx.role = opts.role;
    if (on_reader) ctx.reads = reader->store.get();
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
      if (standby && !standby_serves(r.method, &r.access))
        co_return standby_redirect(req, leader_url, leader_epoch);
      ctx.params = std::move(params);
      if (auto deny = auth.check(*cp, r, ctx, peer, client_cert_ok, on_reader))
        co_return std::move(*deny);
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

  // A connection's requests, in turn. A plain connection is served on the thread its request
  // is for: a request of the read thread's arriving on the control plane's thread (or the
  // other way round) moves the connection there, with that request (`first`).
  template <class Stream>
  asio::awaitable<void> session(Stream stream, bool client_cert_ok, bool on_reader = false,
                                beast::flat_buffer buf = {},
                                std::optional<Request> first = std::nullopt) {
    std::string peer;
    {
      boost::system::error_code ec;
      auto ep = beast::get_lowest_layer(stream).socket().remote_endpoint(ec);
      peer = ec ? "?" : ep.address().to_string();
    }
    for (;;) {
      Request req;
      boost::system::error_code ec;
      const bool handed_over = first.has_value();  // served here, whatever for_read_thread says now
      if (first) {
        req = std::move(*first);
        first.reset();
      } else {
        http::request_parser<http::string_body> parser;
        parser.body_limit(opts.max_body_bytes);
        parser.header_limit(64 * 1024);
        beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(75));
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
          if (!opts.role.empty()) res.set("X-Kfleet-Role", opts.role);
          res.keep_alive(false);
          res.prepare_payload();
          beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
          co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
          if (!ec) co_await drain(stream);
          break;
        }
        req = parser.release();
      }
      if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
        if (reader && !handed_over && for_read_thread(req, peer) != on_reader) {
          hand_over(stream, std::move(buf), std::move(req), !on_reader);
          co_return;
        }
      }
      beast::get_lowest_layer(stream).expires_never();  // handlers may long-poll or stream
      std::optional<Response> res;
      try {
        res = co_await dispatch(req, stream, peer, client_cert_ok, on_reader);
      } catch (const nlohmann::json::exception& e) {
        res = error_response(req, http::status::bad_request, "invalid_request",
                             std::string("bad JSON value: ") + e.what());
      } catch (const boost::system::system_error& e) {
        break;  // the client went away mid-stream
      } catch (const std::exception& e) {
        log::error("api", req.method_string(), " ", req.target().substr(0, req.target().find('?')),
                   ": ", e.what());
        res = error_response(req, http::status::internal_server_error, "internal", e.what());
      }
      if (!res) break;  // streamed: the handler wrote and the connection ends
      if (!opts.role.empty()) res->set("X-Kfleet-Role", opts.role);
      res->keep_alive(req.keep_alive());
      res->prepare_payload();
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
      co_await http::async_write(stream, *res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !req.keep_alive()) break;
    }
    co_await close(stream);
  }

  // A request refused before its body was read (over the size limit, malformed): its client
  // may still be sending. Closing at once would answer those bytes with a reset, and a reset
  // can destroy the answer before the client reads it (it then sees "connection reset", not
  // the 413 that says what to fix). So: stop sending, then read and drop what still comes, for
  // at most 2 s and 16 MiB, as web servers' lingering close does.
  template <class Stream>
  asio::awaitable<void> drain(Stream& stream) {
    auto& raw = beast::get_lowest_layer(stream);
    boost::system::error_code ec;
    raw.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) co_return;
    raw.expires_after(std::chrono::seconds(2));
    std::array<char, 16 * 1024> scratch;
    for (std::size_t read = 0; read < 16u * 1024 * 1024;) {
      const std::size_t n = co_await raw.async_read_some(
          asio::buffer(scratch), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;  // the client closed (eof), or the 2 s are up
      read += n;
    }
  }

  asio::awaitable<void> close(beast::tcp_stream& stream) {
    boost::system::error_code ignore;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignore);
    co_return;
  }
#ifdef KFLEET_HAVE_TLS
  asio::awaitable<void> close(beast::ssl_stream<beast::tcp_stream>& stream) {
    boost::system::error_code ec;
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(5));
    co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
  }
#endif

  // The read thread (serve_reads()): its own io_context, on which the connections of its
  // requests are served, and its own connection to the store.
  struct Reader {
    asio::io_context io{1};
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    store::StorePtr store;
    std::thread thread;
  };
  void stop_reads() {
    if (!reader || !reader->thread.joinable()) return;
    reader->work.reset();
    reader->io.stop();
    reader->thread.join();
  }
  ~Impl() {
    stop_reads();
    reader.reset();  // its sessions' frames before the members they point at
  }

  asio::io_context& io;
  core::ControlPlane* cp;  // the standby's until promote()
  ServerOptions opts;
  std::string leader_url;  // a standby's view of the leader
  std::int64_t leader_epoch = 0;
  tcp::acceptor acceptor;
  std::vector<Route> routes;
  Authorizer auth;
#ifdef KFLEET_HAVE_TLS
  std::unique_ptr<asio::ssl::context> ssl_ctx;
#endif
  std::unique_ptr<Reader> reader;
};

Server::Server(asio::io_context& io, core::ControlPlane& cp, ServerOptions o)
    : impl_(std::make_unique<Impl>(io, cp, std::move(o))) {}
Server::~Server() = default;

Result<std::uint16_t> Server::listen() {
  if (auto t = impl_->setup_tls(); !t) return t.error();
  const rlim_t files = raise_open_files_limit();
  log::debug("api", "open files limit ", files, ": about ", files > 64 ? files - 64 : 0,
             " connections");
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
  impl_->stop_reads();
}

void Server::serve_reads(store::StorePtr reads) {
  if (impl_->reader || !reads) return;
  auto r = std::make_unique<Impl::Reader>();
  r->store = std::move(reads);
  Impl::Reader* p = r.get();
  impl_->reader = std::move(r);
  p->thread = std::thread([p] {
    pthread_setname_np(pthread_self(), "kfleetd-reads");  // its own line in top and perf
    p->io.run();
  });
}

void Server::set_leader(const std::string& url, std::int64_t epoch) {
  impl_->leader_url = url;
  impl_->leader_epoch = epoch;
}

void Server::promote(core::ControlPlane& cp) {
  impl_->cp = &cp;
  impl_->opts.role = "leader";
}

std::uint16_t Server::port() const {
  boost::system::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

}  // namespace kfleet::api
