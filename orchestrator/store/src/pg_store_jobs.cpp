// Jobs: submission, queries and state changes. The code is shared/jobs.inc, which both backends
// compile.
#include <set>

#include "pg_store.hpp"

namespace kfleet::store::pg {

#include "shared/jobs.inc"

}  // namespace kfleet::store::pg
