#include "views.hpp"

namespace kfleet::api {

namespace {
nlohmann::json time_or_null(TimeMs t) {
  return t > 0 ? nlohmann::json(format_iso8601(t)) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json job_json(const store::JobRecord& j, bool with_spec) {
  nlohmann::json o = {{"id", j.id},
                      {"name", j.name},
                      {"campaign", j.campaign},
                      {"parent", j.parent},
                      {"priority", j.priority},
                      {"gpu", j.gpu},
                      {"regions", j.regions},
                      {"state", to_string(j.state)},
                      {"state_reason", j.state_reason},
                      {"attempts", j.attempts},
                      {"max_attempts", j.max_attempts},
                      {"current_run_id", j.current_run_id},
                      {"bundle_hash", j.bundle_hash},
                      {"content_hash", j.content_hash},
                      {"source_name", j.source_name},
                      {"submitted_by", j.submitted_by},
                      {"cancelled_by", j.cancelled_by},
                      {"created", time_or_null(j.created_ms)},
                      {"updated", time_or_null(j.updated_ms)},
                      {"simulated", j.simulated},
                      {"verdict", j.verdict ? to_json(*j.verdict) : nlohmann::json(nullptr)}};
  if (with_spec) {
    o["spec"] = j.spec;
    o["spec_yaml"] = j.spec_yaml;
  }
  return o;
}

nlohmann::json run_json(const store::RunRecord& r) {
  return {{"id", r.id},
          {"job_id", r.job_id},
          {"agent_id", r.agent_id},
          {"attempt", r.attempt},
          {"fencing_token", r.fencing_token},
          {"outcome", to_string(r.outcome)},
          {"stage", r.stage},
          {"started", time_or_null(r.started_ms)},
          {"finished", time_or_null(r.finished_ms)},
          {"lease_expires", time_or_null(r.lease_expires_ms)},
          {"verdict", r.verdict ? to_json(*r.verdict) : nlohmann::json(nullptr)},
          {"simulated", r.simulated},
          {"events_contiguous", r.events_contiguous},
          {"host", r.host},
          {"slot", r.slot},
          {"host_exclusive", r.host_exclusive}};
}

nlohmann::json agent_json(const store::AgentRecord& a) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : a.gpus) gpus.push_back(to_json(g));
  return {{"id", a.id},
          {"name", a.name},
          {"region", a.region},
          {"backend", a.backend},
          {"provider", a.provider},
          {"instance_id", a.instance_id},
          {"state", store::to_string(a.state)},
          {"current_run_id", a.current_run_id},
          {"host", a.host},
          {"slot", a.slot},
          {"gpus", gpus},
          {"enrolled", time_or_null(a.enrolled_ms)},
          {"last_seen", time_or_null(a.last_seen_ms)},
          {"simulated", a.simulated()},
          {"enrolled_by", a.enrol_token_id == 0
                              ? nlohmann::json{{"kind", "fleet_token"}}
                              : nlohmann::json{{"kind", "enrol_token"},
                                               {"enrol_token_id", a.enrol_token_id},
                                               {"name", a.enrol_token_name},
                                               {"minted_by", a.enrol_token_by}}},
          {"info", a.info}};
}

nlohmann::json block_json(const store::RegionBlock& b, TimeMs now) {
  return {{"provider", b.provider}, {"region", b.region},
          {"gpu_class", b.gpu_class}, {"kind", b.kind},
          {"reason", b.reason},     {"strikes", b.strikes},
          {"since", time_or_null(b.since_ms)}, {"until", time_or_null(b.until_ms)},
          {"seconds_left", b.until_ms > now ? (b.until_ms - now) / 1000.0 : 0.0}};
}

}  // namespace kfleet::api
