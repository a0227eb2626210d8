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

// For each argument CLI11 did not expect after a failed parse of `app`: one line
// "PROG: unknown command 'X'; did you mean 'Y'?" (or "unknown option"), naming the nearest
// subcommands or options of the command that was being parsed. Empty when none is near.
std::vector<std::string> suggestions(const CLI::App& app, const std::vector<std::string>& unexpected,
                                     std::string_view prog);

// Parses argv into `app`. On success returns nullopt. On --help returns 0 after printing it;
// on an error prints CLI11's message, the suggestions above and a pointer to --help, and
// returns CLI11's exit code (or `usage_exit` when given).
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
