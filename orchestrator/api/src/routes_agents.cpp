// Handlers for agents: enrol, heartbeat, lease (long-poll), event upload and finish.
#include "http.hpp"
#include "kfleet/api/event_batch.hpp"
#include "views.hpp"

namespace kfleet::api {

namespace {

using Awaitable = boost::asio::awaitable<std::optional<Response>>;

// Agent calls on /runs/{id}/... carry the run id; the server checked the token is an
// agent's (c.agent_id), and only the agent that holds the run may report on it. Which agent
// that is the control plane knows for the runs it granted (ControlPlane::run_agent): no read
// of the run per upload or finish; the store checks it again in the call's transaction.
std::optional<Response> require_run_agent(Ctx& c, std::int64_t& agent_id) {
  auto holder = c.cp.run_agent(c.id());
  if (!holder) return error_response(c.req, http::status::not_found, "not_found", "no such run");
  agent_id = *holder;
  if (c.agent_id == 0 || c.agent_id != agent_id)
    return error_response(c.req, http::status::forbidden, "forbidden",
                          "only the agent that holds run " + std::to_string(c.id()) +
                              " may report on it");
  return std::nullopt;
}

Result<nlohmann::json> body_json(const Request& req) {
  try {
    auto j = req.body().empty() ? nlohmann::json::object() : nlohmann::json::parse(req.body());
    if (!j.is_object()) return make_error(Errc::invalid_argument, "the body must be a JSON object");
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    return make_error(Errc::invalid_argument, std::string("the body is not JSON: ") + e.what());
  }
}

// The reused batch keeps what a usual upload needs, not what a rare large one took: over
// 2,048 events it is let go, and so is any event's data text over 4 KiB.
void keep_small(std::vector<Event>& evs) {
  if (evs.size() > 2048) {
    std::vector<Event>().swap(evs);
    return;
  }
  for (auto& e : evs)
    if (e.data_text.capacity() > 4096) std::string().swap(e.data_text);
}
}  // namespace

Awaitable enrol_agent(Ctx& c) {
  auto b = body_json(c.req);
  if (!b) co_return error_response(c.req, b.error());
  const auto& j = *b;
  for (const char* k : {"name", "region", "backend"})
    if (!j.contains(k) || !j[k].is_string() || j[k].get<std::string>().empty())
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               std::string(k) + " (a non-empty string) is required");
  if (!j.contains("gpus") || !j["gpus"].is_array())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "gpus (a list) is required");
  core::EnrolRequest r;
  r.name = j["name"];
  r.region = j["region"];
  r.backend = j["backend"];
  r.provider = j.value("provider", "static");
  if (j.contains("instance_id") && !j["instance_id"].is_null()) {
    if (!j["instance_id"].is_string() || j["instance_id"].get<std::string>().size() > 200)
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "instance_id must be a string of at most 200 characters");
    r.instance_id = j["instance_id"];
  }
  r.enrol_token = c.bearer;
  if (j.contains("info") && j["info"].is_object()) r.info = j["info"];
  if (j.contains("host") && !j["host"].is_null()) {
    if (!j["host"].is_string() || j["host"].get<std::string>().size() > 200)
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "host must be a string of at most 200 characters");
    r.host = j["host"];
  }
  if (j.contains("slot") && !j["slot"].is_null()) {
    if (!j["slot"].is_number_integer() || j["slot"].get<std::int64_t>() < 0 ||
        j["slot"].get<std::int64_t>() > 255)
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "slot must be the GPU's index on its host (0..255)");
    r.slot = j["slot"].get<int>();
  }
  for (const auto& g : j["gpus"]) r.gpus.push_back(gpu_info_from_json(g));
  if (r.backend == "simulated")
    for (auto& g : r.gpus) g.simulated = true;
  auto e = c.cp.enrol(r);
  if (!e) co_return error_response(c.req, e.error());
  co_return json_response(c.req, http::status::created,
                          {{"agent_id", e->agent_id}, {"token", e->token},
                           {"heartbeat_ms", c.cp.config().heartbeat_ms},
                           {"lease_ttl_ms", c.cp.config().lease_ttl_ms}});
}

