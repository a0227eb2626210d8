// `kfleet enrol-token mint|list|revoke`: limited enrolment tokens (an admin's job). Each lets
// agents in a limited number of times, until an expiry, and, bound to an instance id, only the
// agent of that instance; the fleet's long-lived enrolment token keeps working beside them.
// A new token is shown once; kfleetd keeps only its SHA-256.
#include <cctype>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "kfleet/cli/exit_code.hpp"
#include "new_secret.hpp"

namespace kfleet::cli {

namespace {

struct EnrolTokenArgs {
  std::string name, instance_id, expires_in = "24h", out_file;
  int uses = 1;
  std::int64_t id = 0;
  bool all = false;
};

// "90s", "30m", "24h", "7d" (or a bare number of seconds); "never" or "0": no expiry.
std::optional<std::int64_t> seconds_of(const std::string& v) {
  if (v == "never" || v == "0") return 0;
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0]))) return std::nullopt;
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (...) {
    return std::nullopt;
  }
  const std::string unit = v.substr(used);
  if (unit.empty() || unit == "s") return n;
  if (unit == "m") return n * 60;
  if (unit == "h") return n * 3600;
  if (unit == "d") return n * 86400;
  return std::nullopt;
}

std::string describe(const nlohmann::json& t) {
  std::string uses = t.value("uses", 0) == 0 ? "any number of" : std::to_string(t.value("uses", 0));
  std::string out = "enrolment token " + std::to_string(t.value("id", 0)) + " '" +
                    str_field(t, "name") + "': " + uses + " enrolment(s)";
  const std::string exp = str_field(t, "expires");
  out += exp.empty() ? ", no expiry" : ", expires " + exp;
  const std::string inst = str_field(t, "instance_id");
  if (!inst.empty()) out += ", only for instance " + inst;
  return out;
}

}  // namespace

Command add_enrol_token_command(CLI::App& app) {
  auto a = std::make_shared<EnrolTokenArgs>();
  auto* sub = app.add_subcommand(
      "enrol-token", "limited enrolment tokens for agents: mint, list, revoke (needs scope admin)");
  sub->require_subcommand(1, 1);
  auto* mint = sub->add_subcommand("mint", "make an enrolment token; shown once");
  mint->add_option("--name", a->name, "what it is for (shown on the agents it lets in)")->required();
  mint->add_option("--uses", a->uses, "enrolments it allows; 0 = any number")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  mint->add_option("--expires-in", a->expires_in, "how long it works: 90s, 30m, 24h, 7d or never")
      ->check([](const std::string& v) -> std::string {
        return seconds_of(v) ? "" : "'" + v + "' is not a duration (use 90s, 30m, 24h, 7d or never)";
      })
      ->capture_default_str();
  mint->add_option("--instance-id", a->instance_id,
                   "only the agent that says it is this instance (kfleet-agent --instance-id)");
  mint->add_option("--out", a->out_file,
                   "write the token to this new file (mode 0600) instead of stdout");
  auto* list = sub->add_subcommand("list", "enrolment tokens, newest first: uses, expiry, state");
  list->add_flag("--all", a->all, "up to 1000 tokens (default: the newest 100)");
  auto* revoke = sub->add_subcommand("revoke", "revoke an enrolment token now (its agents stay)");
  revoke->add_option("id", a->id, "the token's id (kfleet enrol-token list)")->required();
  sub->footer(R"(Examples:
  kfleet enrol-token mint --name rack-3 --out rack-3.token          # one agent, within 24h
  kfleet enrol-token mint --name l4-pool --uses 8 --expires-in 2h
  kfleet enrol-token mint --name i-0abc --instance-id i-0abc --expires-in 30m
  kfleet enrol-token list
  kfleet enrol-token revoke 3
An agent enrols with it as with the fleet's token: kfleet-agent --enrol-token-file FILE.)");
  return {sub, [a, mint, list, revoke](Session& s) {
    if (mint->parsed()) {
      nlohmann::json body = {{"name", a->name}, {"uses", a->uses},
                             {"expires_in_s", *seconds_of(a->expires_in)}};
      if (!a->instance_id.empty()) body["instance_id"] = a->instance_id;
      auto reply = s.post("/api/v1/enrol-tokens", body);
      if (!reply) return s.fail(reply.error(), "enrol-token mint");
      const auto& t = obj_field(reply->body, "enrol_token");
      return show_new_secret(s, reply->body, t, describe(t), a->out_file, "kfleet enrol-token revoke");
    }
    if (list->parsed()) {
      auto reply = s.get(std::string("/api/v1/enrol-tokens?limit=") + (a->all ? "1000" : "100"));
      if (!reply) return s.fail(reply.error(), "enrol-token list");
      if (s.json()) {
        s.io().out << reply->body.dump(2) << "\n";
        return 0;
      }
      const auto& tokens = arr_field(reply->body, "enrol_tokens");
      if (tokens.empty()) {
        s.io().out << "no enrolment tokens (agents enrol with the fleet's token; an admin mints "
                      "limited ones with kfleet enrol-token mint)\n";
        return 0;
      }
      s.io().out << "ID  NAME                 USED   INSTANCE       EXPIRES               BY         STATE\n";
      for (const auto& t : tokens) {
        const int uses = t.value("uses", 0);
        const std::string used =
            std::to_string(t.value("used", 0)) + "/" + (uses == 0 ? "any" : std::to_string(uses));
        const std::string exp = str_field(t, "expires");
        const std::string inst = str_field(t, "instance_id");
        char line[512];
        std::snprintf(line, sizeof line, "%-3lld %-20s %-6s %-14s %-21s %-10s %s\n",
                      static_cast<long long>(t.value("id", 0)), str_field(t, "name").c_str(),
                      used.c_str(), inst.empty() ? "any" : inst.c_str(),
                      exp.empty() ? "never" : exp.c_str(), str_field(t, "created_by").c_str(),
                      str_field(t, "state").c_str());
        s.io().out << line;
      }
      return 0;
    }
    (void)revoke;
    auto reply = s.post("/api/v1/enrol-tokens/" + std::to_string(a->id) + "/revoke",
                        nlohmann::json::object());
    if (!reply) return s.fail(reply.error(), "enrol-token revoke");
    if (s.json()) s.io().out << reply->body.dump(2) << "\n";
    else s.io().out << "enrolment token " << a->id << " revoked; the agents it let in stay (kfleet "
                       "agents revoke ID takes one out)\n";
    return 0;
  }};
}

}  // namespace kfleet::cli
