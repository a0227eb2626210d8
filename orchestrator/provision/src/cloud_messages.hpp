#pragma once
// What a simulated request answers, in the words the cloud that owns the location uses (AWS EC2
// for "us-east-1", Compute Engine for "us-central1-a"), so users and tests see the same text a
// real fleet would show them.
#include <optional>
#include <string>

#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision::detail {

// "ok" "stockout" "unsupported" "quota" "auth" "throttle" -> Outcome; nullopt for others.
std::optional<Outcome> outcome_of_script_word(const std::string& word);

// True for Google Cloud's region and zone names ("us-central1", "southamerica-east1-c"): the
// number follows the word without a dash. AWS names put a dash before it ("us-east-1").
bool is_gcp_location(const std::string& region);

// The instance (machine) type a request for that class would launch there:
// "L4" -> "g6.xlarge" in an AWS region, "g2-standard-4" in a Google Cloud zone.
std::string instance_type_for(const std::string& gpu_class, const std::string& region);

// The zone a request in `region` lands in: "us-east-1" -> "us-east-1a", "us-central1" ->
// "us-central1-a"; zones stay as they are.
std::string zone_of(const std::string& region);

struct CloudAnswer {
  std::string word;          // the script word it came from
  std::string instance_type;
  std::string region;
  int vcpu_limit = 0;      // AWS counts the limit in vCPUs
  int instance_limit = 0;  // Compute Engine's GPU quota: one GPU per simulated instance
};
std::string cloud_message(const CloudAnswer& a);

}  // namespace kfleet::provision::detail
