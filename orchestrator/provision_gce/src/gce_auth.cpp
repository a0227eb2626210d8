#include "kfleet/provision_gce/gce_auth.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "curl_call.hpp"
#include "kfleet/provision_gce/gce_error.hpp"

namespace kfleet::provision {
namespace {

constexpr std::chrono::milliseconds kTokenTimeout{20000};
constexpr std::int64_t kRefreshMarginMs = 60'000;  // a token this close to expiry is renewed

// Parses {"access_token", "expires_in"} and classifies failures.
Result<std::pair<std::string, std::int64_t>> read_token_answer(const Result<gce::Answer>& a,
                                                               const std::string& where, TokenError* why) {
  auto fail = [&](Outcome o, std::string msg) -> Error {
    if (why) *why = TokenError{o, msg};
    return make_error(o == Outcome::transient ? Errc::unavailable : Errc::unauthorized, std::move(msg));
  };
  if (!a) return fail(Outcome::transient, "token endpoint " + where + " unreachable: " + a.error().message);
  if (a->status != 200) {
    auto f = classify_gce_http(a->status, a->body);
    // The token endpoint answers 400 invalid_grant for a revoked key or a bad signature: that
    // is an auth failure, not a request to retry.
    Outcome o = f.outcome == Outcome::transient ? Outcome::transient : Outcome::fatal;
    return fail(o, "token endpoint " + where + " refused the credentials (HTTP " + std::to_string(a->status) +
                       "): " + f.message);
  }
  auto doc = nlohmann::json::parse(a->body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("access_token") || !doc["access_token"].is_string())
    return fail(Outcome::fatal, "token endpoint " + where + " answered without an access_token");
  std::int64_t expires_in = 3600;
  if (doc.contains("expires_in") && doc["expires_in"].is_number_integer()) expires_in = doc["expires_in"].get<std::int64_t>();
  // Google grants an hour; a lifetime past a day (or below zero) is not believed, and keeps the
  // expiry time from overflowing.
  expires_in = std::clamp<std::int64_t>(expires_in, 0, 86400);
  return std::pair{doc["access_token"].get<std::string>(), expires_in};
}

class CachedSource : public TokenSource {
 public:
  explicit CachedSource(ClockPtr clock) : clock_(std::move(clock)) {}
  Result<std::string> token(TokenError* why) override {
    std::lock_guard lock(mutex_);
    const TimeMs now = clock_->now_ms();
    if (!cached_.empty() && now + kRefreshMarginMs < expires_ms_) return cached_;
    auto t = fetch(now, why);
    if (!t) return t.error();
    ++fetches_;
    cached_ = t->first;
    expires_ms_ = now + t->second * 1000;
    return cached_;
  }
  void invalidate() override {
    std::lock_guard lock(mutex_);
    cached_.clear();
  }
  int fetches() const override {
    std::lock_guard lock(mutex_);
    return fetches_;
  }

 protected:
  virtual Result<std::pair<std::string, std::int64_t>> fetch(TimeMs now, TokenError* why) = 0;
  ClockPtr clock_;

 private:
  mutable std::mutex mutex_;
  std::string cached_;
  TimeMs expires_ms_ = 0;
  int fetches_ = 0;
};

class ServiceAccountSource final : public CachedSource {
 public:
  ServiceAccountSource(ServiceAccountKey key, std::string url, ClockPtr clock)
      : CachedSource(std::move(clock)), key_(std::move(key)), url_(std::move(url)) {}

 protected:
  Result<std::pair<std::string, std::int64_t>> fetch(TimeMs now, TokenError* why) override {
    // The audience is Google's token URI even when the endpoint is overridden (tests, proxies).
    auto jwt = make_signed_jwt(key_, kComputeScope,
                               key_.token_uri.empty() ? "https://oauth2.googleapis.com/token" : key_.token_uri,
                               now / 1000);
    if (!jwt) {
      if (why) *why = TokenError{Outcome::fatal, jwt.error().message};
      return jwt.error();
    }
    const std::string body = "grant_type=" + gce::form_escape("urn:ietf:params:oauth:grant-type:jwt-bearer") +
                             "&assertion=" + gce::form_escape(*jwt);
    auto a = gce::call("POST", url_, {"Content-Type: application/x-www-form-urlencoded"}, body, kTokenTimeout);
    return read_token_answer(a, url_, why);
  }

