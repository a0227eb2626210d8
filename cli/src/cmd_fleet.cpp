// Fleet-level commands: `kfleet regress`, `kfleet baseline`, `kfleet campaign`, `kfleet report`.
#include <chrono>
#include <fstream>
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "fleet_reports.hpp"
#include "kfleet/cli/exit_code.hpp"
#include "kfleet/cli_support/parse.hpp"
#include "kfleet/common/suite.hpp"

namespace kfleet::cli {

namespace {

struct RegressOptions {
  std::vector<std::string> args;  // SUITE.yaml | show ID
  std::string markdown, json_file;
  int timeout_s = 3600;
  bool no_wait = false;
};

// A mistake in the words a command takes in place of subcommands (regress show, baseline set and
// list, campaign show): one line, as a mistake CLI11 finds (cli_support), then the help hint.
int word_mistake(Session& s, const std::string& command, const std::string& line) {
  s.io().err << "kfleet " << command << ": " << line << "\n"
             << cli_support::help_hint("kfleet " + command) << "\n";
  return exit_usage;
}

std::string unknown_word(const std::string& word, const std::vector<std::string>& words) {
  return "unknown command '" + word + "'" + cli_support::did_you_mean(word, words);
}

bool write_out(Session& s, const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) {
    s.io().err << "kfleet: cannot write " << path << ": check the folder exists and is writable\n";
    return false;
  }
  return true;
}

int show_regression(Session& s, const RegressOptions& o, const nlohmann::json& reg) {
  if (s.json()) s.io().out << reg.dump(2) << "\n";
  else s.io().out << render_regression_text(reg);
  if (!o.markdown.empty() && !write_out(s, o.markdown, render_regression_markdown(reg))) return exit_usage;
  if (!o.json_file.empty() && !write_out(s, o.json_file, nlohmann::json{{"regression", reg}}.dump(2) + "\n"))
    return exit_usage;
  if (regression_has_regressed(reg)) return exit_rejected;
  for (const auto& c : reg.value("cells", nlohmann::json::array()))
    if (c.value("verdict", "") == "error") return exit_error;
  return exit_passed;
}

int run_regress(Session& s, const RegressOptions& o) {
  std::int64_t id = 0;
  if (o.args.size() == 2 && o.args[0] == "show") {
    try {
      id = std::stoll(o.args[1]);
    } catch (...) {
      return word_mistake(s, "regress", "show needs a regression run id, not '" + o.args[1] + "'");
    }
  } else if (o.args.size() == 1 && o.args[0] == "show") {
    return word_mistake(s, "regress", "missing ID: kfleet regress show ID");
  } else if (o.args.size() == 1) {
    auto req = load_suite_request(o.args[0]);
    if (!req) {
      s.io().err << "kfleet: " << req.error().message << (req.error().message.back() == '\n' ? "" : "\n");
      return exit_usage;
    }
    auto reply = s.post("/api/v1/regressions", *req);
    if (!reply) return s.fail(reply.error(), o.args[0]);
    id = reply->body["regression"].value("id", 0);
    if (!s.json())
      s.io().out << "started regression run " << id << " (" << reply->body["regression"]["cells"].size()
                 << " jobs)\n";
  } else if (!cli_support::nearest_names(o.args[0], {"show"}).empty()) {
    return word_mistake(s, "regress", unknown_word(o.args[0], {"show"}));
  } else {  // two words, not show ID: one suite at a time
    return word_mistake(s, "regress", "unexpected argument '" + o.args[1] + "'");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_s);
  int delay = 200;
  for (;;) {
    auto reply = s.get("/api/v1/regressions/" + std::to_string(id));
    if (!reply) return s.fail(reply.error(), "regression run " + std::to_string(id));
    const auto& reg = reply->body["regression"];
    const bool showing = o.args.size() == 2;
    if (reg.value("state", "") == "done" || showing || o.no_wait) return show_regression(s, o, reg);
    if (std::chrono::steady_clock::now() > deadline) {
      s.io().err << "kfleet: regression run " << id << " still running after " << o.timeout_s
                 << " s; see kfleet regress show " << id << "\n";
      return exit_error;
    }
    s.backoff(delay);
  }
}

}  // namespace

Command add_regress_command(CLI::App& app) {
  auto o = std::make_shared<RegressOptions>();
  auto* sub = app.add_subcommand("regress", "run a suite on every GPU class and compare with baselines");
  sub->add_option("args", o->args, "SUITE.yaml, or: show ID")->required()->expected(1, 2);
  sub->add_option("--markdown", o->markdown, "write the report as Markdown to this file");
  sub->add_option("--json", o->json_file, "write the regression run's JSON to this file");
  sub->add_option("--timeout-s", o->timeout_s, "stop waiting after this many seconds");
  sub->add_flag("--no-wait", o->no_wait, "print the matrix as it is now");
  sub->footer(R"(Exit status: 0 nothing regressed, 1 a cell regressed, 3 a cell ended in error.
Examples:
  kfleet regress jobs/suites/nightly.yaml --markdown nightly.md --json nightly.json
  kfleet regress show 12)");
  return {sub, [o](Session& s) { return run_regress(s, *o); }};
}

