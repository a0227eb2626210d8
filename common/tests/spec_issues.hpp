#pragma once
// The issue a job file's parse names for one field (nullptr when there is none).
#include <string>

#include "kfleet/common/jobspec.hpp"

namespace kfleet::testing {

inline const SpecIssue* find_issue(const SpecParse& p, const std::string& field) {
  for (const auto& i : p.issues)
    if (i.field == field) return &i;
  return nullptr;
}

}  // namespace kfleet::testing
