// `kfleet token create|list|revoke`: per-user API tokens (an admin's job). A new token is
// shown once; kfleetd keeps only its SHA-256.
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "kfleet/cli/exit_code.hpp"
#include "new_secret.hpp"

namespace kfleet::cli {

namespace {

struct TokenArgs {
  std::string user, scope = "read", note, out_file;
  std::int64_t id = 0;
};

}  // namespace

Command add_token_command(CLI::App& app) {
  auto a = std::make_shared<TokenArgs>();
  auto* sub = app.add_subcommand("token", "API tokens: create, list, revoke (needs scope admin)");
  sub->require_subcommand(1, 1);
  auto* create = sub->add_subcommand("create", "make a token for a user; shown once");
  create->add_option("--user", a->user, "who the token is for")->required();
  create->add_option("--scope", a->scope, "read | submit (includes read) | admin")
      ->check(CLI::IsMember({"read", "submit", "admin"}))
      ->capture_default_str();
  create->add_option("--note", a->note, "what it is for (shown in token list)");
  create->add_option("--out", a->out_file,
                     "write the token to this new file (mode 0600) instead of stdout");
  auto* list = sub->add_subcommand("list", "every token: id, user, scope, prefix, revoked");
  auto* revoke = sub->add_subcommand("revoke", "revoke a token now");
  revoke->add_option("id", a->id, "the token's id (kfleet token list)")->required();
  sub->footer(R"(Examples:
  kfleet token create --user alice --scope submit --out alice.token
  kfleet token list
  kfleet token revoke 3)");
  return {sub, [a, create, list, revoke](Session& s) {
    if (create->parsed()) {
      auto reply = s.post("/api/v1/tokens", {{"user", a->user}, {"scope", a->scope}, {"note", a->note}});
      if (!reply) return s.fail(reply.error(), "token create");
      const auto& t = obj_field(reply->body, "token");
      const std::string what = "token " + std::to_string(t.value("id", 0)) + " for " +
                               str_field(t, "user") + " (scope " + str_field(t, "scope") + ")";
      return show_new_secret(s, reply->body, t, what, a->out_file, "kfleet token revoke");
    }
    if (list->parsed()) {
      auto reply = s.get("/api/v1/tokens");
      if (!reply) return s.fail(reply.error(), "token list");
      if (s.json()) {
        s.io().out << reply->body.dump(2) << "\n";
        return 0;
      }
      s.io().out << "ID  USER                 SCOPE   PREFIX    CREATED               STATE\n";
      for (const auto& t : arr_field(reply->body, "tokens")) {
        char line[256];
        std::snprintf(line, sizeof line, "%-3lld %-20s %-7s %-9s %-21s %s\n",
                      static_cast<long long>(t.value("id", 0)), str_field(t, "user").c_str(),
                      str_field(t, "scope").c_str(), str_field(t, "prefix").c_str(),
                      str_field(t, "created").c_str(),
                      t.value("revoked", false) ? "revoked" : "valid");
        s.io().out << line;
      }
      return 0;
    }
    (void)revoke;
    auto reply = s.post("/api/v1/tokens/" + std::to_string(a->id) + "/revoke", nlohmann::json::object());
    if (!reply) return s.fail(reply.error(), "token revoke");
    if (s.json()) s.io().out << reply->body.dump(2) << "\n";
    else s.io().out << "token " << a->id << " revoked\n";
    return 0;
  }};
}

}  // namespace kfleet::cli
