// Jobs: submission, queries and state changes.
#include "batch.hpp"
#include "job_rules.hpp"
#include "pg_store.hpp"

namespace kfleet::store::pg {

Result<JobRecord> PgStore::create_job(const NewJob& j, TimeMs now) {
  if (j.name.empty())
    return make_error(Errc::invalid_argument, "a job needs a name (set `name:` in the job spec)");
  if (j.max_attempts < 1) {
    return make_error(Errc::invalid_argument,
                      "max_attempts is " + std::to_string(j.max_attempts) + "; it must be >= 1");
  }
  return db_->transaction([&]() -> Result<JobRecord> {
    std::int64_t id = 0;
    {
      auto q = db_->prepare(
          "INSERT INTO jobs (name, campaign, parent, priority, gpu, regions, spec, spec_yaml, "
          "source_name, bundle_hash, content_hash, state, state_reason, attempts, max_attempts, "
          "current_run_id, submitted_by, created_ms, updated_ms, simulated, host_exclusive) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', '', 0, ?, 0, ?, ?, ?, 0, ?) "
          "RETURNING id");
      q.args(j.name, j.campaign, j.parent, j.priority, j.gpu,
             dump_json(nlohmann::json(j.regions)), dump_json(j.spec), j.spec_yaml, j.source_name,
             j.bundle_hash, j.content_hash, j.max_attempts, j.submitted_by, now, now,
             j.host_exclusive ? 1 : 0);
      q.step();
      id = q.i64(0);
    }
    insert_job_event(id, event_type::job_submitted,
                     {{"name", j.name},
                      {"campaign", j.campaign},
                      {"priority", j.priority},
                      {"gpu", j.gpu},
                      {"regions", j.regions},
                      {"submitted_by", j.submitted_by},
                      {"content_hash", j.content_hash}},
                     now);
    return *load_job(id);
  });
}

std::optional<JobRecord> PgStore::get_job(std::int64_t id) {
  return or_die("get_job", [&] { return load_job(id); });
}

std::vector<JobRecord> PgStore::list_jobs(const JobFilter& f) {
  // The SQL depends only on how many states are named, so the statement cache stays small.
  std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE TRUE";
  if (!f.states.empty()) {
    sql += " AND state IN (";
    for (std::size_t i = 0; i < f.states.size(); ++i) sql += i ? ", ?" : "?";
    sql += ")";
  }
  sql += " AND (? = '' OR campaign = ?) AND (? = '' OR name = ?) AND (? = 0 OR id < ?)"
         " ORDER BY id DESC LIMIT ?";
  return or_die("list_jobs", [&] {
    auto q = db_->prepare(sql);
    int i = 0;
    for (auto s : f.states) q.bind(++i, to_string(s));
    for (const std::string* v : {&f.campaign, &f.campaign, &f.name, &f.name}) q.bind(++i, *v);
    q.bind(++i, f.before_id);
    q.bind(++i, f.before_id);
    q.bind(++i, f.limit > 0 ? f.limit : 100);
    return query_jobs(q);
  });
}

std::vector<JobRecord> PgStore::pending_jobs() {
  // The scheduler's hot path (every pass reads the whole queue): the spec and its YAML are
  // left out; get_job() has them.
  static const std::string sql = [] {
    std::string cols = kJobColumns;
    cols.replace(cols.find("spec, spec_yaml"), 15, "'null', ''");
    return "SELECT " + cols +
           " FROM jobs WHERE state IN ('queued', 'waiting_capacity') ORDER BY priority DESC, id ASC";
  }();
  return or_die("pending_jobs", [&] {
    auto q = db_->prepare(sql);
    return query_jobs(q);
  });
}

Result<JobRecord> PgStore::set_job_state(std::int64_t id, JobState s,
                                         const std::string& reason, TimeMs now,
                                         const std::string& by) {
  return db_->transaction(
      [&]() -> Result<JobRecord> { return change_job_state(id, s, reason, now, by); });
}

std::vector<Result<JobRecord>> PgStore::set_job_states(
    const std::vector<JobStateChange>& changes, TimeMs now) {
  // One transaction (one commit, one write-lock round trip) for all.
  return each_in_one_transaction(*db_, changes, [&](const JobStateChange& c) {
    return change_job_state(c.id, c.state, c.reason, now, {});
  });
}

Result<JobRecord> PgStore::change_job_state(std::int64_t id, JobState s,
                                            const std::string& reason, TimeMs now,
                                            const std::string& by) {
  auto job = load_job(id);
  if (auto refused = state_change_refusal(id, job, s)) return *refused;
  if (job->current_run_id != 0 && is_terminal(s)) {
    if (auto run = load_run(job->current_run_id))
      end_run(*run, s == JobState::cancelled ? RunOutcome::cancelled : RunOutcome::error, now);
  }
  write_job_state(id, s, reason, now);
  if (s == JobState::cancelled)
    db_->prepare("UPDATE jobs SET cancelled_by = ? WHERE id = ?").args(by, id).run();
  return *load_job(id);
}

std::optional<JobRecord> PgStore::find_job_by_content_hash(const std::string& hash) {
  if (hash.empty()) return std::nullopt;
  static const std::string sql = std::string("SELECT ") + kJobColumns +
                                 " FROM jobs WHERE content_hash = ? ORDER BY id DESC LIMIT 1";
  return or_die("find_job_by_content_hash", [&]() -> std::optional<JobRecord> {
    auto q = db_->prepare(sql);
    q.args(hash);
    if (!q.step()) return std::nullopt;
    return read_job(q);
  });
}

}  // namespace kfleet::store::pg
