#pragma once
// Who may make an API call: each route's access rule (http.hpp's Access) against the token the
// call shows, a client certificate on agent calls where kfleetd asks for one, and the rate
// limits on failed authentications (per client address) and on submissions (per token). The
// server checks every call here before any handler runs; both API threads (the control
// plane's and the read thread) call it.
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "http.hpp"
#include "kfleet/common/clock.hpp"

namespace kfleet::api {

// Token buckets: `per_minute` calls a minute per key, bursts up to `per_minute`, in the time of
// the clock it is given. Both API threads (the control plane's and the read thread) use them:
// each call takes the lock.
class RateLimiter {
 public:
  RateLimiter(int per_minute, ClockPtr clock) : per_minute_(per_minute), clock_(std::move(clock)) {}
  // Seconds to wait before the next call is allowed (0: allowed now; nothing is taken).
  int retry_after(const std::string& key) {
    if (per_minute_ <= 0) return 0;
    std::lock_guard lk(mu_);
    Bucket& b = refill(key);
    if (b.tokens >= 1.0) return 0;
    const double rate = per_minute_ / 60.0;
    return std::max(1, static_cast<int>(std::ceil((1.0 - b.tokens) / rate)));
  }
  void take(const std::string& key) {
    if (per_minute_ <= 0) return;
    std::lock_guard lk(mu_);
    Bucket& b = refill(key);
    b.tokens = std::max(0.0, b.tokens - 1.0);
  }

 private:
  struct Bucket {
    double tokens = 0;
    TimeMs at = 0;
  };
  Bucket& refill(const std::string& key) {
    const TimeMs now = clock_->now_ms();
    if (buckets_.size() > 50'000) buckets_.clear();  // bounded memory under a flood of keys
    auto [it, fresh] = buckets_.try_emplace(key);
    Bucket& b = it->second;
    if (fresh) {
      b.tokens = per_minute_;
    } else {
      const double secs = std::max<TimeMs>(0, now - b.at) / 1000.0;
      b.tokens = std::min<double>(per_minute_, b.tokens + secs * per_minute_ / 60.0);
    }
    b.at = now;
    return b;
  }
  int per_minute_;
  ClockPtr clock_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
};

struct AuthRules {
  bool metrics_open = false;              // kfleetd --metrics-open: /metrics without a token
  bool agents_need_client_cert = false;   // kfleetd --tls-client-ca: agent calls show a certificate
  int submit_per_minute = 0;              // per token; 0: no limit
  int auth_failures_per_minute = 0;       // per client address; 0: no limit
};

class Authorizer {
 public:
  // `clock`: the rate limits' time.
  Authorizer(const AuthRules& rules, const ClockPtr& clock)
      : rules_(rules), submit_limit_(rules.submit_per_minute, clock),
        auth_fail_limit_(rules.auth_failures_per_minute, clock) {}

  // Checks route r's access rule for the call in c, against cp's tokens; sets c.user or
  // c.agent_id. nullopt: go ahead; else the answer to send (401, 403 or 429, saying what to
  // fix). On the read thread (on_reader) the user comes from the tokens this leader has checked
  // already (ControlPlane::cached_user), the only part of cp read there.
  std::optional<Response> check(core::ControlPlane& cp, const Route& r, Ctx& c,
                                const std::string& peer, bool client_cert_ok, bool on_reader);

  // Whether calls from this address are being refused for its failed authentications.
  bool held_back(const std::string& peer) { return auth_fail_limit_.retry_after("ip:" + peer) > 0; }

 private:
  AuthRules rules_;
  RateLimiter submit_limit_;
  RateLimiter auth_fail_limit_;
};

}  // namespace kfleet::api
