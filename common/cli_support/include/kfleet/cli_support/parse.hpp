#pragma once
// What kfleet, kfleetd and kfleet-agent share around CLI11: a parse that answers an unknown
// command or option with the nearest names ("did you mean ...?"), and shell completion
// scripts built from the same CLI11 tree, so neither can drift from the options that exist.
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace kfleet::cli_support {

// The names nearest to `word` among `candidates` (closest first, at most `limit`): those within
// a small edit distance, or that `word` starts (a prefix of at least two characters).
std::vector<std::string> nearest_names(std::string_view word,
                                       const std::vector<std::string>& candidates,
                                       std::size_t limit = 3);

// "; did you mean 'submit'?" (or "'a', 'b' or 'c'"), naming nearest_names(word, candidates),
// or "" when none is near.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// What went wrong in a failed parse of `app` (`args`: argv without the program), as one line,
// and the command whose --help says more ("kfleet token"):
// - an argument CLI11 did not expect (the first on the command line; those after an unknown
//   command are its arguments): "PROG CMD: unknown command 'X'; did you mean 'Y'?", "...: unknown
//   option '--x'" with the nearest options of the commands parsed, or "...: unexpected argument
//   'X'" for a command that has no subcommands; a suggestion only when one is near;
// - a required argument, option or command missing: "PROG CMD: missing files: job YAML files",
//   "PROG token: missing a command: create, list or revoke";
// - anything else: "PROG CMD: " and CLI11's message.
struct ParseMistake {
  std::string line;
  std::string command;
};
ParseMistake explain_parse_error(const CLI::App& app, const CLI::ParseError& e,
                                 const std::vector<std::string>& args, std::string_view prog);

// "Run 'kfleet token --help' for more information.": the second and last line of every usage
// error of kfleet, kfleetd and kfleet-agent.
std::string help_hint(std::string_view command);

// Parses argv into `app`. On success returns nullopt. On --help returns 0 after printing it;
// on an error prints the one line above and the help hint (nothing else: not CLI11's own
// message as well), and returns CLI11's exit code (or `usage_exit` when given).
std::optional<int> parse_or_explain(CLI::App& app, int argc, const char* const* argv,
                                    std::ostream& out, std::ostream& err,
                                    std::optional<int> usage_exit = std::nullopt);

// A completion script for `shell` ("bash", "zsh" or "fish") covering `app`'s commands (nested),
// their options, and for positionals whose description mentions YAML, *.yaml files.
// `extra_words` adds fixed words a command's positional takes ({"baseline", {"set", "list"}}).
struct CompletionWords {
  std::string command;              // space-separated path below the program: "baseline"
  std::vector<std::string> words;   // offered where that command expects a positional
};
std::optional<std::string> completion_script(const CLI::App& app, std::string_view prog,
                                             std::string_view shell,
                                             const std::vector<CompletionWords>& extra_words = {});

}  // namespace kfleet::cli_support
