// "Did you mean ...?" for the three executables: CLI11 reports an argument it did not expect;
// this names the nearest command or option of the command that was being parsed.
#include <algorithm>
#include <filesystem>
#include <regex>

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

std::string or_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

// "kfleet token create": the program, then each command of `chain` below it.
std::string command_path(const std::vector<const CLI::App*>& chain, std::string_view prog) {
  std::string s(prog);
  for (std::size_t i = 1; i < chain.size(); ++i) s += " " + chain[i]->get_name();
  return s;
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

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto near = nearest_names(word, candidates);
  return near.empty() ? "" : "; did you mean " + quoted_list(near) + "?";
}

ParseMistake explain_parse_error(const CLI::App& app, const CLI::ParseError& e,
                                 const std::vector<std::string>& args, std::string_view prog) {
  const auto chain = parsed_chain(app);
  // The one argument CLI11 did not expect that comes first on the command line: after an
  // unknown command, the words that follow it are its arguments, not more mistakes.
  std::size_t at = args.size();
  std::string word;
  for (const auto& r : app.remaining(true)) {
    for (std::size_t i = 0; i < args.size() && i < at; ++i) {
      if (args[i] == r || (r.size() > 1 && r.front() == '-' && args[i].rfind(r + "=", 0) == 0)) {
        at = i;
        word = r;
        break;
      }
    }
    if (word.empty()) word = r;
  }
  if (!word.empty()) {
    // The command it was given to: the last one named before it.
    std::size_t level = 0, from = 0;
    for (std::size_t k = 1; k < chain.size(); ++k) {
      const auto it = std::find(args.begin() + static_cast<std::ptrdiff_t>(from), args.end(),
                                chain[k]->get_name());
      const auto i = static_cast<std::size_t>(it - args.begin());
      if (it == args.end() || i > at) break;
      level = k;
      from = i + 1;
    }
    const std::vector<const CLI::App*> here(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(level) + 1);
    const std::string where = command_path(here, prog);
    const bool is_option = word.size() > 1 && word.front() == '-';
    if (is_option) {
      word = word.substr(0, word.find('='));
      // Options of the commands above count too: kfleet's global flags may follow a command.
      return {where + ": unknown option '" + word + "'" + did_you_mean(word, option_names(chain)), where};
    }
    const auto commands = command_names(*here.back());
    if (commands.empty()) return {where + ": unexpected argument '" + word + "'", where};
    return {where + ": unknown command '" + word + "'" + did_you_mean(word, commands), where};
  }
  const std::string where = command_path(chain, prog);
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    for (auto a = chain.rbegin(); a != chain.rend(); ++a) {
      for (const CLI::Option* o : (*a)->get_options()) {
        if (!o->get_required() || o->count() > 0) continue;
        const std::string what = o->get_description().empty() ? "" : ": " + o->get_description();
        const std::string at_level = command_path({chain.begin(), a.base()}, prog);
        return {at_level + ": missing " + o->get_name() + what, at_level};
      }
      if ((*a)->get_require_subcommand_min() > 0 && (*a)->get_subcommands().empty()) {
        const std::string at_level = command_path({chain.begin(), a.base()}, prog);
        return {at_level + ": missing a command: " + or_list(command_names(**a)), at_level};
      }
    }
  }
  // "--priority: 1 required INT missing": an option given without its value.
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    static const std::regex no_value(R"(^(-\S+): \d+ required (\S+) missing$)");
    std::cmatch m;
    if (std::regex_match(e.what(), m, no_value))
      return {where + ": " + m[1].str() + " needs a value (" + m[2].str() + ")", where};
  }
  return {where + ": " + e.what(), where};
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
    // CLI11 names an unnamed app after argv[0], a path: the program is its last part.
    std::string prog = app.get_name();
    if (prog.empty() && argc > 0) prog = argv[0];
    prog = std::filesystem::path(prog).filename().string();
    const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    // One line for the mistake (CLI11's own message is not printed beside it), then where to
    // read more: the --help of the command that was being parsed.
    const ParseMistake m = explain_parse_error(app, e, args, prog);
    err << m.line << "\n" << help_hint(m.command) << "\n";
    return usage_exit.value_or(e.get_exit_code());
  }
}

std::string help_hint(std::string_view command) {
  return "Run '" + std::string(command) + " --help' for more information.";
}

}  // namespace kfleet::cli_support
