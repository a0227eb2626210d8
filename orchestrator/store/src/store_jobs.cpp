// Jobs: submission, queries and state changes. The code is shared/jobs.inc, which both backends
// compile.
#include <set>

#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

#include "shared/jobs.inc"

}  // namespace kfleet::store::sqlite
