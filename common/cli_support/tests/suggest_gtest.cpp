// The suggestions and completion tables, on a CLI11 tree shaped like kfleet's.
#include <gtest/gtest.h>

#include <sstream>

#include "kfleet/cli_support/parse.hpp"

namespace kfleet::cli_support {
namespace {

struct Tree {
  CLI::App app{"test program", "prog"};
  std::string server, file;
  bool follow = false;
  std::vector<std::string> files;
  Tree() {
    app.require_subcommand(0, 1);
    app.fallthrough();
    app.add_option("--server", server, "URL");
    std::string hidden;
    app.add_option("--token", hidden)->group("");
    auto* submit = app.add_subcommand("submit", "send jobs");
    submit->add_option("files", files, "job YAML files");
    submit->add_flag("--follow", follow, "follow");
    auto* token = app.add_subcommand("token", "tokens");
    token->require_subcommand(1);
    token->add_subcommand("create", "make one")->add_option("--out", file, "file");
    token->add_subcommand("revoke", "revoke one");
    app.add_subcommand("status", "jobs");
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
