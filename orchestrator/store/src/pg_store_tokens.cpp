// API tokens (hashes only) and the audit log. The code is shared/tokens.inc, which both backends
// compile.
#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/tokens.inc"

}  // namespace kfleet::store::pg
