#include "cloud_messages.hpp"

#include <algorithm>
#include <cctype>

namespace kfleet::provision::detail {

std::optional<Outcome> outcome_of_script_word(const std::string& word) {
  if (word == "ok") return Outcome::ok;
  if (word == "stockout") return Outcome::stockout;
  if (word == "unsupported") return Outcome::unsupported;
  if (word == "quota") return Outcome::quota;
  if (word == "auth") return Outcome::fatal;
  if (word == "throttle") return Outcome::transient;
  return std::nullopt;
}

bool is_gcp_location(const std::string& region) {
  // [a-z]+-[a-z]+[0-9]+ optionally followed by -[a-z]
  std::size_t i = 0;
  const auto word = [&] {
    const std::size_t b = i;
    while (i < region.size() && std::islower(static_cast<unsigned char>(region[i]))) ++i;
    return i > b;
  };
  if (!word() || i >= region.size() || region[i++] != '-' || !word()) return false;
  const std::size_t digits = i;
  while (i < region.size() && std::isdigit(static_cast<unsigned char>(region[i]))) ++i;
  if (i == digits) return false;
  if (i == region.size()) return true;
  return i + 2 == region.size() && region[i] == '-' && std::islower(static_cast<unsigned char>(region[i + 1]));
}

std::string instance_type_for(const std::string& gpu_class, const std::string& region) {
  std::string g = gpu_class;
  std::transform(g.begin(), g.end(), g.begin(), [](unsigned char c) { return std::toupper(c); });
  if (is_gcp_location(region)) {
    if (g == "L4") return "g2-standard-4";
    if (g == "A100") return "a2-highgpu-1g";
    if (g == "H100") return "a3-highgpu-8g";
    if (g == "H200") return "a3-ultragpu-8g";
    return "sim-" + gpu_class;
  }
  if (g == "L4") return "g6.xlarge";
  if (g == "A10G") return "g5.xlarge";
  if (g == "T4") return "g4dn.xlarge";
  if (g == "L40S") return "g6e.xlarge";
  if (g == "A100") return "p4d.24xlarge";
  if (g == "H100") return "p5.48xlarge";
  if (g == "H200") return "p5en.48xlarge";
  return "sim." + gpu_class;
}

std::string zone_of(const std::string& region) {
  if (!region.empty() && std::isdigit(static_cast<unsigned char>(region.back())))
    return region + (is_gcp_location(region) ? "-a" : "a");
  return region;
}

namespace {

// Compute Engine's operation error texts ("code: message"), as provision_gce classifies them.
std::string gce_message(const CloudAnswer& a, const std::string& zone) {
  const std::string where = "projects/kfleet-sim/zones/" + zone;
  if (a.word == "stockout")
    return "ZONE_RESOURCE_POOL_EXHAUSTED: The zone '" + where +
           "' does not have enough resources available to fulfill the request.  Try a different "
           "zone, or try again later.";
  if (a.word == "unsupported")
    return "invalid: Invalid value for field 'resource.machineType': 'zones/" + zone + "/machineTypes/" +
           a.instance_type + "'. Machine type with name '" + a.instance_type + "' does not exist in zone '" +
           zone + "'.";
  if (a.word == "quota")
    return "QUOTA_EXCEEDED: Quota 'GPUS_ALL_REGIONS' exceeded.  Limit: " + std::to_string(a.instance_limit) +
           ".0 globally.";
  if (a.word == "auth")
    return "forbidden: Required 'compute.instances.create' permission for '" + where + "/instances/'";
  if (a.word == "throttle") return "rateLimitExceeded: Rate Limit Exceeded";
  return "";
}

}  // namespace

std::string cloud_message(const CloudAnswer& a) {
  const std::string az = zone_of(a.region);
  if (is_gcp_location(a.region)) return gce_message(a, az);
  if (a.word == "stockout")
    return "InsufficientInstanceCapacity: We currently do not have sufficient " + a.instance_type +
           " capacity in the Availability Zone you requested (" + az +
           "). Our system will be working on provisioning additional capacity.";
  if (a.word == "unsupported")
    return "Unsupported: Your requested instance type (" + a.instance_type +
           ") is not supported in your requested Availability Zone (" + az +
           "). Please retry your request by not specifying an Availability Zone or choosing "
           "another one.";
  if (a.word == "quota")
    return "VcpuLimitExceeded: You have requested more vCPU capacity than your current vCPU "
           "limit of " + std::to_string(a.vcpu_limit) +
           " allows for the instance bucket that the specified instance type belongs to. Please "
           "visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this "
           "limit.";
  if (a.word == "auth") return "AuthFailure: AWS was not able to validate the provided access credentials";
  if (a.word == "throttle") return "RequestLimitExceeded: Request limit exceeded.";
  return "";
}

}  // namespace kfleet::provision::detail
