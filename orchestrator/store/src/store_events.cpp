// Event queries, orchestrator job events, and content-addressed bundles. The code is
// shared/events.inc, which both backends compile.
#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

#include "shared/events.inc"

}  // namespace kfleet::store::sqlite
