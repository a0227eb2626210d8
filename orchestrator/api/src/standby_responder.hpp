#pragma once
// What a standby kfleetd serves while another one leads: every request is answered 503 with
// `X-Kfleet-Role: standby` and the leader's URL (in a Location header and the JSON body), so
// agents and the CLI given several URLs move on to the leader, and a person sees where it is.
// Plain HTTP on its own thread; it frees the port when the standby takes over.
#include <cstdint>
#include <memory>
#include <string>

#include "kfleet/common/result.hpp"

namespace kfleet::api {

class StandbyResponder {
 public:
  // Binds address:port (0: any free port); returns the bound port.
  static Result<std::unique_ptr<StandbyResponder>> start(const std::string& address,
                                                         std::uint16_t port);
  ~StandbyResponder();  // stops and closes the port
  std::uint16_t port() const;
  void set_leader(const std::string& url, std::int64_t epoch);

 private:
  struct Impl;
  explicit StandbyResponder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace kfleet::api
