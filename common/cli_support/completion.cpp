// Completion scripts built from the CLI11 tree itself, so every command and option that exists
// completes and none that does not. One table per shell, generated; the shell code around it is
// fixed.
#include <algorithm>
#include <cctype>
#include <sstream>

#include "kfleet/cli_support/parse.hpp"

namespace kfleet::cli_support {

namespace {

// One command of the tree, flattened: its path below the program ("" for the program itself).
struct Node {
  std::string path;
  std::string description;
  std::vector<std::string> commands;     // its subcommands
  std::vector<std::string> options;      // its own options (the program's apply everywhere)
  std::vector<std::string> value_options;  // those that take a value (the next word)
  std::vector<std::pair<std::string, std::string>> option_help;  // "--x" / "-x" -> help
  bool yaml_files = false;               // a positional names job or suite YAMLs
  std::vector<std::string> words;        // fixed words its positional takes
};

bool mentions_yaml(const std::string& s) {
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("yaml") != std::string::npos;
}

void flatten(const CLI::App& app, const std::string& path, const std::vector<CompletionWords>& extra,
             std::vector<Node>& out) {
  Node n;
  n.path = path;
  n.description = app.get_description();
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    if (o->get_lnames().empty() && o->get_snames().empty()) {
      if (mentions_yaml(o->get_description())) n.yaml_files = true;
      continue;
    }
    std::vector<std::string> names;
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
    for (const auto& name : names) {
      n.options.push_back(name);
      if (o->get_expected_max() != 0) n.value_options.push_back(name);  // not a flag
      n.option_help.emplace_back(name, o->get_description());
    }
  }
  for (const auto& e : extra)
    if (e.command == path) n.words = e.words;
  std::vector<const CLI::App*> subs;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!s->get_group().empty()) subs.push_back(s);
  for (const CLI::App* s : subs) n.commands.push_back(s->get_name());
  out.push_back(n);
  for (const CLI::App* s : subs)
    flatten(*s, path.empty() ? s->get_name() : path + " " + s->get_name(), extra, out);
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& w : v) out += (out.empty() ? "" : " ") + w;
  return out;
}

// A shell function name from the program's ("kfleet-agent" -> "_kfleet_agent").
std::string fn_name(std::string_view prog) {
  std::string f = "_";
  for (char c : prog) f += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return f;
}

std::string single_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string bash_script(const std::vector<Node>& nodes, std::string_view prog) {
  const std::string f = fn_name(prog);
  std::ostringstream s;
  s << "# bash completion for " << prog << ": source <(" << prog << " completion bash)\n"
    << "# (or save it as ~/.local/share/bash-completion/completions/" << prog << ")\n";
  auto table = [&](const std::string& name, auto field) {
    s << f << "_" << name << "() {\n  case \"$1\" in\n";
    for (const auto& n : nodes) s << "    " << single_quoted(n.path) << ") echo " << single_quoted(field(n)) << " ;;\n";
    s << "  esac\n}\n";
  };
  const Node& root = nodes.front();
  table("commands", [](const Node& n) { return joined(n.commands); });
  table("words", [](const Node& n) { return joined(n.words); });
  // The program's options are accepted after any command too.
  auto with_root = [&](const Node& n, const std::vector<std::string> Node::*field) {
    std::vector<std::string> all = n.*field;
    if (!n.path.empty()) all.insert(all.end(), (root.*field).begin(), (root.*field).end());
    return joined(all);
  };
  table("options", [&](const Node& n) { return with_root(n, &Node::options); });
  table("value_options", [&](const Node& n) { return with_root(n, &Node::value_options); });
  s << f << "_yaml() {\n  case \"$1\" in\n";
  for (const auto& n : nodes)
    if (n.yaml_files) s << "    " << single_quoted(n.path) << ") return 0 ;;\n";
  s << "  esac\n  return 1\n}\n";
  s << f << "() {\n"
    << "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" path=\"\" w i\n"
    << "  (( COMP_CWORD > 0 )) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
    << "  for (( i = 1; i < COMP_CWORD; i++ )); do\n"
    << "    w=\"${COMP_WORDS[i]}\"\n"
    << "    if [[ \" $(" << f << "_value_options \"$path\") \" == *\" $w \"* ]]; then (( i++ )); continue; fi\n"
    << "    if [[ \"$w\" != -* && \" $(" << f << "_commands \"$path\") \" == *\" $w \"* ]]; then\n"
    << "      path=\"${path:+$path }$w\"\n"
    << "    fi\n"
    << "  done\n"
    << "  if [[ -n \"$prev\" && \" $(" << f << "_value_options \"$path\") \" == *\" $prev \"* ]]; then\n"
    << "    mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
    << "    return 0\n"
    << "  fi\n"
    << "  if [[ \"$cur\" == -* ]]; then\n"
    << "    mapfile -t COMPREPLY < <(compgen -W \"$(" << f << "_options \"$path\")\" -- \"$cur\")\n"
    << "    return 0\n"
    << "  fi\n"
    << "  mapfile -t COMPREPLY < <(compgen -W \"$(" << f << "_commands \"$path\") $(" << f
    << "_words \"$path\")\" -- \"$cur\")\n"
    << "  if " << f << "_yaml \"$path\"; then\n"
    << "    mapfile -t -O \"${#COMPREPLY[@]}\" COMPREPLY < <(compgen -f -X '!*.yaml' -- \"$cur\"; compgen -d -- \"$cur\")\n"
    << "  fi\n"
    << "  return 0\n"
    << "}\n"
    << "complete -o filenames -F " << f << " " << prog << "\n";
  return s.str();
}

