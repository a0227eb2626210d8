#include "kfleet/common/result.hpp"

namespace kfleet {

const char* errc_name(Errc c) {
  switch (c) {
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::not_found: return "not_found";
    case Errc::conflict: return "conflict";
    case Errc::unauthorized: return "unauthorized";
    case Errc::forbidden: return "forbidden";
    case Errc::too_large: return "too_large";
    case Errc::unavailable: return "unavailable";
    case Errc::internal: return "internal";
  }
  return "internal";
}

}  // namespace kfleet
