#include "standby_responder.hpp"

namespace kfleet::api {

Response standby_redirect(const Request& req, const std::string& leader_url, std::int64_t epoch) {
  nlohmann::json body = {
      {"error",
       {{"code", "standby"},
        {"message", "this kfleetd is a standby; " +
                        (leader_url.empty() ? std::string("the leader is starting")
                                            : "the leader is " + leader_url) +
                        " (epoch " + std::to_string(epoch) +
                        "); it serves reads, but writes, agent calls and /metrics go to the "
                        "leader: list every kfleetd URL, comma-separated, in --server / "
                        "KFLEET_SERVER to follow it"}}},
      {"role", "standby"},
      {"leader", leader_url},
      {"epoch", epoch}};
  Response res = json_response(req, http::status::service_unavailable, body);
  res.set("X-Kfleet-Role", "standby");
  res.set(http::field::retry_after, "1");
  if (!leader_url.empty()) res.set(http::field::location, leader_url + std::string(req.target()));
  return res;
}

bool standby_serves(http::verb method, const Access* route_access) {
  if (method != http::verb::get && method != http::verb::head) return false;
  if (!route_access) return true;  // the dashboards' files
  switch (*route_access) {
    case Access::agent:
    case Access::agent_run:
    case Access::enrol:
      return false;  // agents talk to the leader (their GETs, if any, too)
    default:
      break;
  }
  return true;  // every other GET reads the store (GET /metrics: kfleet_leader 0)
}

}  // namespace kfleet::api
