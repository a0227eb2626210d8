#pragma once
// One change at a time (seed 001): a child submitted as parent + change records what differs
// from its parent, computed here from the two jobs themselves (never taken from the client's
// word), so every view can show the diff and the campaign's no-repeat map can list it.
#include <string>

#include <nlohmann/json.hpp>

#include "kfleet/common/bundle.hpp"

namespace kfleet::core {

// The change from (parent_spec, parent_bundle) to (child_spec, child_bundle); the specs are
// to_json(JobSpec). Shape:
//   {files:   [{path, status: replaced|added|removed, added_lines, removed_lines, diff}],
//    defines: {added: {K: V}, removed: {K: V}, changed: {K: {from, to}}},
//    flags:   {added: [..], removed: [..]},
//    other:   [{field, from, to}],        // any other spec field that differs (gates, ...)
//    summary: "kernel.defines +O_ACCUM_HALF=1; fa.cu +3 -2"}
// Name, parent, campaign and priority are not part of a change.
nlohmann::json job_change(const nlohmann::json& parent_spec, const Bundle& parent_bundle,
                          const nlohmann::json& child_spec, const Bundle& child_bundle);

// True when job_change() found nothing that differs.
bool change_is_empty(const nlohmann::json& change);

// One line saying what a change is, as job_change() puts in `summary`.
std::string change_summary(const nlohmann::json& change);

// A unified diff (3 lines of context) of two texts, "--- a/PATH" / "+++ b/PATH" headed; ""
// when they are equal. Line-based; a binary file is reported as one line.
std::string unified_diff(const std::string& before, const std::string& after,
                         const std::string& path);

}  // namespace kfleet::core
