#pragma once
// One fleet over several clouds: routes each capacity request to the provisioner that lists
// the region or zone (Compute Engine zones to gce, AWS regions to terraform), and each release
// to the provisioner that started the instance. Static hosts need no provisioner: they enrol.
#include <string>
#include <vector>

#include "kfleet/provision/provisioner.hpp"

namespace kfleet::provision {

// Regions are matched exactly first, then by zone ("us-east-1a" to a provisioner listing
// "us-east-1", "us-central1" to one listing "us-central1-a"); the first provisioner that matches
// wins. Its name() is "multi", which keys region blocks; events name the routed provider.
ProvisionerPtr make_multi_provisioner(std::vector<ProvisionerPtr> members);

}  // namespace kfleet::provision
