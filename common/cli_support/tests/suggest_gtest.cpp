// The suggestions and completion tables, on a CLI11 tree shaped like kfleet's.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "kfleet/cli_support/parse.hpp"

namespace kfleet::cli_support {
namespace {

struct Tree {
  CLI::App app{"test program", "prog"};
  std::string server, file, state;
  bool follow = false;
  std::vector<std::string> files;
  Tree() {
    app.require_subcommand(0, 1);
    app.fallthrough();
    app.add_option("--server", server, "URL");
    std::string hidden;
    app.add_option("--token", hidden)->group("");
    auto* submit = app.add_subcommand("submit", "send jobs");
    submit->add_option("files", files, "job YAML files")->required();
    submit->add_flag("--follow", follow, "follow");
    auto* token = app.add_subcommand("token", "tokens");
    token->require_subcommand(1);
    token->add_subcommand("create", "make one")->add_option("--out", file, "file");
    token->add_subcommand("revoke", "revoke one");
    app.add_subcommand("status", "jobs")->add_option("--state", state, "a state")
        ->check(CLI::IsMember({"queued", "passed"}));
  }
  std::pair<std::optional<int>, std::string> parse(std::vector<const char*> args) {
    args.insert(args.begin(), "prog");
    std::ostringstream out, err;
    auto r = parse_or_explain(app, static_cast<int>(args.size()), args.data(), out, err, 2);
    return {r, err.str()};
  }
};

TEST(NearestNames, TranspositionPrefixAndNothingFar) {
  const std::vector<std::string> cmds = {"submit", "status", "logs", "cancel", "agents"};
  EXPECT_EQ(nearest_names("submti", cmds), std::vector<std::string>{"submit"});
  EXPECT_EQ(nearest_names("stauts", cmds), std::vector<std::string>{"status"});
  EXPECT_EQ(nearest_names("sub", cmds), std::vector<std::string>{"submit"});
  EXPECT_TRUE(nearest_names("frobnicate", cmds).empty());
  EXPECT_TRUE(nearest_names("submit", cmds).empty());  // known: nothing to correct
  EXPECT_EQ(nearest_names("--folow", {"--follow", "--force"}).front(), "--follow");
}

TEST(ParseOrExplain, UnknownCommandNamesTheNearest) {
  Tree t;
  auto [code, err] = t.parse({"submti", "a.yaml"});
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_NE(err.find("prog: unknown command 'submti'; did you mean 'submit'?"), std::string::npos)
      << err;
  EXPECT_NE(err.find("--help"), std::string::npos) << err;
}

TEST(ParseOrExplain, UnknownOptionOfASubcommandNamesItsOptions) {
  Tree t;
  auto [code, err] = t.parse({"submit", "a.yaml", "--folow"});
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(err.find("unknown option '--folow'; did you mean '--follow'?"), std::string::npos)
      << err;
  auto [code2, err2] = t.parse({"status", "--sever=http://x"});
  EXPECT_NE(err2.find("unknown option '--sever'; did you mean '--server'?"), std::string::npos)
      << err2;
}

TEST(ParseOrExplain, HiddenOptionsAreNeverSuggested) {
  Tree t;
  auto [code, err] = t.parse({"status", "--tokn"});
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(err.find("did you mean '--token'"), std::string::npos) << err;
}

TEST(ParseOrExplain, NestedCommandNamesItsSubcommands) {
  Tree t;
  auto [code, err] = t.parse({"token", "revokee"});
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(err.find("unknown command 'revokee'; did you mean 'revoke'?"), std::string::npos) << err;
}

// One mistake, one line: CLI11's own message ("The following arguments were not expected: a.yaml
// submti") is not printed beside kfleet's, and the words after an unknown command are not
// counted as more mistakes. The second line is always the hint.
TEST(ParseOrExplain, AMistakeIsOneLineAndTheHint) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"submti", "a.yaml"}, "prog: unknown command 'submti'; did you mean 'submit'?\n"
                             "Run 'prog --help' for more information.\n"},
      {{"submti", "a.yaml", "--follow"}, "prog: unknown command 'submti'; did you mean 'submit'?\n"
                                         "Run 'prog --help' for more information.\n"},
      {{"frobnicate"}, "prog: unknown command 'frobnicate'\nRun 'prog --help' for more information.\n"},
      {{"submit", "a.yaml", "--folow"}, "prog submit: unknown option '--folow'; did you mean '--follow'?\n"
                                        "Run 'prog submit --help' for more information.\n"},
      {{"--sever=http://x", "status"}, "prog: unknown option '--sever'; did you mean '--server'?\n"
                                       "Run 'prog --help' for more information.\n"},
      {{"status", "--tokn"}, "prog status: unknown option '--tokn'\n"
                             "Run 'prog status --help' for more information.\n"},
      {{"status", "7"}, "prog status: unexpected argument '7'\n"
                        "Run 'prog status --help' for more information.\n"},
      {{"token", "revokee", "3"}, "prog token: unknown command 'revokee'; did you mean 'revoke'?\n"
                                  "Run 'prog token --help' for more information.\n"},
      {{"token"}, "prog token: missing a command: create or revoke\n"
                  "Run 'prog token --help' for more information.\n"},
      {{"submit", "--follow"}, "prog submit: missing files: job YAML files\n"
                               "Run 'prog submit --help' for more information.\n"},
  };
  for (const auto& [args, want] : cases) {
    Tree t;
    auto [code, err] = t.parse(args);
    EXPECT_EQ(code, std::optional<int>(2)) << want;
    EXPECT_EQ(err, want);
  }
  // Anything else: CLI11's message, on the one line.
  Tree t;
  auto [code, err] = t.parse({"submit", "a.yaml", "--server"});
  EXPECT_EQ(err, "prog submit: --server needs a value (TEXT)\n"
                 "Run 'prog submit --help' for more information.\n");
  Tree other;
  auto [code2, err2] = other.parse({"status", "--state", "bogus"});
  EXPECT_EQ(err2, "prog status: --state: bogus not in {queued,passed}\n"
                  "Run 'prog status --help' for more information.\n");
}

