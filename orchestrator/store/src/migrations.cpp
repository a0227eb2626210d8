#include "migrations.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace kfleet::store::sqlite {
namespace {

// Append new steps; never edit a step that has shipped (databases already ran it).
const std::vector<const char*>& steps() {
  static const std::vector<const char*> s = {
      // 1: the initial schema
      R"sql(
CREATE TABLE counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
INSERT INTO counters (name, value) VALUES ('fencing_token', 0);

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  campaign TEXT NOT NULL DEFAULT '',
  parent TEXT NOT NULL DEFAULT '',
  priority INTEGER NOT NULL DEFAULT 0,
  gpu TEXT NOT NULL DEFAULT '',
  regions TEXT NOT NULL DEFAULT '[]',
  spec TEXT NOT NULL DEFAULT 'null',
  spec_yaml TEXT NOT NULL DEFAULT '',
  source_name TEXT NOT NULL DEFAULT '',
  bundle_hash TEXT NOT NULL DEFAULT '',
  content_hash TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  state_reason TEXT NOT NULL DEFAULT '',
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  current_run_id INTEGER NOT NULL DEFAULT 0,
  submitted_by TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  verdict TEXT,
  simulated INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_state_priority ON jobs (state, priority, id);
CREATE INDEX jobs_content_hash ON jobs (content_hash);

CREATE TABLE agents (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  region TEXT NOT NULL DEFAULT '',
  backend TEXT NOT NULL DEFAULT '',
  gpus TEXT NOT NULL DEFAULT '[]',
  token_hash TEXT NOT NULL DEFAULT '',
  provider TEXT NOT NULL DEFAULT '',
  instance_id TEXT NOT NULL DEFAULT '',
  info TEXT NOT NULL DEFAULT '{}',
  state TEXT NOT NULL,
  current_run_id INTEGER NOT NULL DEFAULT 0,
  enrolled_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL
);

CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  agent_id INTEGER NOT NULL REFERENCES agents (id),
  attempt INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL UNIQUE,
  outcome TEXT NOT NULL,
  stage TEXT NOT NULL DEFAULT '',
  stage_seq INTEGER NOT NULL DEFAULT 0,
  started_ms INTEGER NOT NULL,
  lease_expires_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  verdict TEXT,
  simulated INTEGER NOT NULL DEFAULT 0,
  events_contiguous INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_job ON runs (job_id);
CREATE INDEX runs_outcome_expiry ON runs (outcome, lease_expires_ms);

CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  run_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  ts_ms INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX events_job_run_seq ON events (job_id, run_id, seq);
CREATE INDEX events_job_id ON events (job_id, id);

CREATE TABLE region_blocks (
  provider TEXT NOT NULL,
  region TEXT NOT NULL,
  gpu_class TEXT NOT NULL,
  kind TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  strikes INTEGER NOT NULL DEFAULT 1,
  since_ms INTEGER NOT NULL,
  until_ms INTEGER NOT NULL,
  PRIMARY KEY (provider, region, gpu_class)
);

CREATE TABLE bundles (
  hash TEXT PRIMARY KEY,
  body BLOB NOT NULL,
  size INTEGER NOT NULL
);
)sql",
      // 2: baselines (with their history) and fleet regression runs.
      R"sql(
CREATE TABLE baselines (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kernel TEXT NOT NULL,
  case_name TEXT NOT NULL,
  gpu_class TEXT NOT NULL,
  simulated INTEGER NOT NULL,
  run_id INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  median_us REAL NOT NULL,
  samples_us TEXT NOT NULL DEFAULT '[]',
  reason TEXT NOT NULL DEFAULT '',
  set_ms INTEGER NOT NULL,
  superseded_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX baselines_key ON baselines (kernel, case_name, gpu_class, simulated, superseded_ms);

CREATE TABLE regressions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  suite TEXT NOT NULL,
  state TEXT NOT NULL,
  spec TEXT NOT NULL,
  cells TEXT NOT NULL DEFAULT '[]',
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);

CREATE TABLE regression_jobs (
  regression_id INTEGER NOT NULL REFERENCES regressions (id),
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  kernel TEXT NOT NULL,
  gpu_class TEXT NOT NULL,
  PRIMARY KEY (regression_id, job_id)
);
CREATE INDEX regression_jobs_job ON regression_jobs (job_id);
)sql",
      // 3: API tokens with identity and scope (only their SHA-256 is kept) and the audit log
      R"sql(
CREATE TABLE api_tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user TEXT NOT NULL,
  scope TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL DEFAULT '',
  note TEXT NOT NULL DEFAULT '',
  created_by TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  revoked_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts_ms INTEGER NOT NULL,
  user TEXT NOT NULL,
  action TEXT NOT NULL,
  data TEXT NOT NULL DEFAULT '{}'
);
)sql",
      // 4: GPU slots. An agent serves one GPU (slot) of a host; a run holds its agent's slot,
      // and a host-exclusive run its whole host. Agents enrolled before slots are each a host
      // of their own. The partial unique indexes make "a slot holds at most one running lease"
      // and "at most one host-exclusive lease per host" hold whatever the code above does.
      R"sql(
