// kfleet's MCP tools. Refusals come from kfleetd (so they hold for every client); a tool turns
// them into an error the agent can act on, with kfleetd's own words about what to do instead.
#include "tools.hpp"

#include "problems_view.hpp"

#include <cstdio>
#include <map>

#include "compose.hpp"
#include "kfleet/cli/submit_request.hpp"
#include "kfleet/cli/versus_view.hpp"
#include "kfleet/common/sha256.hpp"
#include "kfleet/common/versus.hpp"
#include "schemas.hpp"

namespace kfleet::cli::mcp {

namespace {

std::string path_segment(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') out += static_cast<char>(ch);
    else out += {'%', hex[ch >> 4], hex[ch & 15]};
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

const nlohmann::json& field(const nlohmann::json& j, const char* k) {
  static const nlohmann::json null;
  return j.is_object() && j.contains(k) ? j[k] : null;
}

std::string text(const nlohmann::json& j, const char* k) {
  const auto& v = field(j, k);
  return v.is_string() ? v.get<std::string>() : "";
}

bool terminal(const std::string& state) {
  return state == "passed" || state == "rejected" || state == "error" || state == "cancelled";
}

// "kfleetd refused: already_tried: ..." from an API error body.
std::string refusal(const ApiReply& r) {
  const auto& err = field(r.body, "error");
  std::string code = text(err, "code"), message = text(err, "message");
  if (message.empty()) message = "kfleetd answered HTTP " + std::to_string(r.status);
  for (const auto& d : field(err, "details").is_array() ? err["details"] : nlohmann::json::array())
    if (d.is_object() && d.contains("message"))
      message += "\n  " + text(d, "field") + (text(d, "field").empty() ? "" : ": ") + text(d, "message");
  return "kfleetd refused (" + (code.empty() ? std::to_string(r.status) : code) + "): " + message;
}

Result<std::int64_t> int_arg(const nlohmann::json& args, const char* name) {
  const auto& v = field(args, name);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
    return make_error(Errc::invalid_argument, std::string(name) + " must be a positive integer");
  return v.get<std::int64_t>();
}

// Every event of a job's runs, oldest run first (a compile agent's run holds the resources).
Result<std::vector<nlohmann::json>> job_run_events(Session& s, const nlohmann::json& runs) {
  std::vector<nlohmann::json> events;
  for (const auto& run : runs) {
    const std::string base = "/api/v1/runs/" + std::to_string(run.value("id", 0)) + "/events";
    for (std::int64_t after = 0;;) {
      auto e = s.get(base + "?limit=1000&after=" + std::to_string(after));
      if (!e) return e.error();
      const auto& page = field(e->body, "events");
      if (!page.is_array()) break;
      for (const auto& ev : page) events.push_back(ev);
      if (page.size() < 1000) break;
      after = page.back().value("seq", after + 1000);
    }
  }
  return events;
}

Result<nlohmann::json> verdict_view(Session& s, std::int64_t job_id) {
  auto r = s.get("/api/v1/jobs/" + std::to_string(job_id));
  if (!r) return r.error();
  const auto job = field(r->body, "job");
  const auto runs = field(r->body, "runs").is_array() ? r->body["runs"] : nlohmann::json::array();
  auto events = job_run_events(s, runs);
  if (!events) return events.error();
  const std::string state = text(job, "state");
  const auto& change = field(job, "change");
  nlohmann::json run_ids = nlohmann::json::array();
  for (const auto& run : runs) run_ids.push_back(run.value("id", 0));
  nlohmann::json out = {{"job_id", job_id},
                        {"name", text(job, "name")},
                        {"campaign", text(job, "campaign")},
                        {"state", state},
                        {"state_reason", text(job, "state_reason")},
                        {"finished", terminal(state)},
                        {"parent_job_id", change.is_object() ? change.value("parent_job_id", nlohmann::json())
                                                             : nlohmann::json()},
                        {"change_summary", change.is_object() ? text(change, "summary") : ""},
                        {"change", change},
                        {"verdict", field(job, "verdict")},
                        {"run_ids", run_ids},
                        {"dashboard_url", dashboard_url(s.server_in_use(), job_id)}};
  auto g = gates_from_events(job, *events);
  out["gates"] = g["gates"];
  out["marks"] = g["marks"];
  for (const auto& run : runs)
    if (run.value("simulated", false)) out["marks"]["simulated"] = true;
  return out;
}

ToolResult submit_child(Session& s, const nlohmann::json& args) {
  const std::string campaign = text(args, "campaign");
  if (campaign.empty()) return tool_error("campaign is required (the job YAML's campaign:)");
  const bool has_change = args.contains("change"), has_job = args.contains("job");
  if (has_change == has_job)
    return tool_error("give either change (ONE change to the parent: files, defines_set, "
                      "defines_removed, flags_added, flags_removed) or job (a whole job: yaml and files)");
  // The parent: as asked, else the campaign's current best.
  std::int64_t parent_id = 0;
  if (args.contains("parent_job")) {
    auto p = int_arg(args, "parent_job");
    if (!p) return tool_error(p.error().message);
    parent_id = *p;
  } else {
    auto c = s.get("/api/v1/campaigns/" + path_segment(campaign));
    if (!c) return tool_error(c.error().message + " (a campaign starts with a root job submitted with "
                                                  "`kfleet submit`, campaign: " + campaign + ")");
    const auto& best = field(c->body["campaign"], "current_best");
    if (!best.is_object())
      return tool_error("campaign " + campaign + " has no current best yet (no root job has passed): "
                        "wait for its root's verdict (kfleet_wait_verdict), then submit");
    parent_id = best.value("job_id", std::int64_t{0});
  }
  auto parent = s.get("/api/v1/jobs/" + std::to_string(parent_id));
  if (!parent) return tool_error("parent job " + std::to_string(parent_id) + ": " + parent.error().message);
  const auto& pj = parent->body["job"];
  if (text(pj, "campaign") != campaign)
    return tool_error("job " + std::to_string(parent_id) + " is in campaign '" + text(pj, "campaign") +
                      "', not '" + campaign + "'");

  std::string yaml;
  Bundle bundle;
  if (has_change) {
    auto change = parse_change(args["change"]);
    if (!change) return tool_error(change.error().message);
    auto stored = s.get("/api/v1/bundles/" + text(pj, "bundle_hash"));
    if (!stored) return tool_error("the parent's sources: " + stored.error().message);
    auto parent_bundle = bundle_from_json(stored->body);
    if (!parent_bundle) return tool_error("the parent's sources: " + parent_bundle.error().message);
    std::string name = text(args, "name");
    if (name.empty())
      name = campaign + "/from-" + std::to_string(parent_id) + "-" +
             sha256_hex(args["change"].dump()).substr(0, 8);
    auto child = compose_child(text(pj, "spec_yaml"), *parent_bundle, name, text(pj, "name"), *change);
    if (!child) return tool_error(child.error().message);
    yaml = std::move(child->yaml);
    bundle = std::move(child->bundle);
  } else {
    const auto& job = args["job"];
    if (!job.is_object() || !job.contains("yaml") || !job["yaml"].is_string())
      return tool_error("job.yaml (the job YAML as text) is required");
    yaml = job["yaml"].get<std::string>();
    auto b = bundle_from_files(job.value("files", nlohmann::json()));
    if (!b) return tool_error("job.files: " + b.error().message);
    bundle = std::move(*b);
    if (args.contains("name")) return tool_error("name: set name: in job.yaml instead");
  }
  nlohmann::json body = submit_body(yaml, "mcp-child.yaml", bundle, args.value("force", false));
  body["parent_job"] = parent_id;
  body["allow_non_best"] = args.value("allow_non_best", false);
  auto reply = s.post_any("/api/v1/jobs", body);
  if (!reply) return tool_error(reply.error().message);
  if (reply->status < 200 || reply->status >= 300) return tool_error(refusal(*reply));
  const auto& job = field(reply->body, "job");
  const auto& change = field(job, "change");
  const std::int64_t id = job.value("id", std::int64_t{0});
  nlohmann::json out = {{"job_id", id},
                        {"name", text(job, "name")},
                        {"campaign", text(job, "campaign")},
                        {"parent_job_id", parent_id},
                        {"state", text(job, "state")},
                        {"change_summary", change.is_object() ? text(change, "summary") : ""},
                        {"change", change},
                        {"duplicate_of", field(reply->body, "duplicate_of")},
                        {"dashboard_url", dashboard_url(s.server_in_use(), id)}};
  return {out, ""};
}

// queue 0, leased 1, building 2, gating 3, benchmarking 4, finished 5.
int stage_index(const std::string& state) {
  static const std::map<std::string, int> idx = {{"queued", 0},   {"waiting_capacity", 0},
                                                 {"leased", 1},   {"building", 2},
                                                 {"gating", 3},   {"benchmarking", 4}};
  auto it = idx.find(state);
  return it != idx.end() ? it->second : 5;
}

ToolResult wait_verdict(Session& s, const nlohmann::json& args, Call& call) {
  auto id = int_arg(args, "job_id");
  if (!id) return tool_error(id.error().message);
  double timeout_s = 600;
  if (args.contains("timeout_s")) {
    if (!args["timeout_s"].is_number() || args["timeout_s"].get<double>() < 1 ||
        args["timeout_s"].get<double>() > 3600)
      return tool_error("timeout_s must be a number of seconds from 1 to 3600");
    timeout_s = args["timeout_s"].get<double>();
  }
  const TimeMs deadline = s.now() + static_cast<TimeMs>(timeout_s * 1000);
  std::string last;
  double progress = -1;
  int delay_ms = 200;
  for (;;) {
    auto r = s.get("/api/v1/jobs/" + std::to_string(*id));
    if (!r) return tool_error(r.error().message);
    const auto& job = r->body["job"];
    const std::string state = text(job, "state");
    std::string stage;
    for (const auto& run : field(r->body, "runs").is_array() ? r->body["runs"] : nlohmann::json::array())
      if (text(run, "outcome") == "running") stage = text(run, "stage");
    std::string message = "job " + std::to_string(*id) + ": " + state;
    if (!stage.empty() && !terminal(state)) message += " (stage " + stage + ")";
    if (!text(job, "state_reason").empty() && !terminal(state)) message += ": " + text(job, "state_reason");
    if (message != last) {
      // Progress only ever grows (the protocol requires it), even when a lost agent's job is
      // queued again: the message says where it is.
      progress = std::max<double>(stage_index(state), progress + 0.01);
      call.progress(progress, 5.0, message);
      last = message;
    }
    if (terminal(state)) break;
    if (s.now() >= deadline) {
      auto v = verdict_view(s, *id);
      if (!v) return tool_error(v.error().message);
      return {*v, ""};  // finished: false tells the agent to wait again
    }
    if (!call.wait(delay_ms)) return tool_error("cancelled");
    delay_ms = std::min(delay_ms * 2, 1000);
  }
  auto v = verdict_view(s, *id);
  if (!v) return tool_error(v.error().message);
  return {*v, ""};
}

ToolResult read_campaign(Session& s, const nlohmann::json& args) {
  const std::string name = text(args, "name");
  if (name.empty()) return tool_error("name (the campaign) is required");
  auto r = s.get("/api/v1/campaigns/" + path_segment(name));
  if (!r) return tool_error(r.error().message);
  nlohmann::json c = r->body["campaign"];
  c["log_markdown"] = campaign_log_markdown(c);
  return {c, ""};
}

ToolResult read_fleet(Session& s) {
  auto a = s.get("/api/v1/agents");
  if (!a) return tool_error(a.error().message);
  auto pending = s.get("/api/v1/jobs?limit=1000&state=queued,waiting_capacity");
  if (!pending) return tool_error(pending.error().message);
  auto running = s.get("/api/v1/jobs?limit=1000&state=leased,building,gating,benchmarking");
  if (!running) return tool_error(running.error().message);

  std::map<std::string, nlohmann::json> classes;
  nlohmann::json agents = {{"total", 0}, {"idle", 0}, {"busy", 0}, {"lost", 0}, {"retired", 0}};
  for (const auto& ag : field(a->body, "agents")) {
    const std::string st = text(ag, "state");
    agents["total"] = agents["total"].get<int>() + 1;
    if (agents.contains(st)) agents[st] = agents[st].get<int>() + 1;
    if (st == "retired") continue;
    for (const auto& g : field(ag, "gpus")) {
      const std::string cls = text(g, "gpu_class");
      auto& c = classes[cls];
      if (c.is_null())
        c = {{"gpu_class", cls}, {"arch", text(g, "arch")}, {"agents", 0}, {"idle", 0},
             {"busy", 0},        {"lost", 0},               {"simulated", ag.value("simulated", false)}};
      c["agents"] = c["agents"].get<int>() + 1;
      if (c.contains(st)) c[st] = c[st].get<int>() + 1;
      break;  // an agent runs one job at a time, whatever its GPU count
    }
  }
  nlohmann::json gpu_classes = nlohmann::json::array();
  for (auto& [_, c] : classes) gpu_classes.push_back(c);
  nlohmann::json by_gpu = nlohmann::json::object();
  int queued = 0, waiting = 0;
  for (const auto& j : field(pending->body, "jobs")) {
    (text(j, "state") == "waiting_capacity" ? waiting : queued)++;
    by_gpu[text(j, "gpu")] = by_gpu.value(text(j, "gpu"), 0) + 1;
  }
  const int n_running = static_cast<int>(field(running->body, "jobs").size());
  nlohmann::json stockouts = field(a->body, "blocks").is_array() ? a->body["blocks"] : nlohmann::json::array();
  const auto& stopped = field(a->body, "provisioning_stopped");
  std::string summary = std::to_string(agents["idle"].get<int>()) + " idle and " +
                        std::to_string(agents["busy"].get<int>()) + " busy agents; " +
                        std::to_string(queued + waiting) + " jobs waiting (" +
                        std::to_string(waiting) + " for capacity), " + std::to_string(n_running) +
                        " running; " + std::to_string(stockouts.size()) + " regions blocked";
  if (stopped.is_string()) summary += "; provisioning stopped: " + stopped.get<std::string>();
  nlohmann::json out = {{"gpu_classes", gpu_classes},
                        {"agents", agents},
                        {"queue", {{"queued", queued}, {"waiting_capacity", waiting},
                                   {"running", n_running}, {"by_gpu", by_gpu}}},
                        {"stockouts", stockouts},
                        {"provisioning_stopped", stopped.is_string() ? stopped : nlohmann::json()},
                        {"summary", summary}};
  return {out, ""};
}

}  // namespace

nlohmann::json gates_from_events(const nlohmann::json& job, const std::vector<nlohmann::json>& events) {
  nlohmann::json resources, bench, rows = nlohmann::json::array();
  std::map<std::string, bool> stage_ok;
  bool simulated = job.value("simulated", false);
  for (const auto& e : events) {
    const std::string t = text(e, "type");
    const auto& d = field(e, "data");
    if (e.value("simulated", false) || (d.is_object() && d.value("simulated", false))) simulated = true;
    if (t == "resources") resources = d;
    else if (t == "correctness") rows.push_back(d);
    else if (t == "bench.result") bench = d;
    else if (t == "stage.finished" && d.is_object()) stage_ok[text(d, "stage")] = d.value("ok", false);
  }
  const auto& v = field(job, "verdict");
  const std::string rejected_at = text(job, "state") == "rejected" ? text(v, "gate") : "";
  auto ok_of = [&](const std::string& stage, const std::string& gate) -> nlohmann::json {
    if (rejected_at == gate) return false;
    auto it = stage_ok.find(stage);
    return it == stage_ok.end() ? nlohmann::json() : nlohmann::json(it->second);
  };
  nlohmann::json gates;
  gates["resources"] = resources.is_object()
                           ? nlohmann::json{{"ok", ok_of("resources", "resources")},
                                            {"kernels", resources.value("kernels", nlohmann::json::array())},
                                            {"violations", resources.value("violations", nlohmann::json::array())}}
                           : nlohmann::json();
  if (!rows.empty()) {
    int passed = 0;
    for (const auto& r : rows) passed += r.value("ok", false) ? 1 : 0;
    gates["correctness"] = {{"ok", ok_of("correctness", "correctness")},
                            {"passed", passed},
                            {"checked", rows.size()},
                            {"cases", rows}};
  } else {
    gates["correctness"] = nullptr;
  }
  // How the benchmark was timed: the agent says so in its bench result and the verdict's metrics
  // ("replay": the job's code never ran in the measuring process; "in_process": it did).
  std::string mode = text(bench, "timing_mode");
  if (mode.empty()) mode = text(field(field(job, "verdict"), "metrics"), "timing_mode");
  if (bench.is_object()) {
    auto num = [&](const char* k) { return field(bench, k).is_number() ? bench[k] : nlohmann::json(); };
    nlohmann::json noise = num("noise_pct");
    if (noise.is_null()) noise = num("rel_stdev_pct");
    gates["benchmark"] = {{"ok", ok_of("benchmark", "performance")},
                          {"case", text(bench, "case")},
                          {"median_us", num("median_us")},
                          {"samples", field(bench, "n").is_number_integer() ? bench["n"] : nlohmann::json()},
                          {"ci_low_pct", num("ci_low_pct")},
                          {"ci_high_pct", num("ci_high_pct")},
                          {"noise_pct", noise},
                          {"timing_mode", text(bench, "timing").empty() ? "default" : text(bench, "timing")},
                          {"baseline_us", num("baseline_us")},
                          {"delta_pct", num("delta_pct")},
                          {"perf", text(bench, "perf")}};
    // A problem's kernel against kfleet's PyTorch references, as the verdict has it.
    const auto& versus = field(field(job, "verdict"), "versus");
    if (versus.is_array()) gates["benchmark"]["versus"] = versus;
    else if (field(bench, "versus").is_array()) gates["benchmark"]["versus"] = bench["versus"];
  } else {
    gates["benchmark"] = nullptr;
  }
  if (v.is_object() && v.value("simulated", false)) simulated = true;
  const std::string family = text(field(field(job, "spec"), "kernel"), "family");
  const auto& self = field(bench, "self_reported");
  nlohmann::json marks = {{"simulated", simulated},
                          {"self_reported", self.is_boolean() ? self.get<bool>() : family == "custom"},
                          {"in_process", mode.empty() ? nlohmann::json() : nlohmann::json(mode == "in_process")}};
  return {{"gates", gates}, {"marks", marks}};
}

std::string campaign_log_markdown(const nlohmann::json& c) {
  auto line = [](const nlohmann::json& e) {
    std::string s = text(e, "name") + " (job " + std::to_string(e.value("job_id", 0)) + ")";
    const std::string change = e.contains("change_summary") ? text(e, "change_summary") : text(e, "change");
    if (!change.empty()) s += ": " + change;
    if (field(e, "median_us").is_number()) s += " -> " + fmt("%.2f us", e["median_us"].get<double>());
    if (field(e, "delta_pct").is_number()) s += ", " + fmt("%+.1f%%", e["delta_pct"].get<double>());
    if (field(e, "versus").is_array()) s += "; " + versus_line(e["versus"]);
    if (e.value("simulated", false)) s += " [simulated]";
    return s;
  };
  auto list = [&](const char* k) {
    return field(c, k).is_array() ? c[k] : nlohmann::json::array();
  };
  std::string out = "# " + text(c, "name") + " log\n\n## Snapshot\nCurrent baseline: ";
  out += field(c, "current_best").is_object() ? line(c["current_best"]) : std::string("none yet");
  out += "\n\n## High-Signal Kept Wins\n";
  if (list("kept_wins").empty()) out += "(none)\n";
  for (const auto& e : list("kept_wins")) out += "- " + line(e) + ": KEEP\n";
  out += "\n## Important Rejections (Do Not Re-Run Without New Preconditions)\n";
  if (list("rejections").empty()) out += "(none)\n";
  for (const auto& e : list("rejections"))
    out += "- " + line(e) + ": REJECT (" + first_line(text(e, "reason")) + ")\n";
  out += "\n## No-Repeat Map\nAlready tried from the current best; do not retry without a clearly "
         "different precondition:\n";
  if (list("no_repeat").empty()) out += "(nothing yet)\n";
  for (const auto& e : list("no_repeat")) out += "- " + line(e) + ": " + text(e, "state") + "\n";
  if (!list("pending").empty()) {
    out += "\n## Pending\n";
    for (const auto& e : list("pending")) out += "- " + line(e) + ": " + text(e, "state") + "\n";
  }
  if (const std::string fp = fast_p_text(field(c, "fast_p")); !fp.empty())
    out += "\n## Against PyTorch (fast_p)\n" + fp;
  return out;
}

std::vector<Tool> kfleet_tools(Session& s) {
  std::vector<Tool> tools;
  tools.push_back(
      {"kfleet_submit_child", "Submit a child of a campaign's current best",
       "Submit ONE change to a kernel for a verdict (correctness first, then a benchmark against "
       "its parent). Give `change` (replaced source files, defines set or removed, flags added or "
       "removed) to build on the parent; or `job` for a whole job YAML. The parent is the "
       "campaign's current best unless parent_job says otherwise. kfleetd refuses a change "
       "already tried (force: true runs it anyway), a parent that is not the current best "
       "(allow_non_best: true builds on it anyway) and more jobs in flight than the token may have; "
       "the error says what to do instead. Then call kfleet_wait_verdict with the job_id.",
       schema::submit_input(), schema::submit_output(),
       {{"readOnlyHint", false}, {"destructiveHint", false}, {"idempotentHint", false},
        {"openWorldHint", false}},
       [&s](const nlohmann::json& a, Call&) { return submit_child(s, a); }});
  tools.push_back(
      {"kfleet_wait_verdict", "Wait for a job's verdict",
       "Wait until the job has a verdict, reporting progress (queue, build, gates, benchmark) as "
       "notifications when the call carries a progressToken; returns the verdict with each "
       "gate's data, as kfleet_get_verdict does. finished: false means timeout_s passed first "
       "(the job goes on: wait again). A slow answer may mean a busy fleet: kfleet_get_fleet says.",
       schema::job_input(true), schema::verdict_output(),
       {{"readOnlyHint", true}, {"openWorldHint", false}},
       [&s](const nlohmann::json& a, Call& c) { return wait_verdict(s, a, c); }});
  tools.push_back(
      {"kfleet_get_verdict", "Read a job's verdict with each gate's data",
       "The job's state and verdict, its change against its parent, and each gate's data: "
       "resources (registers, shared memory, spills per kernel), correctness per case and seed, "
       "the benchmark's median, 95% CI, noise and timing mode, and for a problem's kernel its "
       "speedup over kfleet's PyTorch references (eager, torch.compile) with its interval; marks "
       "say whether the numbers are simulated, self-reported by the job's own scripts, or timed "
       "in-process.",
       schema::job_input(false), schema::verdict_output(),
       {{"readOnlyHint", true}, {"openWorldHint", false}},
       [&s](const nlohmann::json& a, Call&) -> ToolResult {
         auto id = int_arg(a, "job_id");
         if (!id) return tool_error(id.error().message);
         auto v = verdict_view(s, *id);
         if (!v) return tool_error(v.error().message);
         return {*v, ""};
       }});
  tools.push_back(
      {"kfleet_get_campaign", "Read a campaign: current best, kept wins, rejections, no-repeat map",
       "The campaign as seed 002 keeps its log: the current best, the kept wins, the rejections "
       "with their reasons, and the no-repeat map (every change already tried from the current "
       "best, with its delta), and fast_p against kfleet's PyTorch references. Read it before "
       "choosing the next change, and do not repeat one.",
       schema::campaign_input(), schema::campaign_output(),
       {{"readOnlyHint", true}, {"openWorldHint", false}},
       [&s](const nlohmann::json& a, Call&) { return read_campaign(s, a); }});
  tools.push_back(
      {"kfleet_get_fleet", "Read the fleet: GPU classes, idle agents, queue, stockouts",
       "GPU classes with their agents (idle, busy, lost), the queue depth (queued, waiting for "
       "capacity, running) and the regions blocked by stockouts or quota, so a slow verdict can "
       "be told from a busy or short fleet.",
       schema::fleet_input(), schema::fleet_output(),
       {{"readOnlyHint", true}, {"openWorldHint", false}},
       [&s](const nlohmann::json&, Call&) { return read_fleet(s); }});
  for (auto& t : problem_tools(s.io().env)) tools.push_back(std::move(t));
  return tools;
}

std::vector<Tool> problem_tools(EnvLookup env) {
  std::vector<Tool> tools;
  tools.push_back(
      {"kfleet_list_problems", "List the problem library",
       "The problems a kernel can be written for (kernels/problems): name, version, ABI, summary "
       "and cases. A job names one as kernel.problem: NAME@VERSION; kfleet_get_problem gives its "
       "contract and a starter kernel.",
       schema::problems_input(), schema::problems_output(),
       {{"readOnlyHint", true}, {"openWorldHint", false}},
       [env](const nlohmann::json&, Call&) -> ToolResult {
         const ProblemLibrary lib = load_problem_library(problems_dir(env, ""));
         nlohmann::json list = nlohmann::json::array(), issues = nlohmann::json::array();
         for (const auto& p : lib.problems) list.push_back(problem_summary_json(p));
         for (const auto& i : lib.issues) issues.push_back(i.to_string());
         if (lib.problems.empty())
           return tool_error("no problem library at " + lib.root +
                             (lib.issues.empty() ? "" : ": " + lib.issues.front().to_string()));
         return {{{"library", lib.root}, {"problems", list}, {"issues", issues}}, ""};
       }});
  tools.push_back(
      {"kfleet_get_problem", "Read one problem's contract and a starter kernel",
       "A problem's contract: the ABI slots (args->tensors[i] with role, dtype and shape over the "
       "named dims), dims and scalars in args order, each output's check and the do-nothing "
       "outputs it must reject, the cases with their dims, how a job names it, and a starter "
       "kernel (kfleet_problem_launch) to begin from. Write the kernel, then submit a job with "
       "kernel.problem set to `ref` and gates.correctness.cases naming the problem's cases.",
       schema::problem_input(), schema::problem_output(),
       {{"readOnlyHint", true}, {"openWorldHint", false}},
       [env](const nlohmann::json& a, Call&) -> ToolResult {
         if (!a.is_object() || !a.contains("name") || !a["name"].is_string())
           return tool_error("name: give the problem's name, e.g. rmsnorm (kfleet_list_problems lists them)");
         const std::string name = a["name"].get<std::string>();
         const ProblemLibrary lib = load_problem_library(problems_dir(env, ""));
         const ProblemDef* p = lib.find(name);
         if (!p) {
           std::string have;
           for (const auto& q : lib.problems) have += (have.empty() ? "" : ", ") + q.name;
           return tool_error("no problem '" + name + "' in " + lib.root + "; it has " +
                             (have.empty() ? std::string("none") : have));
         }
         nlohmann::json j = problem_contract_json(*p);
         j["contract"] = render_problem_contract(*p);
         j["starter"] = render_problem_starter(*p);
         return {j, ""};
       }});
  return tools;
}

}  // namespace kfleet::cli::mcp
