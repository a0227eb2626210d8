// kfleet-gce-startup-script CONFIG ZONE: prints the startup script kfleetd's gce provisioner
// gives an instance in ZONE, for the fleet's enrolment token (CONFIG's enrol_token). Used by
// scripts/package-root-check.sh to run the very script a VM would, in a Debian 12 root.
#include <iostream>

#include "kfleet/provision_gce/gce_provisioner.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: kfleet-gce-startup-script CONFIG.json ZONE\n";
    return 2;
  }
  auto c = kfleet::provision::load_gce_config(argv[1]);
  if (!c) {
    std::cerr << c.error().message << "\n";
    return 1;
  }
  if (auto why = kfleet::provision::gce_config_problem(*c)) {
    std::cerr << argv[1] << ": " << *why << "\n";
    return 1;
  }
  std::cout << kfleet::provision::gce_startup_script(*c, argv[2]);
  return 0;
}
