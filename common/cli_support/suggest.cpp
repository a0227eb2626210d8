// "Did you mean ...?" for the three executables: CLI11 reports an argument it did not expect;
// this names the nearest command or option of the command that was being parsed.
#include <algorithm>
#include <filesystem>

#include "kfleet/cli_support/parse.hpp"

namespace kfleet::cli_support {

namespace {

// Optimal string alignment distance: edits, plus swapping two neighbours ("submti") as one.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string_view strip_dashes(std::string_view s) {
  while (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return s;
}

// The chain of commands CLI11 entered: the program, then each parsed subcommand.
std::vector<const CLI::App*> parsed_chain(const CLI::App& app) {
  std::vector<const CLI::App*> chain{&app};
  for (;;) {
    const auto subs = chain.back()->get_subcommands();
    if (subs.empty()) break;
    chain.push_back(subs.front());
  }
  return chain;
}

std::vector<std::string> option_names(const std::vector<const CLI::App*>& chain) {
  std::vector<std::string> names;
  for (const auto* a : chain)
    for (const CLI::Option* o : a->get_options()) {
      if (o->get_group().empty()) continue;  // hidden: kept only to explain its removal
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      for (const auto& s : o->get_snames()) names.push_back("-" + s);
    }
  return names;
}

std::vector<std::string> command_names(const CLI::App& a) {
  std::vector<std::string> names;
  for (const CLI::App* s : a.get_subcommands([](const CLI::App*) { return true; }))
    if (!s->get_group().empty()) names.push_back(s->get_name());
  return names;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

}  // namespace

std::vector<std::string> nearest_names(std::string_view word,
                                       const std::vector<std::string>& candidates,
                                       std::size_t limit) {
  const std::string_view bare = strip_dashes(word);
  const std::size_t max_d = std::max<std::size_t>(2, bare.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& c : candidates) {
    const std::string_view cb = strip_dashes(c);
    std::size_t d = edit_distance(bare, cb);
    // "sub" for "submit": a prefix is as good as one edit.
    if (bare.size() >= 2 && cb.substr(0, bare.size()) == bare) d = std::min<std::size_t>(d, 1);
    if (d == 0) return {};  // a known name: nothing to correct
    if (d <= max_d && d < cb.size()) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [d, name] : scored) {
    if (out.size() == limit) break;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

std::vector<std::string> suggestions(const CLI::App& app, const std::vector<std::string>& unexpected,
                                     std::string_view prog) {
  const auto chain = parsed_chain(app);
  std::vector<std::string> lines;
  for (const auto& arg : unexpected) {
    const bool is_option = arg.size() > 1 && arg.front() == '-';
    std::string word = arg;
    if (is_option) word = word.substr(0, word.find('='));
    const auto near = is_option ? nearest_names(word, option_names(chain))
                                : nearest_names(word, command_names(*chain.back()));
    if (near.empty()) continue;
    lines.push_back(std::string(prog) + ": unknown " + (is_option ? "option" : "command") + " '" +
                    word + "'; did you mean " + quoted_list(near) + "?");
  }
  return lines;
}

std::optional<int> parse_or_explain(CLI::App& app, int argc, const char* const* argv,
                                    std::ostream& out, std::ostream& err,
                                    std::optional<int> usage_exit) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      app.exit(e, out, err);  // --help, --version
      return 0;
    }
    std::string prog = app.get_name();
    if (prog.empty() && argc > 0) prog = std::filesystem::path(argv[0]).filename().string();
    err << e.what() << "\n";
    for (const auto& line : suggestions(app, app.remaining(true), prog)) err << line << "\n";
    err << "Run with --help for more information.\n";
    return usage_exit.value_or(e.get_exit_code());
  }
}

}  // namespace kfleet::cli_support
