#pragma once
// kfleet_bench --soak: what a fleet's history costs a user. See soak.cpp.
#include <string>

namespace kfleet::bench {

int run_soak(int argc, char** argv, const std::string& kfleetd_bin);

}  // namespace kfleet::bench
