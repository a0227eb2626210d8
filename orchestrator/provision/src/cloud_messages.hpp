#pragma once
// What a simulated request answers, in the words AWS EC2 uses, so users and tests see the
// same text a real fleet would show them.
#include <optional>
#include <string>

#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision::detail {

// "ok" "stockout" "unsupported" "quota" "auth" "throttle" -> Outcome; nullopt for others.
std::optional<Outcome> outcome_of_script_word(const std::string& word);

// "L4" -> "g6.xlarge"; the instance type a request for that class would launch.
std::string instance_type_for(const std::string& gpu_class);

// The zone a request in `region` lands in: "us-east-1" -> "us-east-1a"; zones stay as they are.
std::string zone_of(const std::string& region);

struct CloudAnswer {
  std::string word;          // the script word it came from
  std::string instance_type;
  std::string region;
  int vcpu_limit = 0;
};
std::string cloud_message(const CloudAnswer& a);

}  // namespace kfleet::provision::detail
