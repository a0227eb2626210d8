// API tokens (hashes only) and the audit log. The code is shared/tokens.inc, which both backends
// compile.
#include "sqlite_store.hpp"

namespace kfleet::store::sqlite {

#include "shared/tokens.inc"

}  // namespace kfleet::store::sqlite
