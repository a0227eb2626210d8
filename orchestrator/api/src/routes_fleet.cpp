// Handlers for fleet-level results: baselines, fleet regression runs and campaigns.
#include "http.hpp"
#include "kfleet/core/fleet.hpp"

namespace kfleet::api {

namespace {

using Awaitable = boost::asio::awaitable<std::optional<Response>>;

Result<nlohmann::json> body_object(const Request& req) {
  auto j = nlohmann::json::parse(req.body(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return make_error(Errc::invalid_argument, "the request body must be a JSON object");
  return j;
}

}  // namespace

Awaitable list_baselines(Ctx& c) {
  const auto kernel = c.query.count("kernel") ? c.query.at("kernel") : std::string();
  const bool all = c.query.count("history") && c.query.at("history") != "0";
  nlohmann::json out = nlohmann::json::array();
  for (const auto& b : c.cp.store().baseline_history(kernel))
    if (all || b.superseded_ms == 0) out.push_back(core::to_json(b));
  co_return json_response(c.req, http::status::ok, {{"baselines", out}});
}

Awaitable set_baseline(Ctx& c) {
  auto body = body_object(c.req);
  if (!body) co_return error_response(c.req, body.error());
  if (!(*body).contains("run_id") || !(*body)["run_id"].is_number_integer())
    co_return error_response(c.req, http::status::bad_request, "invalid_request",
                             "run_id (the run whose result becomes the baseline) is required");
  const std::string by = c.user_name();  // recorded as the baseline's set_by
  std::string reason = body->value("reason", std::string());
  if (reason.empty()) reason = "kfleet baseline set";
  const auto run_id = (*body)["run_id"].get<std::int64_t>();
  auto b = core::set_baseline_from_run(c.cp, run_id, reason, by);
  if (!b) co_return error_response(c.req, b.error());
  c.cp.audit(by, "baseline.set",
             {{"run_id", run_id}, {"baseline_id", b->id}, {"kernel", b->kernel},
              {"case", b->case_name}, {"gpu_class", b->gpu_class}, {"reason", reason}});
  co_return json_response(c.req, http::status::created, {{"baseline", core::to_json(*b)}});
}

Awaitable list_regressions(Ctx& c) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : c.cp.store().list_regressions(static_cast<int>(c.query_int("limit", 50))))
    out.push_back(core::regression_summary(r));
  co_return json_response(c.req, http::status::ok, {{"regressions", out}});
}

Awaitable start_regression(Ctx& c) {
  auto body = body_object(c.req);
  if (!body) co_return error_response(c.req, body.error());
  auto reg = core::start_regression(c.cp, *body, c.user_name());
  if (!reg) co_return error_response(c.req, reg.error());
  auto view = core::regression_view(c.cp, reg->id);
  if (!view) co_return error_response(c.req, view.error());
  co_return json_response(c.req, http::status::created, {{"regression", *view}});
}

Awaitable get_regression(Ctx& c) {
  auto view = core::regression_view(c.cp, c.id());
  if (!view) co_return error_response(c.req, view.error());
  co_return json_response(c.req, http::status::ok, {{"regression", *view}});
}

Awaitable get_campaign(Ctx& c) {
  auto view = core::campaign_view(c.cp.store(), c.params["name"]);
  if (!view) co_return error_response(c.req, view.error());
  co_return json_response(c.req, http::status::ok, {{"campaign", *view}});
}

}  // namespace kfleet::api
