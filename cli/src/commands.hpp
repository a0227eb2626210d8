#pragma once
// Each command adds its CLI11 subcommand and returns how to run it once parsed. Options live
// in state the returned function owns.
#include <functional>

#include <CLI/CLI.hpp>

#include "kfleet/cli/app.hpp"
#include "session.hpp"

namespace kfleet::cli {

struct Command {
  CLI::App* sub = nullptr;
  std::function<int(Session&)> run;
};

Command add_submit_command(CLI::App& app);
Command add_status_command(CLI::App& app);
Command add_logs_command(CLI::App& app);
Command add_cancel_command(CLI::App& app);
Command add_agents_command(CLI::App& app);
Command add_results_command(CLI::App& app);
Command add_regress_command(CLI::App& app);   // cmd_fleet.cpp
Command add_baseline_command(CLI::App& app);
Command add_campaign_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_token_command(CLI::App& app);     // cmd_token.cpp
Command add_enrol_token_command(CLI::App& app);  // cmd_enrol_token.cpp
Command add_mcp_command(CLI::App& app);       // cmd_mcp.cpp

// A command that needs no server or token (it runs before the config is resolved).
struct LocalCommand {
  CLI::App* sub = nullptr;
  std::function<int(CliIo&, bool json)> run;
};
LocalCommand add_problems_command(CLI::App& app);  // cmd_problems.cpp

// Streams a job's events as progress lines until it ends; returns its exit status.
// `gpu` (the job's target) completes lease lines; `prefix` tags lines when several jobs are
// followed.
int follow_job(Session& s, std::int64_t job_id, const std::string& gpu, const std::string& prefix);
// Polls the job with backoff until it ends; prints its verdict; returns its exit status.
int wait_job(Session& s, std::int64_t job_id, const std::string& prefix);

}  // namespace kfleet::cli
