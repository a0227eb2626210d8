// `kfleet mcp`: kfleet as tools for a search agent, over the Model Context Protocol on stdio.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "mcp/server.hpp"
#include "mcp/tools.hpp"

namespace kfleet::cli {

namespace {

constexpr const char* kInstructions =
    "kfleet runs GPU kernel experiments one change at a time (seed 001's loop): read the "
    "campaign (kfleet_get_campaign) for its current best and the no-repeat map, submit ONE "
    "change to the current best (kfleet_submit_child), wait for its verdict "
    "(kfleet_wait_verdict: correctness first, then a benchmark against the parent), and repeat. "
    "A passed child that improves becomes the new current best. Simulated results are marked. "
    "To start on a problem of the library: kfleet_list_problems, then kfleet_get_problem for "
    "its contract and starter kernel; a job names it as kernel.problem: NAME@VERSION.";

}  // namespace

Command add_mcp_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "mcp", "serve kfleet's tools to an AI agent over the Model Context Protocol (stdio)");
  sub->footer(R"(Reads JSON-RPC 2.0 messages on stdin and answers on stdout, one per line, until
stdin closes; diagnostics go to stderr. It uses the same server, token and TLS settings as every
other command (--server, KFLEET_TOKEN / --token-file, --ca-file). Tools: kfleet_submit_child,
kfleet_wait_verdict, kfleet_get_verdict, kfleet_get_campaign, kfleet_get_fleet,
kfleet_list_problems, kfleet_get_problem (docs/mcp.md).

Example (an MCP client's server entry):
  {"command": "kfleet", "args": ["--server", "https://kfleetd:8470", "mcp"],
   "env": {"KFLEET_TOKEN_FILE": "/home/me/.config/kfleet/token"}})");
  return {sub, [](Session& s) {
    mcp::Server server(std::cin, s.io().out, mcp::kfleet_tools(s), "1", kInstructions);
    return server.serve();
  }};
}

}  // namespace kfleet::cli
