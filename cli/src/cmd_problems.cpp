// kfleet problems [--dir DIR] [show NAME [--starter]]: the problem library, read from the
// repository or the install (no server, no token). DIR, else $KFLEET_PROBLEMS_DIR, else the
// install's share/kfleet/kernels/problems (a build tree's links to its sources).
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kfleet/cli/exit_code.hpp"
#include "kfleet/cli_support/parse.hpp"
#include "problems_view.hpp"

namespace kfleet::cli {

LocalCommand add_problems_command(CLI::App& app) {
  struct State {
    std::string dir, name;
    bool starter = false;
    CLI::App* show = nullptr;
  };
  auto st = std::make_shared<State>();
  auto* sub = app.add_subcommand(
      "problems", "list the problem library (kernels/problems), or show one problem's contract");
  sub->add_option("--dir", st->dir,
                  "the library's folder (else $KFLEET_PROBLEMS_DIR, else the installed library: "
                  "share/kfleet/kernels/problems of this kfleet's prefix)");
  sub->require_subcommand(0, 1);
  st->show = sub->add_subcommand("show", "print a problem's contract and a starter kernel");
  st->show->add_option("name", st->name, "the problem, e.g. rmsnorm")->required();
  st->show->add_flag("--starter", st->starter, "print only the starter kernel (a .cu source)");
  return {sub, [st](CliIo& io, bool json) -> int {
            const ProblemLibrary lib = load_problem_library(problems_dir(io.env, st->dir));
            for (const auto& i : lib.issues) io.err << i.to_string() << "\n";
            if (!st->show->parsed()) {
              if (json) {
                nlohmann::json a = nlohmann::json::array();
                for (const auto& p : lib.problems) a.push_back(problem_summary_json(p));
                io.out << nlohmann::json{{"problems", a}}.dump(2) << "\n";
              } else {
                io.out << render_problem_list(lib);
              }
              return lib.issues.empty() ? exit_passed : exit_usage;
            }
            const ProblemDef* p = lib.find(st->name);
            if (!p) {
              std::vector<std::string> names;
              for (const auto& q : lib.problems) names.push_back(q.name);
              const auto near = cli_support::nearest_names(st->name, names, 1);
              io.err << "kfleet: no problem '" << st->name << "' in " << lib.root
                     << (near.empty() ? "" : "; did you mean '" + near[0] + "'?") << "\n";
              return exit_usage;
            }
            if (json && !st->starter) {
              nlohmann::json j = problem_contract_json(*p);
              j["starter"] = render_problem_starter(*p);
              io.out << j.dump(2) << "\n";
              return lib.issues.empty() ? exit_passed : exit_usage;
            }
            if (!st->starter) io.out << render_problem_contract(*p) << "\nstarter kernel:\n\n";
            io.out << render_problem_starter(*p);
            return lib.issues.empty() ? exit_passed : exit_usage;
          }};
}

}  // namespace kfleet::cli
