// Baselines (with their history) and fleet regression runs. The code is shared/fleet.inc, which
// both backends compile.
#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/fleet.inc"

}  // namespace kfleet::store::pg
