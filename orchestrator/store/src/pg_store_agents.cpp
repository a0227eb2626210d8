// Agents and region blocks.
#include "pg_store.hpp"

namespace kfleet::store::pg {

Result<AgentRecord> PgStore::enrol_agent(const NewAgent& a, TimeMs now) {
  if (a.name.empty())
    return make_error(Errc::invalid_argument, "an agent needs a name (--name or the host name)");
  if (a.slot < 0 || a.slot > 255)
    return make_error(Errc::invalid_argument,
                      "GPU slot " + std::to_string(a.slot) + " is out of range (0..255)");
  return db_->transaction([&]() -> Result<AgentRecord> {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : a.gpus) gpus.push_back(to_json(g));
    db_->prepare(
           "INSERT INTO agents (name, region, backend, gpus, token_hash, provider, instance_id, "
           "info, state, current_run_id, enrolled_ms, last_seen_ms, host, slot) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'idle', 0, ?, ?, ?, ?)")
        .args(a.name, a.region, a.backend, dump_json(gpus), a.token_hash, a.provider,
              a.instance_id, dump_json(a.info.is_null() ? nlohmann::json::object() : a.info),
              now, now, a.host, a.slot)
        .run();
    const std::int64_t id = db_->last_insert_id();
    if (a.host.empty())
      db_->prepare("UPDATE agents SET host = 'agent:' || id, slot = 0 WHERE id = ?").args(id).run();
    return *load_agent(id);
  });
}

std::optional<AgentRecord> PgStore::get_agent(std::int64_t id) {
  return or_die("get_agent", [&] { return load_agent(id); });
}

std::vector<AgentRecord> PgStore::list_agents() {
  static const std::string sql =
      std::string("SELECT ") + kAgentColumns + " FROM agents ORDER BY id";
  return or_die("list_agents", [&] {
    auto q = db_->prepare(sql);
    std::vector<AgentRecord> out;
    while (q.step()) out.push_back(read_agent(q));
    return out;
  });
}

Result<AgentRecord> PgStore::touch_agent(std::int64_t id, TimeMs now) {
  return db_->transaction([&]() -> Result<AgentRecord> {
    db_->prepare(
           "UPDATE agents SET last_seen_ms = ?, "
           "state = CASE WHEN state = 'lost' AND current_run_id = 0 THEN 'idle' ELSE state END "
           "WHERE id = ?")
        .args(now, id)
        .run();
    if (db_->changes() == 0)
      return make_error(Errc::not_found, "agent " + std::to_string(id) + " not found; enrol again");
    return *load_agent(id);
  });
}

Result<void> PgStore::set_agent_state(std::int64_t id, AgentState s, TimeMs now) {
  return db_->transaction([&]() -> Result<void> {
    auto agent = load_agent(id);
    if (!agent) return make_error(Errc::not_found, "agent " + std::to_string(id) + " not found");
    if (s == AgentState::idle && agent->current_run_id != 0) {
      return make_error(Errc::conflict, "agent " + std::to_string(id) + " holds run " +
                                            std::to_string(agent->current_run_id) +
                                            "; it becomes idle when that run ends");
    }
    if (s == AgentState::busy && agent->current_run_id == 0) {
      return make_error(Errc::invalid_argument,
                        "an agent becomes busy only by taking a lease (grant_lease)");
    }
    db_->prepare("UPDATE agents SET state = ?, last_seen_ms = GREATEST(last_seen_ms, ?) WHERE id = ?")
        .args(to_string(s), now, id)
        .run();
    return ok_result();
  });
}

void PgStore::put_region_block(const RegionBlock& b) {
  auto r = db_->transaction([&]() -> Result<void> {
    db_->prepare(
           "INSERT INTO region_blocks (provider, region, gpu_class, kind, reason, strikes, "
           "since_ms, until_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
           "ON CONFLICT (provider, region, gpu_class) DO UPDATE SET kind = excluded.kind, "
           "reason = excluded.reason, strikes = excluded.strikes, since_ms = excluded.since_ms, "
           "until_ms = excluded.until_ms")
        .args(b.provider, b.region, b.gpu_class, b.kind, b.reason, b.strikes, b.since_ms,
              b.until_ms)
        .run();
    return ok_result();
  });
  if (!r) die(DbError{"", r.error().message}, "put_region_block");
}

std::vector<RegionBlock> PgStore::region_blocks() {
  return or_die("region_blocks", [&] {
    auto q = db_->prepare(
        "SELECT provider, region, gpu_class, kind, reason, strikes, since_ms, until_ms "
        "FROM region_blocks ORDER BY provider, region, gpu_class");
    std::vector<RegionBlock> out;
    while (q.step()) {
      RegionBlock b;
      b.provider = q.text(0);
      b.region = q.text(1);
      b.gpu_class = q.text(2);
      b.kind = q.text(3);
      b.reason = q.text(4);
      b.strikes = q.i32(5);
      b.since_ms = q.i64(6);
      b.until_ms = q.i64(7);
      out.push_back(std::move(b));
    }
    return out;
  });
}

void PgStore::clear_region_block(const std::string& provider, const std::string& region,
                                     const std::string& gpu_class) {
  auto r = db_->transaction([&]() -> Result<void> {
    db_->prepare("DELETE FROM region_blocks WHERE provider = ? AND region = ? AND gpu_class = ?")
        .args(provider, region, gpu_class)
        .run();
    return ok_result();
  });
  if (!r) die(DbError{"", r.error().message}, "clear_region_block");
}

}  // namespace kfleet::store::pg
