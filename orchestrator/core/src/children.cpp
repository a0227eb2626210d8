// A child submitted as parent + change (seed 001: one change at a time, on the current best).
// The server, not the client, decides what the change is and whether it may run: an agent
// that builds on a stale parent or repeats a change is told what to do instead.
#include <string>

#include "kfleet/core/control_plane.hpp"
#include "kfleet/core/fleet.hpp"
#include "kfleet/core/job_change.hpp"

namespace kfleet::core {

namespace {

SubmitError refuse(Errc c, std::string message, std::string code = "",
                   nlohmann::json details = nullptr) {
  return SubmitError{make_error(c, std::move(message)), {}, std::move(code), std::move(details)};
}

std::string job_words(const store::JobRecord& j) {
  return "job " + std::to_string(j.id) + " (" + j.name + ")";
}

// "rejected at correctness: ..." / "passed, improved -3.1%": what became of an earlier try.
std::string outcome_words(const store::JobRecord& j) {
  std::string s = to_string(j.state);
  if (!j.verdict) return s + (j.state_reason.empty() ? "" : ": " + j.state_reason);
  const auto& v = *j.verdict;
  if (!v.gate.empty() && j.state == JobState::rejected) s += " at " + v.gate;
  if (!v.perf.empty()) s += ", " + v.perf;
  if (v.delta_pct) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %+.1f%%", *v.delta_pct);
    s += buf;
  }
  // Its first line: a problem's kernel's reason ends with its comparison with PyTorch.
  if (!v.reason.empty()) s += ": " + v.reason.substr(0, v.reason.find('\n'));
  return s;
}

}  // namespace

std::variant<nlohmann::json, SubmitError> ControlPlane::child_change(
    const SubmitRequest& r, const JobSpec& spec, const Bundle& bundle,
    const std::string& content_hash) {
  const std::string pid = std::to_string(r.parent_job);
  auto parent = store_.get_job(r.parent_job);
  if (!parent)
    return refuse(Errc::not_found, "parent_job " + pid + " does not exist: read the campaign "
                                   "(kfleet_get_campaign, kfleet campaign NAME) for its current best");
  if (parent->campaign.empty())
    return refuse(Errc::invalid_argument,
                  job_words(*parent) + " names no campaign: a child builds on a job of a "
                  "campaign (submit a root job with campaign: NAME first)");
  if (spec.campaign != parent->campaign)
    return refuse(Errc::invalid_argument,
                  "the child names campaign '" + spec.campaign + "' but its parent " +
                      job_words(*parent) + " is in campaign '" + parent->campaign +
                      "': set campaign: " + parent->campaign);
  if (spec.parent != parent->name)
    return refuse(Errc::invalid_argument,
                  "the child's parent: is '" + spec.parent + "' but parent_job " + pid + " is '" +
                      parent->name + "': set parent: " + parent->name +
                      " so that compare_to: parent measures against it");
  if (!r.allow_non_best) {
    auto view = campaign_view(store_, parent->campaign);
    const nlohmann::json best = view ? (*view)["current_best"] : nlohmann::json();
    const std::int64_t best_id = best.is_object() ? best.value("job_id", std::int64_t{0}) : 0;
    if (best_id != parent->id) {
      std::string msg = job_words(*parent) + " is not the current best of campaign " +
                        parent->campaign + "; ";
      if (best_id == 0)
        msg += "the campaign has no current best yet (no root job has passed): wait for its "
               "root's verdict";
      else
        msg += "job " + std::to_string(best_id) + " (" + best.value("name", std::string()) +
               ") is: submit a child of job " + std::to_string(best_id);
      msg += ", or pass allow_non_best: true to branch from job " + pid + " on purpose";
      return refuse(Errc::conflict, msg, "not_current_best",
                    {{"parent_job", parent->id}, {"current_best", best}});
    }
  }
  auto stored = store_.get_bundle(parent->bundle_hash);
  if (!stored)
    return refuse(Errc::internal, "the sources of parent " + job_words(*parent) +
                                      " are not in the store; submit the child as a whole job");
  auto parent_bundle = bundle_from_json(nlohmann::json::parse(*stored, nullptr, false));
  if (!parent_bundle) return refuse(Errc::internal, parent_bundle.error().message);
  nlohmann::json change = job_change(parent->spec, *parent_bundle, to_json(spec), bundle);
  if (change_is_empty(change))
    return refuse(Errc::invalid_argument,
                  "the child is identical to its parent " + job_words(*parent) +
                      ": change one thing (a source file, a define or a flag)");
  if (!r.force) {
    if (auto prev = store_.find_job_by_content_hash(content_hash);
        prev && prev->state != JobState::error && prev->state != JobState::cancelled) {
      return refuse(Errc::conflict,
                    "this change was already tried: " + job_words(*prev) + " is the same job (" +
                        outcome_words(*prev) + "); pick a change that is not in the campaign's "
                        "no-repeat map (kfleet_get_campaign), or pass force: true to run it again",
                    "already_tried",
                    {{"job_id", prev->id}, {"name", prev->name}, {"state", to_string(prev->state)},
                     {"verdict", prev->verdict ? to_json(*prev->verdict) : nlohmann::json()}});
    }
  }
  change["parent_job_id"] = parent->id;
  change["parent_name"] = parent->name;
  return change;
}

}  // namespace kfleet::core
