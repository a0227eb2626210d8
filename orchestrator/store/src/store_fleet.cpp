// Baselines (with their history) and fleet regression runs. The code is shared/fleet.inc, which
// both backends compile.
#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

#include "shared/fleet.inc"

}  // namespace kfleet::store::sqlite
