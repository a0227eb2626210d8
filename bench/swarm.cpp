#include "swarm.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace kfleet::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

struct Reply {
  unsigned status = 0;
  std::string body;
};

// One agent's connection to whichever kfleetd it talks to now.
struct Conn {
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buf;
  std::size_t server = 0;  // index into the swarm's servers
};

std::int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct Swarm::Impl {
  Impl(std::vector<SwarmAgent> a, SwarmOptions opts, SwarmStats& s)
      : agents(std::move(a)), o(std::move(opts)), st(s), rng(20261202) {
    for (const auto& url : o.urls) {
      // http://host:port
      const auto hostport = url.substr(url.find("://") + 3);
      const auto colon = hostport.rfind(':');
      servers.emplace_back(asio::ip::make_address(hostport.substr(0, colon)),
                           static_cast<unsigned short>(std::stoi(hostport.substr(colon + 1))));
      hosts.push_back(hostport);
    }
  }

  asio::awaitable<void> sleep(milliseconds d) {
    asio::steady_timer t(io);
    t.expires_after(d);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  // One request on the agent's connection (made first when there is none). nullopt: the
  // transport failed, or the server is a standby; the connection is dropped and the next
  // server is the one to try.
  asio::awaitable<std::optional<Reply>> call(Conn& c, const std::string& token,
                                             const std::string& target, std::string body,
                                             milliseconds timeout) {
    boost::system::error_code ec;
    auto next_server = [&] {
      if (c.stream) {
        c.stream->socket().close(ec);
        c.stream.reset();
        --st.connected;
      }
      c.buf.clear();
      c.server = (c.server + 1) % servers.size();
    };
    if (!c.stream) {
      c.stream.emplace(io);
      c.stream->expires_after(milliseconds(5000));
      co_await c.stream->async_connect(servers[c.server], asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        ++st.connect_errors;
        c.stream.reset();
        c.server = (c.server + 1) % servers.size();
        co_return std::nullopt;
      }
      ++st.connects;
      ++st.connected;
    }
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, hosts[c.server]);
    req.set(http::field::authorization, "Bearer " + token);
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.keep_alive(true);
    req.prepare_payload();
    c.stream->expires_after(timeout);
    co_await http::async_write(*c.stream, req, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      next_server();
      co_return std::nullopt;
    }
    http::response<http::string_body> res;
    co_await http::async_read(*c.stream, c.buf, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      next_server();
      co_return std::nullopt;
    }
    if (res.result_int() == 503 && res["X-Kfleet-Role"] == "standby") {
      next_server();
      co_return std::nullopt;
    }
    if (!res.keep_alive()) {
      c.stream->socket().close(ec);
      c.stream.reset();
      --st.connected;
    }
    co_return Reply{res.result_int(), std::move(res.body())};
  }

  // Since the leader was killed (--takeover): what fails or is slow then is the failover's,
  // counted apart from the soak's figures.
  bool in_takeover(const Clock::time_point& t) const {
    const std::int64_t kill = st.kill_at_ns.load();
    return kill != 0 &&
           std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count() >= kill;
  }

  // A heartbeat, timed; nullopt on a transport failure or an answer other than 200.
  asio::awaitable<std::optional<nlohmann::json>> heartbeat(std::size_t i, Conn& c,
                                                           const std::string& body) {
    const SwarmAgent& a = agents[i];
    const auto t0 = Clock::now();
    auto r = co_await call(c, a.token, "/api/v1/agents/" + std::to_string(a.id) + "/heartbeat",
                           body, milliseconds(10'000));
    const bool takeover = in_takeover(t0) || in_takeover(Clock::now());
    if (!r || r->status != 200) {
      ++(takeover ? st.takeover_errors : st.heartbeat_errors);
      co_return std::nullopt;
    }
    if (!takeover) {
      st.heartbeat_ms.push_back(std::chrono::duration<float, std::milli>(Clock::now() - t0).count());
      ++st.heartbeats;
    } else if (st.back_after_ms[i] < 0) {
      st.back_after_ms[i] = (mono_ns() - st.kill_at_ns.load()) / 1'000'000;
    }
    co_return nlohmann::json::parse(r->body, nullptr, false);
  }

  void count_poll_error(const std::optional<Reply>& r) {
    if (!r) {
      ++st.poll_error_kinds["no answer"];
      return;
    }
    const std::string status = "HTTP " + std::to_string(r->status);
    for (auto& [kind, n] : st.poll_error_kinds)
      if (kind.rfind(status + ":", 0) == 0) {
        ++n;
        return;
      }
    st.poll_error_kinds[status + ": " + r->body.substr(0, 160)] = 1;
  }

  asio::awaitable<void> backoff() {
    co_await sleep(milliseconds(std::uniform_int_distribution<int>(100, 400)(rng)));
  }

  // Holds a leased run as kfleet-agent does: heartbeats renewing it, then its events and its
  // finish. A run whose lease was lost (refused) is dropped, and counted.
  asio::awaitable<void> run(std::size_t i, Conn& c, std::int64_t run_id, std::int64_t fencing) {
    const SwarmAgent& a = agents[i];
    const std::string beat =
        nlohmann::json{{"run_id", run_id}, {"fencing_token", fencing}}.dump();
    const auto end = Clock::now() + milliseconds(o.drain ? 0 : o.run_ms);
    while (!stopping && Clock::now() < end) {
      const auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now());
      co_await sleep(std::min(left, milliseconds(o.heartbeat_ms)));
      if (Clock::now() >= end) break;
      auto hb = co_await heartbeat(i, c, beat);
      if (hb && !hb->value("lease_valid", true)) {
        ++st.lost_leases;
        co_return;
      }
    }
    const std::string runs = "/api/v1/runs/" + std::to_string(run_id);
    if (o.events_per_run > 0 && !o.drain) {
      nlohmann::json evs = nlohmann::json::array();
      for (int e = 1; e <= o.events_per_run; ++e)
        evs.push_back({{"seq", e}, {"ts_ms", 0}, {"type", "bench.samples"}, {"data", {{"i", e}}}});
      // Built outside the co_await: GCC 12 miscompiles a braced JSON temporary inside one.
      const std::string body = nlohmann::json{{"fencing_token", fencing}, {"events", evs}}.dump();
      for (int attempt = 0; attempt < 20; ++attempt) {
        auto r = co_await call(c, a.token, runs + "/events", body, milliseconds(10'000));
        if (r && r->status == 200) break;
        ++st.upload_errors;
        if (r && r->status == 409) {
          ++st.lost_leases;
          co_return;
        }
        co_await backoff();
      }
    }
    const std::string fin =
        nlohmann::json{{"fencing_token", fencing},
                       {"verdict", {{"outcome", "passed"}, {"simulated", true}}}}
            .dump();
    bool cut = false;  // a finish whose answer was lost may have landed: a 409 then is no loss
    for (int attempt = 0; attempt < 50; ++attempt) {
      auto r = co_await call(c, a.token, runs + "/finish", fin, milliseconds(10'000));
      if (r && r->status == 200) {
        ++st.finishes;
        co_return;
      }
      if (r && r->status == 409) {
        ++(cut ? st.finishes_unheard : st.lost_leases);
        co_return;
      }
      ++st.finish_errors;
      cut = cut || !r;
      co_await backoff();
    }
  }

  asio::awaitable<void> agent(std::size_t i) {
    const SwarmAgent& a = agents[i];
    Conn c;
    // Spread out, as a fleet that came up over time is.
    co_await sleep(milliseconds(std::uniform_int_distribution<int>(
        0, std::max(o.drain ? 200 : o.heartbeat_ms, 1))(rng)));
    const std::string poll = "/api/v1/agents/" + std::to_string(a.id) +
                             "/lease?wait_ms=" + std::to_string(o.poll_wait_ms);
    while (!stopping) {
      if (!o.drain && !(co_await heartbeat(i, c, "{}"))) {
        co_await backoff();
        continue;
      }
      if (stopping) break;
      auto r = co_await call(c, a.token, poll, "{}", milliseconds(o.poll_wait_ms + 10'000));
      if (!r || (r->status != 200 && r->status != 204)) {
        const bool takeover = in_takeover(Clock::now());
        ++(takeover ? st.takeover_errors : st.poll_errors);
        if (!takeover) count_poll_error(r);
        co_await backoff();
        continue;
      }
      ++st.polls;
      if (r->status == 204) continue;
      auto l = nlohmann::json::parse(r->body, nullptr, false);
      if (!l.is_object() || !l.contains("lease")) {
        ++st.poll_errors;
        ++st.poll_error_kinds["HTTP 200 without a lease"];
        continue;
      }
      ++st.leases;
      co_await run(i, c, l["lease"]["run_id"].get<std::int64_t>(),
                   l["lease"]["fencing_token"].get<std::int64_t>());
      if (o.drain && o.drain_target > 0 && st.finishes.load() + st.finishes_unheard.load() >= o.drain_target)
        stopping = true;
    }
    if (c.stream) {
      boost::system::error_code ec;
      c.stream->socket().shutdown(tcp::socket::shutdown_both, ec);
      --st.connected;
    }
  }

  asio::io_context io{1};
  std::vector<SwarmAgent> agents;
  SwarmOptions o;
  SwarmStats& st;
  std::mt19937 rng;
  std::vector<tcp::endpoint> servers;
  std::vector<std::string> hosts;
  bool stopping = false;  // the swarm's thread only
};

Swarm::Swarm(std::vector<SwarmAgent> agents, SwarmOptions o)
    : stats_(std::make_unique<SwarmStats>()) {
  stats_->back_after_ms.assign(agents.size(), -1);
  impl_ = std::make_unique<Impl>(std::move(agents), std::move(o), *stats_);
}

Swarm::~Swarm() { stop(); }

void Swarm::start() {
  // One socket per agent: 10,000 agents are past the usual soft limit of 1,024 open files.
  rlimit l{};
  if (getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur < l.rlim_max) {
    l.rlim_cur = l.rlim_max;
    setrlimit(RLIMIT_NOFILE, &l);
  }
  for (std::size_t i = 0; i < impl_->agents.size(); ++i)
    asio::co_spawn(impl_->io, impl_->agent(i), asio::detached);
  thread_ = std::thread([this] {
    if (impl_->o.cpu >= 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(impl_->o.cpu, &one);
      if (const int e = pthread_setaffinity_np(pthread_self(), sizeof one, &one)) {
        std::fprintf(stderr, "swarm: cannot run on CPU %d: %s\n", impl_->o.cpu, std::strerror(e));
        std::exit(2);
      }
    }
    impl_->io.run();
  });
}

void Swarm::stop() {
  if (!thread_.joinable()) return;
  asio::post(impl_->io, [this] { impl_->stopping = true; });
  thread_.join();
}

}  // namespace kfleet::bench
