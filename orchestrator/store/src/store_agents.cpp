// Agents and region blocks. The code is shared/agents.inc, which both backends compile.
#include <string>

#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

#include "shared/agents.inc"

}  // namespace kfleet::store::sqlite
