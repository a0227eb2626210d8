#pragma once
// Several store changes in one transaction, for the backends' set_job_states.
#include <cstddef>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet::store {

// Runs one(change) for each change inside db.transaction() and returns the results in order.
// A change that one() refuses must write nothing before refusing, so its refusal stays its own
// result beside the others; a failure of the transaction itself (a database error) rolls all
// of them back and becomes every change's result.
template <class Db, class Change, class One>
auto each_in_one_transaction(Db& db, const std::vector<Change>& changes, One&& one)
    -> std::vector<decltype(one(changes.front()))> {
  std::vector<decltype(one(changes.front()))> out;
  out.reserve(changes.size());
  auto r = db.transaction([&]() -> Result<void> {
    for (const auto& c : changes) out.push_back(one(c));
    return ok_result();
  });
  if (!r) {
    out.clear();
    for (std::size_t i = 0; i < changes.size(); ++i) out.push_back(r.error());
  }
  return out;
}

}  // namespace kfleet::store