Awaitable heartbeat(Ctx& c) {
  auto b = body_json(c.req);
  if (!b) co_return error_response(c.req, b.error());
  auto r = c.cp.heartbeat(c.id(), b->value("run_id", std::int64_t{0}),
                          b->value("fencing_token", std::int64_t{0}));
  if (!r) co_return error_response(c.req, r.error());
  nlohmann::json out = {{"ok", true}, {"lease_valid", r->lease_valid}, {"cancel", r->cancel}};
  if (r->lease_expires_ms) out["lease_expires_ms"] = r->lease_expires_ms;
  co_return json_response(c.req, http::status::ok, out);
}

Awaitable lease(Ctx& c, std::int64_t max_wait_ms) {
  const std::int64_t wait = std::clamp<std::int64_t>(c.query_int("wait_ms", 20'000), 0, max_wait_ms);
  auto r = co_await c.cp.wait_for_lease(c.id(), wait);
  if (!r) co_return error_response(c.req, r.error());
  if (!r->has_value()) {
    Response res{http::status::no_content, c.req.version()};
    res.keep_alive(c.req.keep_alive());
    res.prepare_payload();
    co_return res;
  }
  const core::LeaseOffer& o = **r;
  co_return json_response(c.req, http::status::ok,
                          {{"lease",
                            {{"run_id", o.lease.run_id},
                             {"job_id", o.lease.job_id},
                             {"fencing_token", o.lease.fencing_token},
                             {"ttl_ms", c.cp.config().lease_ttl_ms},
                             {"attempt", o.attempt},
                             {"spec", o.spec},
                             {"bundle_hash", o.bundle_hash},
                             {"compare", o.compare},
                             {"phase", o.phase},
                             {"arch", o.arch}}}});
}

Awaitable upload_events(Ctx& c) {
  std::int64_t agent_id = 0;
  if (auto deny = require_run_agent(c, agent_id)) co_return *deny;
  // The common shape is read without a JSON tree (event_batch.hpp), into this thread's batch,
  // whose events' storage the next upload reuses; nothing suspends between here and ingest().
  thread_local EventBatch fast;
  std::vector<Event> parsed;
  std::vector<Event>* events = &fast.events;
  std::int64_t fencing_token = 0;
  if (scan_event_batch(c.req.body(), fast)) {
    fencing_token = fast.fencing_token;
  } else {
    events = &parsed;
    auto b = body_json(c.req);
    if (!b) co_return error_response(c.req, b.error());
    if (!b->contains("events") || !(*b)["events"].is_array())
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "events (a list) is required");
    parsed.reserve((*b)["events"].size());
    for (auto& e : (*b)["events"]) {
      // The data is moved out of the parsed body, not copied: batches are large.
      nlohmann::json data;
      if (e.is_object())
        if (auto d = e.find("data"); d != e.end() && d->is_object()) data = std::move(*d);
      Event ev = event_from_json(e);
      if (data.is_object()) ev.data = std::move(data);
      parsed.push_back(std::move(ev));
    }
    fencing_token = b->value("fencing_token", std::int64_t{0});
  }
  for (const auto& ev : *events)
    if (ev.seq <= 0 || ev.type.empty())
      co_return error_response(c.req, http::status::bad_request, "invalid_request",
                               "every event needs seq >= 1 and a type");
  auto r = c.cp.ingest(agent_id, c.id(), fencing_token, *events);
  keep_small(fast.events);
  if (!r) co_return error_response(c.req, r.error());
  co_return json_response(c.req, http::status::ok,
                          {{"accepted", r->accepted}, {"duplicates", r->duplicates},
                           {"contiguous", r->contiguous}});
}

Awaitable finish_run(Ctx& c) {
  std::int64_t agent_id = 0;
  if (auto deny = require_run_agent(c, agent_id)) co_return *deny;
  auto b = body_json(c.req);
  if (!b) co_return error_response(c.req, b.error());
  if (!b->contains("verdict") || !(*b)["verdict"].is_object())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "verdict (an object) is required");
  auto r = co_await c.cp.finish_gathered(agent_id, c.id(),
                                         b->value("fencing_token", std::int64_t{0}),
                                         verdict_from_json((*b)["verdict"]));
  if (!r) co_return error_response(c.req, r.error());
  co_return json_response(c.req, http::status::ok, {{"run", run_json(*r)}});
}

}  // namespace kfleet::api
