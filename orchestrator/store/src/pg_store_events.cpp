// Event queries, orchestrator job events, and content-addressed bundles. The code is
// shared/events.inc, which both backends compile.
#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/events.inc"

}  // namespace kfleet::store::pg
