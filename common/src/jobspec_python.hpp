#pragma once
// kernel.language triton | torch (kernels/harness/PYTHON.md): the rules that tie
// a Python kernel's language to its sources, its family and the rest of the spec, checked after
// the spec is parsed so each issue lands at the node it is about (file:line:col).
#include <string>

#include "spec_yaml.hpp"

namespace kfleet::spec {

// Issues for a spec whose language and sources, family, defines, flags, timing, target or
// profile do not go together; `root` is the document's node.
void check_kernel_language(Issues& is, const YAML::Node& root, const JobSpec& spec);

}  // namespace kfleet::spec
