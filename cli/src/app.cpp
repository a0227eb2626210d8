#include "kfleet/cli/app.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "commands.hpp"
#include "kfleet/cli/exit_code.hpp"

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
  kfleet --server http://kfleetd:8470 status
  kfleet logs 42 --follow
)";

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
                 "kfleetd URL (else $KFLEET_SERVER, the config file, http://127.0.0.1:8470)");
  app.add_option("--token", flags.token, "user API token (else $KFLEET_TOKEN, the config file)");
  app.add_option("--config", flags.config,
                 "config file with server: and token: (else $KFLEET_CONFIG, "
                 "~/.config/kfleet/config.yaml)");
  app.add_flag("--json", json, "print the API's JSON instead of tables");
  app.add_flag("--no-color", no_color, "no ANSI colours (also when $NO_COLOR is set)");

  std::vector<Command> commands = {add_submit_command(app), add_status_command(app),
                                   add_logs_command(app),   add_cancel_command(app),
                                   add_agents_command(app), add_results_command(app),
                                   add_regress_command(app), add_baseline_command(app),
                                   add_campaign_command(app), add_report_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, io.out, io.err);
    return code == 0 ? exit_passed : exit_usage;
  }

  if (app.get_subcommands().empty()) {
    io.err << "kfleet: no command given; see kfleet --help\n";
    return exit_usage;
  }
  auto config = resolve_config(flags, io.env, io.read_file);
  if (!config) {
    io.err << "kfleet: " << config.error().message << "\n";
    return exit_usage;
  }
  const bool color = io.stdout_is_tty && !no_color && !io.env("NO_COLOR").has_value();
  Session session(io, *config, json, color);
  for (auto& c : commands)
    if (c.sub->parsed()) return c.run(session);
  std::abort();  // CLI11 parsed a subcommand that is not in `commands`

}

}  // namespace kfleet::cli
