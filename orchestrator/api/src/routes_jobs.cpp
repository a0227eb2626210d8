// Handlers for users: jobs, runs, results, the fleet view, bundles and health. Who may call
// each is checked before they run (the access table in routes.cpp).
#include <variant>

#include "http.hpp"
#include "kfleet/common/bundle.hpp"
#include "kfleet/common/sha256.hpp"
#include "views.hpp"

namespace kfleet::api {

namespace {

using Awaitable = boost::asio::awaitable<std::optional<Response>>;

Result<nlohmann::json> parse_body(const Request& req) {
  try {
    auto j = nlohmann::json::parse(req.body());
    if (!j.is_object())
      return make_error(Errc::invalid_argument, "the request body must be a JSON object");
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    return make_error(Errc::invalid_argument, std::string("the request body is not JSON: ") + e.what());
  }
}

}  // namespace

Awaitable health(Ctx& c) {
  co_return json_response(c.req, http::status::ok,
                          {{"status", "ok"}, {"version", "1"}, {"store", c.cp.store().backend()},
                           {"time", format_iso8601(c.cp.clock().now_ms())},
                           {"provisioner", c.cp.provisioner().name()}});
}

Awaitable submit_job(Ctx& c) {
  auto body = parse_body(c.req);
  if (!body) co_return error_response(c.req, body.error());
  const auto& j = *body;
  if (!j.contains("spec_yaml") || !j["spec_yaml"].is_string())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "spec_yaml (the job YAML as text) is required");
  if (!j.contains("bundle") || !j["bundle"].is_object())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "bundle ({files: [{path, data_b64}]}) is required");
  core::SubmitRequest r;
  r.spec_yaml = j["spec_yaml"].get<std::string>();
  if (j.contains("source_name") && j["source_name"].is_string())
    r.source_name = j["source_name"].get<std::string>();
  r.bundle = j["bundle"];
  r.force = j.value("force", false);
  // A child of a campaign's job, as parent + change (docs/mcp.md): the change is computed and
  // recorded with it; the parent must be the current best unless allow_non_best.
  if (j.contains("parent_job")) {
    if (!j["parent_job"].is_number_integer() || j["parent_job"].get<std::int64_t>() <= 0)
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "parent_job must be a job id (a positive integer)");
    r.parent_job = j["parent_job"].get<std::int64_t>();
  }
  r.allow_non_best = j.value("allow_non_best", false);
  // The in-flight limit counts per token: its hash, as the store keeps tokens.
  if (!c.bearer.empty()) r.token_key = sha256_hex(c.bearer);
  // Who submitted: the user the token belongs to (never any part of the token).
  r.submitted_by = c.user_name();
  auto out = c.cp.submit(r);
  if (auto* err = std::get_if<core::SubmitError>(&out)) {
    nlohmann::json details = nlohmann::json::array();
    for (const auto& i : err->issues)
      details.push_back({{"file", i.file}, {"line", i.line}, {"column", i.column},
                         {"field", i.field}, {"message", i.message}});
    if (err->code == "in_flight_limit") {
      // Not a rate: a slot frees when a verdict comes. Retry-After is a hint for clients that
      // only know how to wait.
      auto res = error_response(c.req, http::status::too_many_requests, err->code,
                                err->error.message, err->details);
      res.set(http::field::retry_after, "10");
      co_return res;
    }
    if (!err->code.empty())
      co_return error_response(c.req, status_for(err->error.code), err->code, err->error.message,
                               err->details);
    co_return error_response(c.req, status_for(err->error.code),
                             err->issues.empty() ? errc_name(err->error.code) : "invalid_job",
                             err->error.message, details);
  }
  auto& ok = std::get<core::SubmitResult>(out);
  nlohmann::json res = {{"job", job_json(ok.job)}};
  if (!ok.change.is_null()) {
    res["job"]["change"] = ok.change;  // a new child's, as stored with it
  } else if (ok.duplicate_of) {
    if (auto o = c.cp.store().job_origin(ok.job.id); o && o->parent_job_id)
      res["job"]["change"] = o->change;
  }
  if (ok.duplicate_of) {
    res["duplicate_of"] = ok.duplicate_of;
    co_return json_response(c.req, http::status::ok, res);
  }
  co_return json_response(c.req, http::status::created, res);
}

Awaitable list_jobs(Ctx& c) {
  store::JobFilter f;
  f.with_spec = false;  // the list shows no spec (GET /api/v1/jobs/{id} has it)
  f.limit = static_cast<int>(std::clamp<std::int64_t>(c.query_int("limit", 100), 1, 1000));
  f.before_id = c.query_int("before", 0);
  if (auto it = c.query.find("campaign"); it != c.query.end()) f.campaign = it->second;
  if (auto it = c.query.find("state"); it != c.query.end()) {
    std::string_view s = it->second;
    while (!s.empty()) {
      auto comma = s.find(',');
      std::string one(s.substr(0, comma));
      auto st = job_state_from_string(one);
      if (!st)
        co_return error_response(c.req, http::status::bad_request, "invalid_request",
                                 "unknown state '" + one + "'");
      f.states.push_back(*st);
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
  }
  std::string out = "{\"jobs\":[";
  const auto rows = c.store().list_jobs(f);
  out.reserve(out.size() + rows.size() * 640);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i) out += ',';
    append_job_json(out, rows[i]);
  }
  out += "]}";
  co_return json_text_response(c.req, http::status::ok, std::move(out));
}