TEST(ParseOrExplain, GoodArgumentsParseAndHelpExitsZero) {
  Tree t;
  EXPECT_FALSE(t.parse({"submit", "a.yaml", "--follow"}).first.has_value());
  Tree h;
  EXPECT_EQ(h.parse({"--help"}).first, std::optional<int>(0));
}

TEST(Completion, ScriptsCoverCommandsOptionsAndYaml) {
  Tree t;
  const auto bash = completion_script(t.app, "prog", "bash", {{"status", {"mine"}}});
  ASSERT_TRUE(bash);
  EXPECT_NE(bash->find("complete -o filenames -F _prog prog"), std::string::npos);
  EXPECT_NE(bash->find("'') echo 'submit token status'"), std::string::npos) << *bash;
  EXPECT_NE(bash->find("'token') echo 'create revoke'"), std::string::npos) << *bash;
  EXPECT_NE(bash->find("'submit') return 0"), std::string::npos) << *bash;  // YAML files
  EXPECT_NE(bash->find("'status') echo 'mine'"), std::string::npos) << *bash;
  EXPECT_EQ(bash->find("--token"), std::string::npos);  // hidden
  // Only options that take a value swallow the next word; flags do not.
  const auto values = bash->substr(bash->find("_prog_value_options()"));
  EXPECT_NE(values.find("'submit') echo '--server'"), std::string::npos) << values;
  EXPECT_EQ(values.find("--follow"), std::string::npos) << values;
  const auto fish = completion_script(t.app, "prog", "fish");
  ASSERT_TRUE(fish);
  EXPECT_NE(fish->find("__fish_seen_subcommand_from submit' -l follow"), std::string::npos) << *fish;
  EXPECT_NE(fish->find("__fish_complete_suffix .yaml"), std::string::npos);
  const auto zsh = completion_script(t.app, "prog", "zsh");
  ASSERT_TRUE(zsh);
  EXPECT_NE(zsh->find("bashcompinit"), std::string::npos);
  EXPECT_FALSE(completion_script(t.app, "prog", "tcsh"));
}

}  // namespace
}  // namespace kfleet::cli_support
