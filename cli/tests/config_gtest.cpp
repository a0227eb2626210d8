#include <map>

#include <gtest/gtest.h>

#include "kfleet/cli/config.hpp"

namespace kfleet::cli {
namespace {

struct World {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  EnvLookup env_fn() {
    return [this](const std::string& k) -> std::optional<std::string> {
      auto it = env.find(k);
      return it == env.end() ? std::nullopt : std::optional(it->second);
    };
  }
  FileReader file_fn() {
    return [this](const std::string& p) -> std::optional<std::string> {
      auto it = files.find(p);
      return it == files.end() ? std::nullopt : std::optional(it->second);
    };
  }
  Result<CliConfig> resolve(ConfigFlags f = {}) { return resolve_config(f, env_fn(), file_fn()); }
};

TEST(Config, DefaultsWhenNothingIsSet) {
  World w;
  w.env["HOME"] = "/home/u";
  auto c = w.resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->server, "http://127.0.0.1:8470");
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->config_path, "");
}

TEST(Config, FlagBeatsEnvBeatsFile) {
  World w;
  w.env["HOME"] = "/home/u";
  w.files["/home/u/.config/kfleet/config.yaml"] = "server: http://file:1\ntoken: filetok\n";
  auto from_file = w.resolve();
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->server, "http://file:1");
  EXPECT_EQ(from_file->token, "filetok");
  EXPECT_EQ(from_file->config_path, "/home/u/.config/kfleet/config.yaml");

  w.env["KFLEET_SERVER"] = "http://env:2";
  w.env["KFLEET_TOKEN"] = "envtok";
  auto from_env = w.resolve();
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->server, "http://env:2");
  EXPECT_EQ(from_env->token, "envtok");

  auto from_flags = w.resolve({"flaghost:3/", "flagtok", ""});
  ASSERT_TRUE(from_flags.ok());
  EXPECT_EQ(from_flags->server, "http://flaghost:3");
  EXPECT_EQ(from_flags->token, "flagtok");
}

TEST(Config, ExplicitConfigFileMustExist) {
  World w;
  auto c = w.resolve({"", "", "/nope.yaml"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("/nope.yaml"), std::string::npos);

  w.env["KFLEET_CONFIG"] = "/etc/kf.yaml";
  w.files["/etc/kf.yaml"] = "token: t\n";
  auto via_env = w.resolve();
  ASSERT_TRUE(via_env.ok());
  EXPECT_EQ(via_env->token, "t");
}

TEST(Config, XdgConfigHomeWins) {
  World w;
  w.env["HOME"] = "/home/u";
  w.env["XDG_CONFIG_HOME"] = "/x";
  w.files["/x/kfleet/config.yaml"] = "server: xdg:9\n";
  auto c = w.resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->server, "http://xdg:9");
}

TEST(Config, UnknownKeyAndBadYamlNameTheFile) {
  World w;
  w.files["/c.yaml"] = "sever: http://typo\n";
  auto typo = w.resolve({"", "", "/c.yaml"});
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.error().code, Errc::invalid_argument);
  EXPECT_NE(typo.error().message.find("/c.yaml:1"), std::string::npos);
  EXPECT_NE(typo.error().message.find("sever"), std::string::npos);

  w.files["/c.yaml"] = "server: [unclosed\n";
  auto broken = w.resolve({"", "", "/c.yaml"});
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("/c.yaml"), std::string::npos);
}

TEST(Config, NormalizesServerUrls) {
  EXPECT_EQ(normalize_server_url("https://k.example/"), "https://k.example");
  EXPECT_EQ(normalize_server_url("10.0.0.1:8470"), "http://10.0.0.1:8470");
  // A leader and its standbys, comma-separated: each one normalised.
  EXPECT_EQ(normalize_server_url("10.0.0.1:8470/, https://k2.example/ ,"),
            "http://10.0.0.1:8470,https://k2.example");
}

}  // namespace
}  // namespace kfleet::cli
