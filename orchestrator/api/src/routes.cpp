// The route table: every path the API answers. openapi.yaml must list exactly these
// (tests/openapi_gtest.cpp checks both ways).
#include <cstdio>
#include <iterator>

#include "http.hpp"
#include "kfleet/api/server.hpp"

namespace kfleet::api {

using Awaitable = boost::asio::awaitable<std::optional<Response>>;

Awaitable health(Ctx&);
Awaitable submit_job(Ctx&);
Awaitable list_jobs(Ctx&);
Awaitable get_job(Ctx&);
Awaitable cancel_job(Ctx&);
Awaitable get_run(Ctx&);
Awaitable results(Ctx&);
Awaitable list_agents(Ctx&);
Awaitable get_bundle(Ctx&);
Awaitable enrol_agent(Ctx&);
Awaitable heartbeat(Ctx&);
Awaitable lease(Ctx&, std::int64_t max_wait_ms);
Awaitable upload_events(Ctx&);
Awaitable finish_run(Ctx&);
Awaitable job_events(Ctx&);
Awaitable run_events(Ctx&);
Awaitable all_events(Ctx&);
Awaitable metrics(Ctx&);
Awaitable list_baselines(Ctx&);
Awaitable set_baseline(Ctx&);
Awaitable list_regressions(Ctx&);
Awaitable start_regression(Ctx&);
Awaitable get_regression(Ctx&);
Awaitable get_campaign(Ctx&);
Awaitable whoami(Ctx&);
Awaitable retire_agent(Ctx&);
Awaitable list_tokens(Ctx&);
Awaitable create_token(Ctx&);
Awaitable revoke_token(Ctx&);
Awaitable audit_log(Ctx&);
Awaitable list_enrol_tokens(Ctx&);
Awaitable mint_enrol_token(Ctx&);
Awaitable revoke_enrol_token(Ctx&);

std::vector<Route> make_routes() {
  using V = http::verb;
  using A = Access;
  return {
      {V::get, "/api/v1/health", A::open, health},
      {V::get, "/api/v1/whoami", A::read, whoami},
      {V::get, "/api/v1/jobs", A::read, list_jobs},
      {V::post, "/api/v1/jobs", A::submit, submit_job},
      {V::get, "/api/v1/jobs/{id}", A::read, get_job},
      {V::post, "/api/v1/jobs/{id}/cancel", A::submit, cancel_job},
      {V::get, "/api/v1/jobs/{id}/events", A::read, job_events},
      {V::get, "/api/v1/events", A::read, all_events},
      {V::get, "/api/v1/runs/{id}", A::read, get_run},
      {V::get, "/api/v1/runs/{id}/events", A::read, run_events},
      {V::post, "/api/v1/runs/{id}/events", A::agent_run, upload_events},
      {V::post, "/api/v1/runs/{id}/finish", A::agent_run, finish_run},
      {V::get, "/api/v1/results", A::read, results},
      {V::get, "/api/v1/agents", A::read, list_agents},
      {V::post, "/api/v1/agents/enrol", A::enrol, enrol_agent},
      {V::post, "/api/v1/agents/{id}/heartbeat", A::agent, heartbeat},
      {V::post, "/api/v1/agents/{id}/lease", A::agent, nullptr},  // bound in the server (needs options)
      {V::post, "/api/v1/agents/{id}/retire", A::admin, retire_agent},
      {V::get, "/api/v1/bundles/{hash}", A::bundle, get_bundle},
      {V::get, "/api/v1/baselines", A::read, list_baselines},
      {V::post, "/api/v1/baselines", A::submit, set_baseline},
      {V::get, "/api/v1/regressions", A::read, list_regressions},
      {V::post, "/api/v1/regressions", A::submit, start_regression},
      {V::get, "/api/v1/regressions/{id}", A::read, get_regression},
      {V::get, "/api/v1/campaigns/{name}", A::read, get_campaign},
      {V::get, "/api/v1/tokens", A::admin, list_tokens},
      {V::post, "/api/v1/tokens", A::admin, create_token},
      {V::post, "/api/v1/tokens/{id}/revoke", A::admin, revoke_token},
      {V::get, "/api/v1/enrol-tokens", A::admin, list_enrol_tokens},
      {V::post, "/api/v1/enrol-tokens", A::admin, mint_enrol_token},
      {V::post, "/api/v1/enrol-tokens/{id}/revoke", A::admin, revoke_enrol_token},
      {V::get, "/api/v1/audit", A::admin, audit_log},
      {V::get, "/metrics", A::metrics, metrics},
  };
}

const char* to_string(Access a) {
  switch (a) {
    case Access::open: return "open";
    case Access::metrics: return "metrics";
    case Access::read: return "read";
    case Access::submit: return "submit";
    case Access::admin: return "admin";
    case Access::bundle: return "bundle";
    case Access::agent: return "agent";
    case Access::agent_run: return "agent_run";
    case Access::enrol: return "enrol";
  }
  return "open";
}

std::vector<RouteInfo> route_table() {
  std::vector<RouteInfo> out;
  for (const auto& r : make_routes())
    out.push_back({std::string(http::to_string(r.method)), r.pattern, to_string(r.access)});
  return out;
}

namespace {

// kfleet_job_duration_seconds: lease to verdict of finished runs (the newest 1000, so a scrape
// stays cheap on a long-lived store).
std::string job_duration_histogram(store::Store& st) {
  static const double bounds[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600};
  std::vector<std::int64_t> counts(std::size(bounds) + 1, 0);
  double sum = 0;
  std::int64_t n = 0;
  for (const auto& r : st.finished_runs(1000)) {
    if (r.finished_ms <= 0 || r.started_ms <= 0 || r.finished_ms < r.started_ms) continue;
    const double s = static_cast<double>(r.finished_ms - r.started_ms) / 1000.0;
    std::size_t i = 0;
    while (i < std::size(bounds) && s > bounds[i]) ++i;
    ++counts[i];
    sum += s;
    ++n;
  }
  std::string out =
      "# HELP kfleet_job_duration_seconds Lease to verdict of finished runs.\n"
      "# TYPE kfleet_job_duration_seconds histogram\n";
  std::int64_t cum = 0;
  for (std::size_t i = 0; i < std::size(bounds); ++i) {
    cum += counts[i];
    char le[32];
    std::snprintf(le, sizeof le, "%g", bounds[i]);
    out += "kfleet_job_duration_seconds_bucket{le=\"" + std::string(le) + "\"} " + std::to_string(cum) + "\n";
  }
  out += "kfleet_job_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(n) + "\n";
  char sum_s[64];
  std::snprintf(sum_s, sizeof sum_s, "%.3f", sum);
  out += "kfleet_job_duration_seconds_sum " + std::string(sum_s) + "\n";
  out += "kfleet_job_duration_seconds_count " + std::to_string(n) + "\n";
  return out;
}

}  // namespace

// Prometheus text exposition: whether this kfleetd leads, then (the leader or the only one)
// queue depth, agents by state, stockouts by region and job durations, cheap enough to compute
// per scrape from the store. A standby answers kfleet_leader 0 and nothing else: the stockout
// counters live in the leader's memory, and a standby repeating the store's gauges would count
// every job twice in a sum over the kfleetd. So a scraper of every kfleetd sees each one up,
// and which one leads.
Awaitable metrics(Ctx& c) {
  std::string out =
      "# HELP kfleet_leader 1 on the kfleetd that schedules (the leader, or the only one), 0 on "
      "a standby (which exports nothing else).\n# TYPE kfleet_leader gauge\n";
  auto text = [&c](std::string body) {
    Response res{http::status::ok, c.req.version()};
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    res.body() = std::move(body);
    res.keep_alive(c.req.keep_alive());
    res.prepare_payload();
    return res;
  };
  if (c.role == "standby") co_return text(out + "kfleet_leader 0\n");
  out += "kfleet_leader 1\n";
  auto& st = c.cp.store();
  // The live fleet from the leader's memory; retired agents are history: counted in the
  // database, never read row by row.
  std::map<std::string, std::int64_t> agents_by_state;
  for (const auto& [s, n] : c.cp.agents_by_state()) agents_by_state[store::to_string(s)] = n;
  agents_by_state["retired"] = st.count_agents(store::AgentState::retired);
  // The queue from the leader's memory: reading every pending job from the store took 50 ms
  // at 10,000 queued and more at 50,000, on the thread that serves leases, at every scrape.
  auto pending_by_state = c.cp.queue_depth_by_state();
  out += "# HELP kfleet_queue_depth Jobs waiting for an agent.\n# TYPE kfleet_queue_depth gauge\n";
  for (const JobState s : {JobState::queued, JobState::waiting_capacity})
    out += std::string("kfleet_queue_depth{state=\"") + to_string(s) + "\"} " +
           std::to_string(pending_by_state[s]) + "\n";
  out += "# HELP kfleet_agents Agents by state.\n# TYPE kfleet_agents gauge\n";
  for (const char* s : {"idle", "busy", "lost", "retired"})
    out += "kfleet_agents{state=\"" + std::string(s) + "\"} " + std::to_string(agents_by_state[s]) + "\n";
  out += "# HELP kfleet_stockouts_total Capacity stockouts by region.\n# TYPE kfleet_stockouts_total counter\n";
  for (const auto& [region, n] : c.cp.stockouts_by_region())
    out += "kfleet_stockouts_total{region=\"" + region + "\"} " + std::to_string(n) + "\n";
  out += job_duration_histogram(st);
  out += "# HELP kfleet_store_round_trips_total Round trips to the database server (0 on "
         "SQLite, which runs in process).\n# TYPE kfleet_store_round_trips_total counter\n";
  out += "kfleet_store_round_trips_total " + std::to_string(st.round_trips()) + "\n";
  {
    char wait[32];
    std::snprintf(wait, sizeof wait, "%.6f", static_cast<double>(st.wait_ns()) / 1e9);
    out += "# HELP kfleet_store_wait_seconds_total Time the control plane's thread spent blocked "
           "on the database server (0 on SQLite).\n# TYPE kfleet_store_wait_seconds_total counter\n";
    out += "kfleet_store_wait_seconds_total " + std::string(wait) + "\n";
    const auto kinds = st.statement_waits();
    if (!kinds.empty()) {
      out += "# HELP kfleet_store_statement_wait_seconds_total That time by what the round trip "
             "carried (its first statement's verb and table, +COMMIT when it committed).\n"
             "# TYPE kfleet_store_statement_wait_seconds_total counter\n";
      for (const auto& k : kinds) {
        std::snprintf(wait, sizeof wait, "%.6f", static_cast<double>(k.wait_ns) / 1e9);
        out += "kfleet_store_statement_wait_seconds_total{statement=\"" + k.statement + "\"} " + wait + "\n";
      }
      out += "# HELP kfleet_store_statement_round_trips_total Round trips by what they carried.\n"
             "# TYPE kfleet_store_statement_round_trips_total counter\n";
      for (const auto& k : kinds)
        out += "kfleet_store_statement_round_trips_total{statement=\"" + k.statement + "\"} " +
               std::to_string(k.round_trips) + "\n";
      out += "# HELP kfleet_store_statement_slow_round_trips_total Those round trips that took 1 ms "
             "or more.\n# TYPE kfleet_store_statement_slow_round_trips_total counter\n";
      for (const auto& k : kinds)
        out += "kfleet_store_statement_slow_round_trips_total{statement=\"" + k.statement + "\"} " +
               std::to_string(k.slow) + "\n";
    }
  }
  out += "# HELP kfleet_finishes_gathered_total Agents' finishes written in batches (one "
         "transaction a batch).\n# TYPE kfleet_finishes_gathered_total counter\n";
  out += "kfleet_finishes_gathered_total " + std::to_string(c.cp.finishes_gathered()) + "\n";
  out += "# HELP kfleet_finish_batches_total Batches those finishes were written in.\n"
         "# TYPE kfleet_finish_batches_total counter\n";
  out += "kfleet_finish_batches_total " + std::to_string(c.cp.finish_batches()) + "\n";
  out += "# HELP kfleet_agents_waiting Agents waiting for work in a long poll now.\n"
         "# TYPE kfleet_agents_waiting gauge\n";
  out += "kfleet_agents_waiting " + std::to_string(c.cp.waiting_agents()) + "\n";
  out += "# HELP kfleet_heartbeats_total Heartbeats and long polls heard from agents (held in "
         "memory).\n# TYPE kfleet_heartbeats_total counter\n";
  out += "kfleet_heartbeats_total " + std::to_string(c.cp.beats_heard()) + "\n";
  out += "# HELP kfleet_heartbeat_writes_total Of those, the ones that wrote to the store: a lost "
         "agent back, a lease's stored expiry renewed.\n# TYPE kfleet_heartbeat_writes_total "
         "counter\n";
  out += "kfleet_heartbeat_writes_total " + std::to_string(c.cp.beats_written()) + "\n";
  out += "# HELP kfleet_scheduling_passes_total Scheduling passes run.\n"
         "# TYPE kfleet_scheduling_passes_total counter\n";
  out += "kfleet_scheduling_passes_total " + std::to_string(c.cp.passes()) + "\n";
  co_return text(std::move(out));
}

}  // namespace kfleet::api
