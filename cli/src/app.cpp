#include "kfleet/cli/app.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "commands.hpp"
#include "kfleet/cli/exit_code.hpp"
#include "kfleet/cli_support/parse.hpp"
#include "kfleet/common/secret.hpp"

namespace kfleet::cli {

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

FileReader disk_reader() {
  return [](const std::string& path) -> std::optional<std::string> {
    std::ifstream f(path, std::ios::binary);
    if (!f) return std::nullopt;
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
}

namespace {

constexpr const char* kFooter = R"(Exit status: 0 passed, 1 rejected, 2 usage or invalid job, 3 error,
4 cancelled, 5 kfleetd unreachable or API error.

Examples:
  kfleet submit jobs/fa-s512.yaml --follow
  kfleet --server https://kfleetd:8470 --ca-file ca.pem status
  kfleet token create --user alice --scope submit
  kfleet logs 42 --follow

Shell completion (commands, options, job YAMLs): source <(kfleet completion bash); also zsh, fish.
)";

// Words the positional of a command takes that CLI11 does not know as subcommands.
std::vector<cli_support::CompletionWords> completion_words() {
  return {{"baseline", {"set", "list"}}, {"campaign", {"show"}}, {"regress", {"show"}}};
}

}  // namespace

int run_cli(int argc, const char* const* argv, CliIo& io) {
  CLI::App app{"kfleet: submit GPU kernel jobs to kfleetd and read their verdicts", "kfleet"};
  app.footer(kFooter);
  // At most one command; none is handled below so that a stray flag is reported as such.
  app.require_subcommand(0, 1);
  // Global flags may follow the subcommand ("kfleet results --json").
  app.fallthrough();

  ConfigFlags flags;
  bool json = false, no_color = false;
  app.add_option("--server", flags.server,
                 "kfleetd URL (else $KFLEET_SERVER, the config file, http://127.0.0.1:8470); "
                 "several, comma-separated, for a leader and its standbys");
  std::string token_file, argv_token;
  app.add_option("--token-file", token_file,
                 "file (mode 0600) holding your API token (else $KFLEET_TOKEN, the config file)")
      ->envname("KFLEET_TOKEN_FILE");
  // Kept only to say why it is gone: argv is visible to every local user in `ps`.
  app.add_option("--token", argv_token)->group("");
  app.add_option("--ca-file", flags.ca_file,
                 "PEM CA that signed an https:// kfleetd's certificate (else $KFLEET_CA_FILE, "
                 "ca_file: in the config file, the system's CAs)");
  app.add_flag("--insecure", flags.insecure,
               "do NOT verify kfleetd's certificate (anyone on the path can read your token)");
  app.add_option("--config", flags.config,
                 "config file with server: and token: (else $KFLEET_CONFIG, "
                 "~/.config/kfleet/config.yaml)");
  app.add_flag("--json", json, "print the API's JSON instead of tables");
  app.add_flag("--no-color", no_color, "no ANSI colours (also when $NO_COLOR is set)");

  std::vector<Command> commands = {add_submit_command(app), add_status_command(app),
                                   add_logs_command(app),   add_cancel_command(app),
                                   add_agents_command(app), add_results_command(app),
                                   add_regress_command(app), add_baseline_command(app),
                                   add_campaign_command(app), add_report_command(app),
                                   add_token_command(app), add_enrol_token_command(app),
                                   add_mcp_command(app)};
  const LocalCommand problems = add_problems_command(app);
  // Shell completion is built from the tree above, so it needs no server and no token.
  std::string completion_shell;
  auto* completion = app.add_subcommand(
      "completion", "print a shell completion script: source <(kfleet completion bash)");
  completion->add_option("shell", completion_shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));

  if (auto code = cli_support::parse_or_explain(app, argc, argv, io.out, io.err, exit_usage))
    return *code == 0 ? exit_passed : *code;
  if (completion->parsed()) {
    io.out << *cli_support::completion_script(app, "kfleet", completion_shell,
                                              completion_words());
    return exit_passed;
  }

  if (problems.sub->parsed()) return problems.run(io, json);

  if (app.get_subcommands().empty()) {
    io.err << "kfleet: no command given\n" << cli_support::help_hint("kfleet") << "\n";
    return exit_usage;
  }
  if (!argv_token.empty()) {
    io.err << "kfleet: --token is not accepted: a token on the command line is visible to every "
              "user of this machine (ps). Use --token-file FILE (chmod 600), KFLEET_TOKEN, or "
              "token: in the config file\n";
    return exit_usage;
  }
  if (!token_file.empty()) {
    auto t = read_secret_file(token_file, "token");
    if (!t) {
      io.err << "kfleet: " << t.error().message << "\n";
      return exit_usage;
    }
    flags.token = *t;
  }
  auto config = resolve_config(flags, io.env, io.read_file);
  if (!config) {
    io.err << "kfleet: " << config.error().message << "\n";
    return exit_usage;
  }
  if (config->insecure)
    io.err << "kfleet: WARNING: --insecure: kfleetd's certificate is not verified; anyone on "
              "the network path can read your token and answer as kfleetd\n";
  const bool color = io.stdout_is_tty && !no_color && !io.env("NO_COLOR").has_value();
  Session session(io, *config, json, color);
  for (auto& c : commands)
    if (c.sub->parsed()) return c.run(session);
  std::abort();  // CLI11 parsed a subcommand that is not in `commands`

}

}  // namespace kfleet::cli