Command add_baseline_command(CLI::App& app) {
  auto args = std::make_shared<std::vector<std::string>>();
  auto reason = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("baseline", "set or list baselines per kernel, case and GPU class");
  sub->add_option("args", *args, "set RUN | list [KERNEL]")->required()->expected(1, 2);
  sub->add_option("--reason", *reason, "why this run is the baseline (kept in the history)");
  sub->footer(R"(The kernel of a job is its campaign if it has one, else its name.
Examples:
  kfleet baseline set 42 --reason "stage-2 accepted"
  kfleet baseline list fp8-sdpa-stage3)");
  return {sub, [args, reason](Session& s) {
    const auto& a = *args;
    if (a[0] == "set" && a.size() == 2) {
      nlohmann::json body = {{"run_id", std::atoll(a[1].c_str())}};
      if (!reason->empty()) body["reason"] = *reason;
      auto r = s.post("/api/v1/baselines", body);
      if (!r) return s.fail(r.error(), "run " + a[1]);
      const auto& b = r->body["baseline"];
      if (s.json()) s.io().out << r->body.dump(2) << "\n";
      else
        s.io().out << "baseline of " << b.value("kernel", "") << " case " << b.value("case", "")
                   << " on " << b.value("gpu_class", "") << " is now run " << b.value("run_id", 0)
                   << " (" << b.value("median_us", 0.0) << " µs"
                   << (b.value("simulated", false) ? ", simulated" : "")
                   << (b.value("set_by", "").empty() ? "" : ", set by " + b.value("set_by", ""))
                   << ")\n";
      return 0;
    }
    if (a[0] == "list") {
      auto r = s.get("/api/v1/baselines?history=1" + (a.size() == 2 ? "&kernel=" + a[1] : std::string()));
      if (!r) return s.fail(r.error());
      if (s.json()) {
        s.io().out << r->body.dump(2) << "\n";
        return 0;
      }
      for (const auto& b : r->body["baselines"])
        s.io().out << (b.value("superseded", false) ? "  (old) " : "current ") << b.value("kernel", "")
                   << " / " << b.value("case", "") << " / " << b.value("gpu_class", "") << ": run "
                   << b.value("run_id", 0) << ", " << b.value("median_us", 0.0) << " µs, set "
                   << b.value("set_at", "")
                   << (b.value("set_by", "").empty() ? "" : " by " + b.value("set_by", ""))
                   << " (" << b.value("reason", "") << ")"
                   << (b.value("simulated", false) ? " [simulated]" : "") << "\n";
      return 0;
    }
    if (a[0] == "set") return word_mistake(s, "baseline", "missing RUN: kfleet baseline set RUN");
    return word_mistake(s, "baseline", unknown_word(a[0], {"set", "list"}));
  }};
}

Command add_campaign_command(CLI::App& app) {
  auto args = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand("campaign", "a campaign's kept wins, rejections and current best");
  sub->add_option("args", *args, "show NAME")->required()->expected(2, 2);
  return {sub, [args](Session& s) {
    if ((*args)[0] != "show") return word_mistake(s, "campaign", unknown_word((*args)[0], {"show"}));
    auto r = s.get("/api/v1/campaigns/" + (*args)[1]);
    if (!r) return s.fail(r.error(), "campaign " + (*args)[1]);
    if (s.json()) s.io().out << r->body.dump(2) << "\n";
    else s.io().out << render_campaign(r->body["campaign"]);
    return 0;
  }};
}

Command add_report_command(CLI::App& app) {
  auto run = std::make_shared<std::int64_t>(0);
  auto file = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("report", "a Markdown report of one run: verdict, each gate's data");
  sub->add_option("run", *run, "run id (kfleet results, kfleet status JOB)")->required();
  sub->add_option("-o,--output", *file, "write it to this file instead of stdout");
  return {sub, [run, file](Session& s) {
    const std::string base = "/api/v1/runs/" + std::to_string(*run);
    auto r = s.get(base);
    if (!r) return s.fail(r.error(), "run " + std::to_string(*run));
    std::vector<nlohmann::json> events;
    for (std::int64_t after = 0;;) {
      auto e = s.get(base + "/events?limit=1000&after=" + std::to_string(after));
      if (!e) return s.fail(e.error(), "run " + std::to_string(*run));
      const auto& page = e->body["events"];
      for (const auto& ev : page) events.push_back(ev);
      if (page.size() < 1000) break;
      after = page.back().value("seq", after + 1000);
    }
    // The change a child was submitted with lives on its job (GET /api/v1/jobs/ID).
    nlohmann::json reply = r->body;
    if (auto id = reply["job"].value("id", std::int64_t{0}); id > 0) {
      auto j = s.get("/api/v1/jobs/" + std::to_string(id));
      if (!j) return s.fail(j.error(), "job " + std::to_string(id));
      reply["job"]["change"] = j->body["job"].value("change", nlohmann::json());
    }
    const std::string md = render_run_report(reply, events);
    if (file->empty()) s.io().out << md;
    else if (!write_out(s, *file, md)) return static_cast<int>(exit_usage);
    return 0;
  }};
}

}  // namespace kfleet::cli
