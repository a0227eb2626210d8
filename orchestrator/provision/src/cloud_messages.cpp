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

std::string instance_type_for(const std::string& gpu_class) {
  std::string g = gpu_class;
  std::transform(g.begin(), g.end(), g.begin(), [](unsigned char c) { return std::toupper(c); });
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
  if (!region.empty() && std::isdigit(static_cast<unsigned char>(region.back()))) return region + "a";
  return region;
}

std::string cloud_message(const CloudAnswer& a) {
  const std::string az = zone_of(a.region);
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