ALTER TABLE agents ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN slot INTEGER NOT NULL DEFAULT 0;
UPDATE agents SET host = 'agent:' || id WHERE host = '';
CREATE INDEX agents_host_slot ON agents (host, slot);

ALTER TABLE jobs ADD COLUMN host_exclusive INTEGER NOT NULL DEFAULT 0;

ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN slot INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN host_exclusive INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET host = 'agent:' || agent_id WHERE host = '';
CREATE UNIQUE INDEX runs_running_slot ON runs (host, slot) WHERE outcome = 'running';
CREATE UNIQUE INDEX runs_running_host_exclusive ON runs (host)
  WHERE outcome = 'running' AND host_exclusive = 1;
)sql",
      // 5: who set a baseline and who cancelled a job, as fields. Before this step the user
      // was only in the baseline's reason text ("set by sam", or "<reason> (set by sam)": user
      // names hold no spaces or parentheses, so the text after the one " (set by " is the
      // name) and in the job's state reason. Baselines whose reason names no user get the
      // job's submitter when kfleetd set them itself (a campaign's kept win or a regression
      // run's first result: the submitter of that campaign or run); any other old row is ''.
      // A cancelled job's state reason was "cancelled by <user>", or "cancelled by user" when
      // no token named one (that stays '': it cannot be told from a user named "user").
      R"sql(
ALTER TABLE baselines ADD COLUMN set_by TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN cancelled_by TEXT NOT NULL DEFAULT '';
UPDATE baselines
  SET set_by = substr(reason, instr(reason, ' (set by ') + 9,
                      length(reason) - instr(reason, ' (set by ') - 9)
  WHERE instr(reason, ' (set by ') > 0 AND substr(reason, length(reason), 1) = ')'
    AND instr(substr(reason, instr(reason, ' (set by ') + 9), '(set by ') = 0;
UPDATE baselines SET set_by = substr(reason, 8)
  WHERE set_by = '' AND reason LIKE 'set by %' AND instr(reason, '(set by ') = 0;
UPDATE baselines SET set_by = COALESCE((SELECT submitted_by FROM jobs WHERE jobs.id = baselines.job_id), '')
  WHERE set_by = '' AND (reason LIKE 'kept win of campaign %' OR reason LIKE 'first result in regression run %');
UPDATE jobs SET cancelled_by = substr(state_reason, 14)
  WHERE state = 'cancelled' AND state_reason LIKE 'cancelled by %'
    AND state_reason <> 'cancelled by user';
)sql",
      // 6: the live fleet (every agent but the retired ones) by its own index. Retired
      // agents' rows are kept for history and grow with every scale-down; the control plane
      // reads the live ones on every scheduling pass and tick, and must not walk the rest.
      R"sql(
CREATE INDEX agents_live ON agents (id) WHERE state <> 'retired';
)sql",
      // 7: where a job came from: the token that submitted it (per-token in-flight limit) and,
      // for a child submitted as parent + change, its parent and the change (one change at a
      // time, shown in every view and keyed by parent for the no-repeat map).
      R"sql(
