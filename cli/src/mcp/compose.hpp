#pragma once
// A child job made from its parent and one change (seed 001): the parent's YAML with its
// defines and flags edited and its name and parent: set, and the parent's sources with some
// files replaced. Pure, so tests check it without a server.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/bundle.hpp"
#include "kfleet/common/result.hpp"

namespace kfleet::cli::mcp {

struct ChildChange {
  std::vector<BundleFile> files;                                 // replace these (same paths)
  std::vector<std::pair<std::string, std::string>> defines_set;  // add or change
  std::vector<std::string> defines_removed, flags_added, flags_removed;
  bool empty() const;
};

// The tool's `change` argument; the error names the field to fix.
Result<ChildChange> parse_change(const nlohmann::json& change);
// [{path, content}] as a bundle (paths checked as `kfleet submit` checks them).
Result<Bundle> bundle_from_files(const nlohmann::json& files);

struct Child {
  std::string yaml;
  Bundle bundle;
};
// Applies `c` to the parent. Refuses what cannot be one change to this parent: a file it does
// not have, removing a define or flag it does not set, adding a flag it already has.
Result<Child> compose_child(const std::string& parent_yaml, const Bundle& parent_bundle,
                            const std::string& child_name, const std::string& parent_name,
                            const ChildChange& c);

}  // namespace kfleet::cli::mcp
