#pragma once
// Section parsers of the job spec, split by file so each stays small. Each fills `out` with what
// it could read and records every problem in `is`.
#include "spec_yaml.hpp"

namespace kfleet::spec {

// `has_parent` lets compare_to: parent be checked against the job's own parent field.
void parse_gates(Issues& is, const YAML::Node& n, const YAML::Mark& at, bool has_parent,
                 GatesSpec& out);

}  // namespace kfleet::spec
