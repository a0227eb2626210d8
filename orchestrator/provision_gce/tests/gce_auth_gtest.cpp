// The service-account JWT against an RSA key made at test time by the openssl CLI (the
// signature checked by `openssl dgst -verify`), and the token sources against the fake token
// endpoint and metadata server: caching until expiry, refusal as a fatal reason.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "fake_gce.hpp"
#include "kfleet/provision_gce/gce_auth.hpp"

namespace kfleet::provision {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string b64url_decode(const std::string& in) {
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    int d = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
          : c == '-' ? 62 : c == '_' ? 63 : -1;
    if (d < 0) break;
    val = (val << 6) + d;
    bits += 6;
    if (bits >= 0) out += static_cast<char>((val >> bits) & 0xFF), bits -= 8;
  }
  return out;
}

class GceAuth : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfleet-gce-auth-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // A missing openssl CLI fails the test: the key must be made here, not checked in.
    ASSERT_EQ(std::system(("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out " +
                           (dir_ / "key.pem").string() + " 2>/dev/null && openssl pkey -in " +
                           (dir_ / "key.pem").string() + " -pubout -out " + (dir_ / "pub.pem").string())
                              .c_str()),
              0)
        << "the openssl CLI could not make an RSA key";
    key_json_ = {{"type", "service_account"}, {"project_id", "kfleet-test"},
                 {"private_key_id", "0123456789abcdef"}, {"private_key", read(dir_ / "key.pem")},
                 {"client_email", "kfleetd@kfleet-test.iam.gserviceaccount.com"},
                 {"token_uri", "https://oauth2.googleapis.com/token"}};
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  json key_json_;
};

TEST_F(GceAuth, TheJwtIsSignedRs256AndOpensslVerifiesIt) {
  auto key = parse_service_account_key(key_json_.dump());
  ASSERT_TRUE(key.ok()) << key.error().message;
  auto jwt = make_signed_jwt(*key, kComputeScope, "https://oauth2.googleapis.com/token", 1'700'000'000);
  ASSERT_TRUE(jwt.ok()) << jwt.error().message;
  const auto dot1 = jwt->find('.'), dot2 = jwt->rfind('.');
  ASSERT_NE(dot1, dot2);
  const json header = json::parse(b64url_decode(jwt->substr(0, dot1)));
  const json claims = json::parse(b64url_decode(jwt->substr(dot1 + 1, dot2 - dot1 - 1)));
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(header["typ"], "JWT");
  EXPECT_EQ(header["kid"], "0123456789abcdef");
  EXPECT_EQ(claims["iss"], "kfleetd@kfleet-test.iam.gserviceaccount.com");
  EXPECT_EQ(claims["scope"], "https://www.googleapis.com/auth/compute");
  EXPECT_EQ(claims["aud"], "https://oauth2.googleapis.com/token");
  EXPECT_EQ(claims["iat"], 1'700'000'000);
  EXPECT_EQ(claims["exp"], 1'700'003'600);
  EXPECT_EQ(jwt->find('='), std::string::npos) << "base64url carries no padding";

  std::ofstream(dir_ / "input", std::ios::binary) << jwt->substr(0, dot2);
  std::ofstream(dir_ / "sig", std::ios::binary) << b64url_decode(jwt->substr(dot2 + 1));
  const std::string verify = "openssl dgst -sha256 -verify " + (dir_ / "pub.pem").string() + " -signature " +
                             (dir_ / "sig").string() + " " + (dir_ / "input").string() + " >/dev/null";
  EXPECT_EQ(std::system(verify.c_str()), 0) << "openssl does not accept the RS256 signature";
  // A changed claim no longer verifies: the check above can fail.
  std::ofstream(dir_ / "input", std::ios::binary) << jwt->substr(0, dot2) << "x";
  EXPECT_NE(std::system((verify + " 2>&1").c_str()), 0);
}

TEST_F(GceAuth, KeyFilesThatCannotWorkAreRefusedWithWhatToFix) {
  auto bad_type = parse_service_account_key(R"({"type":"authorized_user"})");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.error().message.find("service_account"), std::string::npos);
  EXPECT_FALSE(parse_service_account_key("not json").ok());
  auto k = key_json_;
  k["private_key"] = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";
  auto key = parse_service_account_key(k.dump());
  ASSERT_TRUE(key.ok());
  auto jwt = make_signed_jwt(*key, kComputeScope, "aud", 1);
  ASSERT_FALSE(jwt.ok());
  EXPECT_NE(jwt.error().message.find("PEM"), std::string::npos) << jwt.error().message;
}

TEST_F(GceAuth, TokensAreFetchedOnceAndCachedUntilShortlyBeforeExpiry) {
  testing::FakeGce fake;
  fake.set_token_lifetime_s(600);
  auto clock = std::make_shared<ManualClock>();
  auto key = parse_service_account_key(key_json_.dump());
  ASSERT_TRUE(key.ok());
  auto src = make_service_account_token_source(*key, fake.token_url(), clock);
  auto t1 = src->token();
  ASSERT_TRUE(t1.ok()) << t1.error().message;
  EXPECT_EQ(*t1, "ya29.fake-1");
  clock->advance_ms(500'000);
  EXPECT_EQ(*src->token(), "ya29.fake-1");
  EXPECT_EQ(fake.tokens_issued(), 1);
  clock->advance_ms(50'000);  // 550 s of 600: within the renewal margin
  EXPECT_EQ(*src->token(), "ya29.fake-2");
  src->invalidate();
  EXPECT_EQ(*src->token(), "ya29.fake-3");
  EXPECT_EQ(src->fetches(), 3);
  for (const auto& p : fake.problems()) ADD_FAILURE() << p;
}

TEST_F(GceAuth, ARefusedKeyIsFatalAndSaysWhy) {
  testing::FakeGce fake;
  fake.refuse_tokens(true);
  auto key = parse_service_account_key(key_json_.dump());
  ASSERT_TRUE(key.ok());
  auto src = make_service_account_token_source(*key, fake.token_url(), std::make_shared<SystemClock>());
  TokenError why;
  auto t = src->token(&why);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(why.outcome, Outcome::fatal);
  EXPECT_NE(why.message.find("invalid_grant"), std::string::npos) << why.message;
  EXPECT_NE(why.message.find("Invalid JWT Signature"), std::string::npos) << why.message;
}

TEST_F(GceAuth, AnUnreachableTokenEndpointIsTransient) {
  auto key = parse_service_account_key(key_json_.dump());
  ASSERT_TRUE(key.ok());
  std::string url;
  {
    testing::FakeGce gone;  // a port that was ours a moment ago and is closed now
    url = gone.token_url();
  }
  auto src = make_service_account_token_source(*key, url, std::make_shared<SystemClock>());
  TokenError why;
  ASSERT_FALSE(src->token(&why).ok());
  EXPECT_EQ(why.outcome, Outcome::transient) << why.message;
}

TEST_F(GceAuth, TheMetadataServerIsAskedWithItsHeader) {
  testing::FakeGce fake;
  auto src = make_metadata_token_source(fake.metadata_token_url(), std::make_shared<SystemClock>());
  auto t = src->token();
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t, "ya29.fake-1");
  EXPECT_EQ(*src->token(), "ya29.fake-1");
  ASSERT_EQ(fake.requests().size(), 1u);
  EXPECT_EQ(fake.requests()[0].metadata_flavor, "Google");
  for (const auto& p : fake.problems()) ADD_FAILURE() << p;
}

}  // namespace
}  // namespace kfleet::provision
