// Event feeds: JSON pages, and Server-Sent Events streams that follow a job, a run or the
// whole orchestrator live. Each SSE event's id is the event's global id (runs: its seq), so a
// client that reconnects with Last-Event-ID misses nothing.
#include <chrono>

#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "http.hpp"

namespace kfleet::api {

namespace {

using Awaitable = boost::asio::awaitable<std::optional<Response>>;
namespace asio = boost::asio;

std::int64_t start_after(Ctx& c) {
  std::int64_t after = c.query_int("after", 0);
  if (auto it = c.req.find("Last-Event-ID"); it != c.req.end()) {
    try {
      after = std::max<std::int64_t>(after, std::stoll(std::string(it->value())));
    } catch (...) {
    }
  }
  return after;
}

nlohmann::json events_json(const std::vector<Event>& evs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : evs) a.push_back(to_json(e));
  return a;
}

std::string sse_frame(const Event& e, std::int64_t id) {
  return "id: " + std::to_string(id) + "\nevent: " + e.type + "\ndata: " +
         to_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

// Streams until `done()` says so and every event is sent, or the client goes away.
template <class Fetch, class Done, class IdOf>
asio::awaitable<void> stream(Ctx& c, std::int64_t after, Fetch fetch, Done done, IdOf id_of) {
  // The header by hand: the connection may be TLS or not, and the body runs until it closes.
  // Built before the co_await: GCC 12 destroys temporaries of a conditional expression inside
  // a co_await operand twice.
  std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n";
  if (!c.role.empty()) head += "X-Kfleet-Role: " + c.role + "\r\n";
  head += "Connection: close\r\n\r\n";
  co_await c.write_raw(std::move(head));
  // A standby polls its store (the wait below returns after a short poll there), so a
  // keep-alive goes out only when nothing was written for a while.
  auto last_write = std::chrono::steady_clock::now();
  for (;;) {
    // done() before fetch(): once the job or run has ended, its last events are stored, so a
    // stream that has sent them ends now instead of after the next wait.
    const bool ended = done();
    std::vector<Event> evs = fetch(after);
    std::string out;
    for (const auto& e : evs) {
      after = id_of(e);
      out += sse_frame(e, after);
    }
    if (ended && evs.size() < 500) {
      out += "event: end\ndata: {}\n\n";
      co_await c.write_raw(std::move(out));
      co_return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (out.empty() && now - last_write >= std::chrono::seconds(14))
      out = ": keep-alive\n\n";  // also detects a client that went away
    const bool send = !out.empty();
    if (send) last_write = now;
    if (send) co_await c.write_raw(std::move(out));
    if (evs.size() < 500) co_await c.cp.wait_for_events(15'000);
  }
}

}  // namespace

Awaitable job_events(Ctx& c) {
  const std::int64_t job_id = c.id();
  if (!c.cp.store().get_job(job_id))
    co_return error_response(c.req, http::status::not_found, "not_found", "no such job");
  const std::int64_t after = start_after(c);
  auto& st = c.cp.store();
  if (!c.wants_sse()) {
    int limit = static_cast<int>(std::clamp<std::int64_t>(c.query_int("limit", 1000), 1, 10000));
    co_return json_response(c.req, http::status::ok,
                            {{"events", events_json(st.job_events(job_id, after, limit))}});
  }
  co_await stream(
      c, after, [&](std::int64_t a) { return st.job_events(job_id, a, 500); },
      [&] {
        auto j = st.get_job(job_id);
        return !j || is_terminal(j->state);
      },
      [](const Event& e) { return e.id; });
  co_return std::nullopt;
}

Awaitable run_events(Ctx& c) {
  const std::int64_t run_id = c.id();
  if (!c.cp.store().get_run(run_id))
    co_return error_response(c.req, http::status::not_found, "not_found", "no such run");
  const std::int64_t after = start_after(c);
  auto& st = c.cp.store();
  if (!c.wants_sse()) {
    int limit = static_cast<int>(std::clamp<std::int64_t>(c.query_int("limit", 1000), 1, 10000));
    co_return json_response(c.req, http::status::ok,
                            {{"events", events_json(st.run_events(run_id, after, limit))}});
  }
  co_await stream(
      c, after, [&](std::int64_t a) { return st.run_events(run_id, a, 500); },
      [&] {
        auto r = st.get_run(run_id);
        return !r || r->outcome != RunOutcome::running;
      },
      [](const Event& e) { return e.seq; });
  co_return std::nullopt;
}

Awaitable all_events(Ctx& c) {
  const std::int64_t after = start_after(c);
  auto& st = c.cp.store();
  if (!c.wants_sse()) {
    int limit = static_cast<int>(std::clamp<std::int64_t>(c.query_int("limit", 1000), 1, 10000));
    co_return json_response(c.req, http::status::ok,
                            {{"events", events_json(st.events_after(after, limit))}});
  }
  co_await stream(
      c, after, [&](std::int64_t a) { return st.events_after(a, 500); }, [] { return false; },
      [](const Event& e) { return e.id; });
  co_return std::nullopt;
}

}  // namespace kfleet::api
