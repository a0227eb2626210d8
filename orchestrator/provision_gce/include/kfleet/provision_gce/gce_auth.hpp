#pragma once
// OAuth2 access tokens for Compute Engine, as Google issues them to a program with no SDK:
// - a service-account key file: a JWT signed RS256 (OpenSSL) exchanged at the token endpoint
//   (grant type jwt-bearer), or
// - the metadata server, when kfleetd itself runs on Compute Engine.
// Tokens are cached until shortly before they expire. Thread-safe.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "kfleet/common/clock.hpp"
#include "kfleet/common/result.hpp"
#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision {

struct ServiceAccountKey {
  std::string client_email;
  std::string private_key;     // PEM, PKCS#8
  std::string private_key_id;  // the JWT's "kid"
  std::string token_uri;       // "https://oauth2.googleapis.com/token"
};

// Reads a key file as the Cloud Console downloads it ({"type": "service_account", ...}).
Result<ServiceAccountKey> parse_service_account_key(std::string_view json_text);
Result<ServiceAccountKey> load_service_account_key(const std::string& path);

// base64url without padding (RFC 7515).
std::string base64url(std::string_view bytes);

// header.claims.signature with iss = client_email, scope, aud = audience, iat = now_s,
// exp = now_s + lifetime_s, signed RS256 with the key's private key.
Result<std::string> make_signed_jwt(const ServiceAccountKey& key, const std::string& scope,
                                    const std::string& audience, std::int64_t now_s, int lifetime_s = 3600);

// Why a token could not be had, as the provisioner's outcome: a refused key is fatal, an
// endpoint that is down or throttling is transient.
struct TokenError {
  Outcome outcome = Outcome::fatal;
  std::string message;
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // A valid access token, from the cache while it has more than a minute left.
  virtual Result<std::string> token(TokenError* why = nullptr) = 0;
  // Forgets the cached token (after Compute Engine answered 401 with it).
  virtual void invalidate() = 0;
  // How many tokens were fetched (for tests of the cache).
  virtual int fetches() const = 0;
};

inline constexpr const char* kComputeScope = "https://www.googleapis.com/auth/compute";
inline constexpr const char* kMetadataTokenUrl =
    "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token";

// token_url empty: the key's token_uri.
std::unique_ptr<TokenSource> make_service_account_token_source(ServiceAccountKey key, std::string token_url,
                                                               ClockPtr clock);
// GET token_url with "Metadata-Flavor: Google".
std::unique_ptr<TokenSource> make_metadata_token_source(std::string token_url, ClockPtr clock);

}  // namespace kfleet::provision
