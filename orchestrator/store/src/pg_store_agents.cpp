// Agents and region blocks. The code is shared/agents.inc, which both backends compile.
#include <string>

#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/agents.inc"

}  // namespace kfleet::store::pg