 private:
  ServiceAccountKey key_;
  std::string url_;
};

class MetadataSource final : public CachedSource {
 public:
  MetadataSource(std::string url, ClockPtr clock) : CachedSource(std::move(clock)), url_(std::move(url)) {}

 protected:
  Result<std::pair<std::string, std::int64_t>> fetch(TimeMs, TokenError* why) override {
    auto a = gce::call("GET", url_, {"Metadata-Flavor: Google"}, "", kTokenTimeout);
    return read_token_answer(a, url_, why);
  }

 private:
  std::string url_;
};

}  // namespace

Result<ServiceAccountKey> parse_service_account_key(std::string_view json_text) {
  auto doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return make_error(Errc::invalid_argument, "a service-account key file is a JSON object");
  if (doc.value("type", "") != "service_account")
    return make_error(Errc::invalid_argument,
                      "the key file's type is '" + doc.value("type", std::string()) +
                          "', not service_account: download a JSON key of a service account "
                          "(IAM > Service accounts > Keys)");
  ServiceAccountKey k;
  k.client_email = doc.value("client_email", "");
  k.private_key = doc.value("private_key", "");
  k.private_key_id = doc.value("private_key_id", "");
  k.token_uri = doc.value("token_uri", "https://oauth2.googleapis.com/token");
  if (k.client_email.empty() || k.private_key.find("PRIVATE KEY") == std::string::npos)
    return make_error(Errc::invalid_argument, "the key file needs client_email and a PEM private_key");
  return k;
}

Result<ServiceAccountKey> load_service_account_key(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(Errc::not_found, "cannot read the service-account key file " + path);
  std::ostringstream s;
  s << in.rdbuf();
  auto k = parse_service_account_key(s.str());
  if (!k) return make_error(k.error().code, path + ": " + k.error().message);
  return k;
}

std::string base64url(std::string_view bytes) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += abc[(v >> 6) & 63];
    out += abc[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += abc[(v >> 6) & 63];
  }
  return out;
}

Result<std::string> make_signed_jwt(const ServiceAccountKey& key, const std::string& scope,
                                    const std::string& audience, std::int64_t now_s, int lifetime_s) {
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key.private_key_id.empty()) header["kid"] = key.private_key_id;
  const nlohmann::json claims = {{"iss", key.client_email}, {"scope", scope}, {"aud", audience},
                                 {"iat", now_s}, {"exp", now_s + lifetime_s}};
  const std::string signing_input = base64url(header.dump()) + "." + base64url(claims.dump());

  BIO* bio = BIO_new_mem_buf(key.private_key.data(), static_cast<int>(key.private_key.size()));
  if (!bio) return make_error(Errc::internal, "BIO_new_mem_buf failed");
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!pkey)
    return make_error(Errc::invalid_argument,
                      "the service account's private_key is not a PEM private key OpenSSL can read");
  if (EVP_PKEY_base_id(pkey) != EVP_PKEY_RSA) {
    EVP_PKEY_free(pkey);
    return make_error(Errc::invalid_argument, "the service account's private_key is not an RSA key (RS256 needs one)");
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::string sig;
  bool ok = ctx && EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, pkey) == 1;
  std::size_t len = 0;
  ok = ok && EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(signing_input.data()),
                            signing_input.size()) == 1;
  if (ok) {
    sig.resize(len);
    ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                        reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) == 1;
    sig.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  if (!ok) return make_error(Errc::internal, "signing the JWT with RS256 failed");
  return signing_input + "." + base64url(sig);
}

std::unique_ptr<TokenSource> make_service_account_token_source(ServiceAccountKey key, std::string token_url,
                                                               ClockPtr clock) {
  if (token_url.empty()) token_url = key.token_uri;
  return std::make_unique<ServiceAccountSource>(std::move(key), std::move(token_url), std::move(clock));
}

std::unique_ptr<TokenSource> make_metadata_token_source(std::string token_url, ClockPtr clock) {
  if (token_url.empty()) token_url = kMetadataTokenUrl;
  return std::make_unique<MetadataSource>(std::move(token_url), std::move(clock));
}

}  // namespace kfleet::provision