CREATE TABLE job_origins (
  job_id INTEGER PRIMARY KEY REFERENCES jobs (id),
  token_key TEXT NOT NULL DEFAULT '',
  parent_job_id INTEGER NOT NULL DEFAULT 0,
  change TEXT NOT NULL DEFAULT 'null'
);
CREATE INDEX job_origins_token ON job_origins (token_key);
CREATE INDEX job_origins_parent ON job_origins (parent_job_id);
)sql",
      // 8: limited enrolment tokens (hashes only: single use, a count, an expiry, bound to an
      // instance), and which one let each agent in (id 0: the fleet's long-lived token, the only
      // way in before this step).
      R"sql(
CREATE TABLE enrol_tokens (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL DEFAULT '',
  instance_id TEXT NOT NULL DEFAULT '',
  max_uses INTEGER NOT NULL DEFAULT 1,
  uses INTEGER NOT NULL DEFAULT 0,
  created_by TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL DEFAULT 0,
  revoked_ms INTEGER NOT NULL DEFAULT 0
);
ALTER TABLE agents ADD COLUMN enrol_token_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN enrol_token_name TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN enrol_token_by TEXT NOT NULL DEFAULT '';
)sql",
      // 9: a job's token on its row, and the jobs still in flight by token in an index of
      // their own. The per-token in-flight limit counted a token's jobs through job_origins,
      // its whole history joined to jobs: a submit's cost grew with every job the token ever
      // ran. Counted here it reads the token's live jobs only (kInFlightSql; the index's
      // condition is that statement's, word for word, so the planner can use it).
      R"sql(
ALTER TABLE jobs ADD COLUMN token_key TEXT NOT NULL DEFAULT '';
UPDATE jobs SET token_key = o.token_key FROM job_origins o
  WHERE o.job_id = jobs.id AND o.token_key <> '';
CREATE INDEX jobs_live_token ON jobs (token_key)
  WHERE state NOT IN ('passed', 'rejected', 'error', 'cancelled');
)sql",
      // 10: a job's kernel.language on its row. The scheduler offers triton and torch jobs only
      // to agents whose Python runs them, and its scan of the queue (pending_jobs) reads no
      // spec: the language is a column it reads beside the GPU class. Older rows get it from
      // their stored spec, or cuda when it names none (every job before triton and torch).
      R"sql(
ALTER TABLE jobs ADD COLUMN language TEXT NOT NULL DEFAULT 'cuda';
UPDATE jobs SET language = json_extract(spec, '$.kernel.language')
  WHERE json_valid(spec) AND json_type(spec, '$.kernel.language') = 'text'
    AND json_extract(spec, '$.kernel.language') NOT IN ('', 'cuda');
)sql",
      // 11: a job's runs by outcome (PostgreSQL's step 14, where the planner read every lost
      // run of the fleet to count one job's: a lost run that never started counts its job's).
      // The pair replaces runs_job: a lookup by job alone reads its prefix.
      R"sql(
CREATE INDEX runs_job_outcome ON runs (job_id, outcome);
DROP INDEX runs_job;
)sql",
  };
  return s;
}

}  // namespace

int latest_schema_version() { return static_cast<int>(steps().size()); }

Result<void> migrate(Db& db) { return migrate_to(db, latest_schema_version()); }

Result<void> migrate_to(Db& db, int target) {
  int version = 0;
  try {
    db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    auto q = db.prepare("SELECT version FROM schema_version LIMIT 1");
    if (q.step()) version = q.i32(0);
  } catch (const DbError& e) {
    return make_error(Errc::internal, "cannot read the schema version of " + db.path() + ": " +
                                          e.message + " (is it a kfleet database?)");
  }
  const int latest = latest_schema_version();
  if (version > latest) {
    return make_error(Errc::invalid_argument,
                      "the database " + db.path() + " has schema version " +
                          std::to_string(version) + ", newer than this kfleetd knows (" +
                          std::to_string(latest) +
                          "); run a newer kfleetd or point --db at another file");
  }
  for (int v = version + 1; v <= std::min(latest, target); ++v) {
    auto r = db.transaction([&]() -> Result<void> {
      db.exec(steps()[static_cast<std::size_t>(v - 1)]);
      db.exec("DELETE FROM schema_version");
      db.prepare("INSERT INTO schema_version (version) VALUES (?)").args(v).run();
      return ok_result();
    });
    if (!r) {
      return make_error(r.error().code, "migrating " + db.path() + " to schema version " +
                                            std::to_string(v) + " failed: " + r.error().message);
    }
  }
  return ok_result();
}

}  // namespace kfleet::store::sqlite
