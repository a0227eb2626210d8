// The small record helpers the store header declares, and the SQLite store's row <-> record
// mapping (shared/records.inc, which both backends compile).
#include <algorithm>

#include "sqlite_store.hpp"

namespace kfleet::store {

const char* to_string(AgentState s) {
  switch (s) {
    case AgentState::idle: return "idle";
    case AgentState::busy: return "busy";
    case AgentState::lost: return "lost";
    case AgentState::retired: return "retired";
  }
  return "unknown";
}

std::optional<AgentState> agent_state_from_string(std::string_view s) {
  for (AgentState a : {AgentState::idle, AgentState::busy, AgentState::lost, AgentState::retired})
    if (s == to_string(a)) return a;
  return std::nullopt;
}

bool AgentRecord::simulated() const {
  return backend == "simulated" ||
         std::any_of(gpus.begin(), gpus.end(), [](const GpuInfo& g) { return g.simulated; });
}

std::string job_language(const NewJob& j) {
  if (!j.language.empty()) return j.language;
  if (j.spec.is_object()) {
    auto k = j.spec.find("kernel");
    if (k != j.spec.end() && k->is_object()) {
      auto l = k->find("language");
      if (l != k->end() && l->is_string() && !l->get<std::string>().empty())
        return l->get<std::string>();
    }
  }
  return "cuda";
}

namespace sqlite {

#include "shared/records.inc"

}  // namespace sqlite
}  // namespace kfleet::store
