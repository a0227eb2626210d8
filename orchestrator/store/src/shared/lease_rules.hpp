// The lease rules: when a job may be leased to an agent. Each rule is written once, its
// condition in SQL beside the words of its refusal. PostgreSQL checks the conditions in the
// server, in the grant (pg_store_runs.cpp) and in the submit that leases its job
// (pg_store_jobs.cpp), which both embed lease_rules_sql(); a grant it refused is explained
// afterwards from its rows, in the rules' words (lease_refusal, slot_refusal). SQLite's grant
// checks the rules in kfleetd with the same words (store_runs.cpp).
#pragma once

#include <cctype>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kfleet/store/store.hpp"

namespace kfleet::store {

// A run still running on the agent's host, as the slot rules read it.
struct HostRun {
  std::int64_t id = 0;
  int slot = 0;
  bool host_exclusive = false;
};

namespace lease_rules {

// A rule's `sql` is a condition over the job's row ($job.<column>) and the agent's
// ($agent.<column>) that holds when the rule lets the lease go. Its `refusal` is the same
// condition in kfleetd: why the rule keeps the job from the agent, or "" when it does not.
struct JobRule {
  const char* sql;
  std::string (*refusal)(std::int64_t job_id, const JobRecord& job);
};
struct AgentRule {
  const char* sql;
  std::string (*refusal)(std::int64_t agent_id, const AgentRecord& agent);
};
// The slot rules (also unique indexes in both schemas): one running lease per GPU slot; a
// host-exclusive lease only on an empty host, and nothing beside one. Each is a condition over
// a running run `o` on the agent's host (and $job, $agent) that holds when `o` is in the way.
struct SlotRule {
  const char* sql;
  std::string (*refusal)(std::int64_t job_id, const JobRecord& job, const AgentRecord& agent,
                         const HostRun& o);
};

inline constexpr JobRule kJobRules[] = {
    {"$job.state IN ('queued', 'waiting_capacity')",
     [](std::int64_t job_id, const JobRecord& job) -> std::string {
       if (job.state == JobState::queued || job.state == JobState::waiting_capacity) return "";
       return "job " + std::to_string(job_id) + " is " + to_string(job.state) +
              ", not pending; only queued or waiting_capacity jobs can be leased";
     }},
    {"$job.attempts < $job.max_attempts",
     [](std::int64_t job_id, const JobRecord& job) -> std::string {
       if (job.attempts < job.max_attempts) return "";
       return "job " + std::to_string(job_id) + " has used all " +
              std::to_string(job.max_attempts) + " attempts";
     }},
};

inline constexpr AgentRule kAgentRules[] = {
    {"$agent.state = 'idle' AND $agent.current_run_id = 0",
     [](std::int64_t agent_id, const AgentRecord& agent) -> std::string {
       if (agent.state == AgentState::idle && agent.current_run_id == 0) return "";
       return "agent " + std::to_string(agent_id) + " is " + to_string(agent.state) +
              (agent.current_run_id ? " with run " + std::to_string(agent.current_run_id)
                                    : std::string()) +
              "; an agent runs one job at a time";
     }},
};

inline constexpr SlotRule kSlotRules[] = {
    {"o.slot = $agent.slot",
     [](std::int64_t, const JobRecord&, const AgentRecord& agent, const HostRun& o) -> std::string {
       if (o.slot != agent.slot) return "";
       return "GPU slot " + std::to_string(agent.slot) + " of host " + agent.host +
              " already holds run " + std::to_string(o.id) + "; a slot holds one lease at a time";
     }},
    {"o.host_exclusive <> 0",
     [](std::int64_t, const JobRecord&, const AgentRecord& agent, const HostRun& o) -> std::string {
       if (!o.host_exclusive) return "";
       return "host " + agent.host + " is held by host-exclusive run " + std::to_string(o.id);
     }},
    {"$job.host_exclusive <> 0",
     [](std::int64_t job_id, const JobRecord& job, const AgentRecord& agent,
        const HostRun& o) -> std::string {
       if (!job.host_exclusive) return "";
       return "job " + std::to_string(job_id) + " is host-exclusive and host " + agent.host +
              " still runs run " + std::to_string(o.id) + " on slot " + std::to_string(o.slot);
     }},
};

}  // namespace lease_rules

// Why `job` cannot be leased to `agent` now, as read (either may be missing: not_found), by the
// job's and the agent's own rules (conflict), or nothing; the slot rules are slot_refusal.
inline std::optional<Error> lease_refusal(std::int64_t job_id, std::int64_t agent_id,
                                          const std::optional<JobRecord>& job,
                                          const std::optional<AgentRecord>& agent) {
  if (!job) return make_error(Errc::not_found, "job " + std::to_string(job_id) + " not found");
  for (const auto& rule : lease_rules::kJobRules)
    if (auto why = rule.refusal(job_id, *job); !why.empty()) return make_error(Errc::conflict, why);
  if (!agent)
    return make_error(Errc::not_found, "agent " + std::to_string(agent_id) + " not found");
  for (const auto& rule : lease_rules::kAgentRules)
    if (auto why = rule.refusal(agent_id, *agent); !why.empty())
      return make_error(Errc::conflict, why);
  return std::nullopt;
}

// Why `agent` may not take `job` beside the runs running on its host (the first, by id, in the
// way), or nothing.
inline std::optional<Error> slot_refusal(std::int64_t job_id, const JobRecord& job,
                                         const AgentRecord& agent,
                                         const std::vector<HostRun>& host_runs) {
  for (const auto& o : host_runs)
    for (const auto& rule : lease_rules::kSlotRules)
      if (auto why = rule.refusal(job_id, job, agent, o); !why.empty())
        return make_error(Errc::conflict, why);
  return std::nullopt;
}

// Every rule's condition, joined by AND, for a statement's WHERE or ON. `job` spells what the
// statement has for a column of the job ("j.state" for a row of jobs as `j`; a job being
// submitted has no row yet, so there the values it is inserted with); `agent` is the alias of
// its row of agents. The slot rules are one NOT EXISTS over the running runs `o` on the
// agent's host: the server looks for them once.
inline std::string lease_rules_sql(const std::function<std::string(std::string_view column)>& job,
                                   const std::string& agent) {
  const auto spell = [&](std::string_view sql) {
    std::string out;
    for (std::size_t i = 0; i < sql.size();) {
      if (sql[i] != '$') {
        out += sql[i++];
        continue;
      }
      const std::size_t dot = sql.find('.', i);
      std::size_t end = dot + 1;
      while (end < sql.size() && (std::islower(static_cast<unsigned char>(sql[end])) || sql[end] == '_'))
        ++end;
      const std::string_view row = sql.substr(i + 1, dot - i - 1), column = sql.substr(dot + 1, end - dot - 1);
      if (row == "job") out += job(column);
      else if (row == "agent") out += agent + "." + std::string(column);
      else throw std::logic_error("a lease rule names $" + std::string(row));
      i = end;
    }
    return out;
  };
  std::string out;
  for (const auto& rule : lease_rules::kJobRules) out += spell(rule.sql) + " AND ";
  for (const auto& rule : lease_rules::kAgentRules) out += spell(rule.sql) + " AND ";
  out += "NOT EXISTS (SELECT 1 FROM runs o WHERE o.outcome = 'running' AND o.host = " + agent +
         ".host AND (";
  const char* sep = "";
  for (const auto& rule : lease_rules::kSlotRules) {
    out += sep + spell(rule.sql);
    sep = " OR ";
  }
  return out + "))";
}

}  // namespace kfleet::store
