// Row <-> record mapping of the PostgreSQL store: shared/records.inc, which both backends
// compile.
#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/records.inc"

}  // namespace kfleet::store::pg