std::string zsh_script(const std::vector<Node>& nodes, std::string_view prog) {
  // zsh runs the bash function through bashcompinit: one implementation, the same answers.
  std::ostringstream s;
  s << "# zsh completion for " << prog << ": source <(" << prog << " completion zsh)\n"
    << "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit; }\n"
    << "autoload -U +X bashcompinit && bashcompinit\n"
    << bash_script(nodes, prog);
  return s.str();
}

std::string fish_script(const std::vector<Node>& nodes, std::string_view prog) {
  std::ostringstream s;
  s << "# fish completion for " << prog << ": " << prog << " completion fish | source\n"
    << "complete -c " << prog << " -e\n";
  std::string all_commands;
  for (const auto& n : nodes)
    for (const auto& c : n.commands) all_commands += (all_commands.empty() ? "" : " ") + c;
  for (const auto& n : nodes) {
    // The condition under which this node's completions apply: its last word was seen.
    std::string cond;
    if (n.path.empty())
      cond = all_commands.empty() ? "" : "__fish_use_subcommand";
    else
      cond = "__fish_seen_subcommand_from " + n.path.substr(n.path.rfind(' ') + 1);
    const std::string when = cond.empty() ? "" : " -n " + single_quoted(cond);
    for (const auto& c : n.commands)
      s << "complete -c " << prog << " -f" << when << " -a " << c << "\n";
    for (const auto& w : n.words) s << "complete -c " << prog << " -f" << when << " -a " << w << "\n";
    // Options: the program's apply everywhere, so they carry no condition.
    const std::string opt_when = n.path.empty() ? "" : when;
    for (const auto& [name, help] : n.option_help) {
      const bool takes = std::find(n.value_options.begin(), n.value_options.end(), name) !=
                         n.value_options.end();
      s << "complete -c " << prog << opt_when << (name.rfind("--", 0) == 0 ? " -l " : " -s ")
        << (name.rfind("--", 0) == 0 ? name.substr(2) : name.substr(1)) << (takes ? " -r" : "")
        << " -d " << single_quoted(help) << "\n";
    }
    if (n.yaml_files)
      s << "complete -c " << prog << when << " -k -a '(__fish_complete_suffix .yaml)'\n";
  }
  return s.str();
}

}  // namespace

std::optional<std::string> completion_script(const CLI::App& app, std::string_view prog,
                                             std::string_view shell,
                                             const std::vector<CompletionWords>& extra_words) {
  std::vector<Node> nodes;
  flatten(app, "", extra_words, nodes);
  if (shell == "bash") return bash_script(nodes, prog);
  if (shell == "zsh") return zsh_script(nodes, prog);
  if (shell == "fish") return fish_script(nodes, prog);
  return std::nullopt;
}

}  // namespace kfleet::cli_support