Awaitable get_job(Ctx& c) {
  // The job, its runs and its origin in one read (one round trip on PostgreSQL).
  auto page = c.store().job_page(c.id());
  if (!page.job) co_return error_response(c.req, http::status::not_found, "not_found", "no such job");
  nlohmann::json runs = nlohmann::json::array();
  // A running run's lease as the leader holds it (the store's is renewed lazily).
  for (auto& r : page.runs) {
    c.cp.overlay_live(r);
    runs.push_back(run_json(r));
  }
  nlohmann::json job = job_json(*page.job, true);
  // Submitted as parent + change: the diff against the parent, for every view to show.
  const auto& origin = page.origin;
  job["change"] = origin && origin->parent_job_id ? origin->change : nlohmann::json();
  co_return json_response(c.req, http::status::ok, {{"job", job}, {"runs", runs}});
}

Awaitable cancel_job(Ctx& c) {
  auto r = c.cp.cancel(c.id(), c.user_name());
  if (!r) co_return error_response(c.req, r.error());
  co_return json_response(c.req, http::status::ok, {{"job", job_json(*r)}});
}

Awaitable get_run(Ctx& c) {
  auto r = c.cp.store().get_run(c.id());
  if (!r) co_return error_response(c.req, http::status::not_found, "not_found", "no such run");
  c.cp.overlay_live(*r);
  auto j = c.cp.store().get_job(r->job_id);
  co_return json_response(c.req, http::status::ok,
                          {{"run", run_json(*r)}, {"job", j ? job_json(*j) : nlohmann::json()}});
}

Awaitable results(Ctx& c) {
  int limit = static_cast<int>(std::clamp<std::int64_t>(c.query_int("limit", 100), 1, 1000));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : c.cp.store().finished_runs(limit, c.query_int("before", 0))) {
    auto j = c.cp.store().get_job(r.job_id);
    out.push_back({{"run", run_json(r)}, {"job", j ? job_json(*j) : nlohmann::json()}});
  }
  co_return json_response(c.req, http::status::ok, {{"results", out}});
}

// The live fleet by default (retired agents stay in the store for history, and a fleet that
// churns leaves thousands); ?state=idle,busy,lost,retired or ?state=all widens it. A page
// holds ?limit agents (default 100, at most 1000), oldest first; next_after pages on.
Awaitable list_agents(Ctx& c) {
  const TimeMs now = c.cp.clock().now_ms();
  store::AgentFilter f;
  f.limit = static_cast<int>(std::clamp<std::int64_t>(c.query_int("limit", 100), 1, 1000));
  f.after_id = c.query_int("after", 0);
  if (auto it = c.query.find("state"); it != c.query.end() && it->second == "all") {
    f.include_retired = true;
  } else if (it != c.query.end()) {
    std::string_view s = it->second;
    while (!s.empty()) {
      auto comma = s.find(',');
      std::string one(s.substr(0, comma));
      auto st = store::agent_state_from_string(one);
      if (!st)
        co_return error_response(c.req, http::status::bad_request, "invalid_request",
                                 "unknown agent state '" + one +
                                     "' (use idle, busy, lost, retired, or all)");
      f.states.push_back(*st);
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
  }
  // One more than the page tells whether another page follows.
  const int page = f.limit;
  ++f.limit;
  auto rows = c.store().list_agents(f);
  const bool more = static_cast<int>(rows.size()) > page;
  if (more) rows.resize(static_cast<std::size_t>(page));
  // Keys in the order json::dump sorts them: agents, blocks, next_after, provisioning_stopped.
  std::string out = "{\"agents\":[";
  out.reserve(out.size() + rows.size() * 640);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // Last seen as the leader heard it: heartbeats are not written to the store.
    c.cp.overlay_live(rows[i]);
    if (i) out += ',';
    append_agent_json(out, rows[i]);
  }
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& b : c.cp.region_blocks_now())
    if (b.until_ms > now) blocks.push_back(block_json(b, now));
  out += "],\"blocks\":" + blocks.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (more) out += ",\"next_after\":" + std::to_string(rows.back().id);
  if (!c.cp.provisioning_stopped_reason().empty())
    out += ",\"provisioning_stopped\":" +
           nlohmann::json(c.cp.provisioning_stopped_reason())
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out += '}';
  co_return json_text_response(c.req, http::status::ok, std::move(out));
}

Awaitable get_bundle(Ctx& c) {
  auto it = c.params.find("hash");
  auto body = c.cp.store().get_bundle(it == c.params.end() ? "" : it->second);
  if (!body) co_return error_response(c.req, http::status::not_found, "not_found", "no such bundle");
  Response res{http::status::ok, c.req.version()};
  res.set(http::field::content_type, "application/json");
  res.body() = *body;
  res.keep_alive(c.req.keep_alive());
  res.prepare_payload();
  co_return res;
}

}  // namespace kfleet::api
