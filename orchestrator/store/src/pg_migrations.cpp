// The PostgreSQL schema as an ordered list of steps; schema_version records how many ran.
// Its own list (PostgreSQL dialect), independent of the SQLite one: step 1 is the schema the
// SQLite store reached at its step 4. Append steps, never edit one that has shipped.
#include <algorithm>
#include <string>
#include <vector>

#include "pg_store.hpp"

namespace kfleet::store::pg {
namespace {

const std::vector<const char*>& steps() {
  static const std::vector<const char*> s = {
      // 1: the initial schema. Integers are BIGINT and flags 0/1 BIGINT, as in SQLite, so the
      // store's SQL reads the same on both. events.id is not a SERIAL: the store takes ids from
      // counters('event_id') inside the write-locked transaction, so they are gap-free and in
      // commit order (a reader paging with events_after never skips one committed later).
      R"sql(
CREATE TABLE counters (
  name TEXT PRIMARY KEY,
  value BIGINT NOT NULL
);
INSERT INTO counters (name, value) VALUES ('fencing_token', 0), ('event_id', 0);

CREATE TABLE jobs (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL,
  campaign TEXT NOT NULL DEFAULT '',
  parent TEXT NOT NULL DEFAULT '',
  priority BIGINT NOT NULL DEFAULT 0,
  gpu TEXT NOT NULL DEFAULT '',
  regions TEXT NOT NULL DEFAULT '[]',
  spec TEXT NOT NULL DEFAULT 'null',
  spec_yaml TEXT NOT NULL DEFAULT '',
  source_name TEXT NOT NULL DEFAULT '',
  bundle_hash TEXT NOT NULL DEFAULT '',
  content_hash TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  state_reason TEXT NOT NULL DEFAULT '',
  attempts BIGINT NOT NULL DEFAULT 0,
  max_attempts BIGINT NOT NULL,
  current_run_id BIGINT NOT NULL DEFAULT 0,
  submitted_by TEXT NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL,
  verdict TEXT,
  simulated BIGINT NOT NULL DEFAULT 0,
  host_exclusive BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX jobs_state_priority ON jobs (state, priority, id);
CREATE INDEX jobs_pending ON jobs (priority DESC, id)
  WHERE state IN ('queued', 'waiting_capacity');
CREATE INDEX jobs_content_hash ON jobs (content_hash);

CREATE TABLE agents (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL,
  region TEXT NOT NULL DEFAULT '',
  backend TEXT NOT NULL DEFAULT '',
  gpus TEXT NOT NULL DEFAULT '[]',
  token_hash TEXT NOT NULL DEFAULT '',
  provider TEXT NOT NULL DEFAULT '',
  instance_id TEXT NOT NULL DEFAULT '',
  info TEXT NOT NULL DEFAULT '{}',
  state TEXT NOT NULL,
  current_run_id BIGINT NOT NULL DEFAULT 0,
  enrolled_ms BIGINT NOT NULL,
  last_seen_ms BIGINT NOT NULL,
  host TEXT NOT NULL DEFAULT '',
  slot BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX agents_host_slot ON agents (host, slot);

CREATE TABLE runs (
  id BIGSERIAL PRIMARY KEY,
  job_id BIGINT NOT NULL REFERENCES jobs (id),
  agent_id BIGINT NOT NULL REFERENCES agents (id),
  attempt BIGINT NOT NULL,
  fencing_token BIGINT NOT NULL UNIQUE,
  outcome TEXT NOT NULL,
  stage TEXT NOT NULL DEFAULT '',
  stage_seq BIGINT NOT NULL DEFAULT 0,
  started_ms BIGINT NOT NULL,
  lease_expires_ms BIGINT NOT NULL,
  finished_ms BIGINT NOT NULL DEFAULT 0,
  verdict TEXT,
  simulated BIGINT NOT NULL DEFAULT 0,
  events_contiguous BIGINT NOT NULL DEFAULT 0,
  host TEXT NOT NULL DEFAULT '',
  slot BIGINT NOT NULL DEFAULT 0,
  host_exclusive BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX runs_job ON runs (job_id);
CREATE INDEX runs_outcome_expiry ON runs (outcome, lease_expires_ms);
CREATE UNIQUE INDEX runs_running_slot ON runs (host, slot) WHERE outcome = 'running';
CREATE UNIQUE INDEX runs_running_host_exclusive ON runs (host)
  WHERE outcome = 'running' AND host_exclusive = 1;

CREATE TABLE events (
  id BIGINT PRIMARY KEY,
  job_id BIGINT NOT NULL REFERENCES jobs (id),
  run_id BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  ts_ms BIGINT NOT NULL,
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
  strikes BIGINT NOT NULL DEFAULT 1,
  since_ms BIGINT NOT NULL,
  until_ms BIGINT NOT NULL,
  PRIMARY KEY (provider, region, gpu_class)
);

CREATE TABLE bundles (
  hash TEXT PRIMARY KEY,
  body BYTEA NOT NULL,
  size BIGINT NOT NULL
);

CREATE TABLE baselines (
  id BIGSERIAL PRIMARY KEY,
  kernel TEXT NOT NULL,
  case_name TEXT NOT NULL,
  gpu_class TEXT NOT NULL,
  simulated BIGINT NOT NULL,
  run_id BIGINT NOT NULL,
  job_id BIGINT NOT NULL,
  median_us DOUBLE PRECISION NOT NULL,
  samples_us TEXT NOT NULL DEFAULT '[]',
  reason TEXT NOT NULL DEFAULT '',
  set_ms BIGINT NOT NULL,
  superseded_ms BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX baselines_key ON baselines (kernel, case_name, gpu_class, simulated, superseded_ms);

CREATE TABLE regressions (
  id BIGSERIAL PRIMARY KEY,
  suite TEXT NOT NULL,
  state TEXT NOT NULL,
  spec TEXT NOT NULL,
  cells TEXT NOT NULL DEFAULT '[]',
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL
);

CREATE TABLE regression_jobs (
  regression_id BIGINT NOT NULL REFERENCES regressions (id),
  job_id BIGINT NOT NULL REFERENCES jobs (id),
  kernel TEXT NOT NULL,
  gpu_class TEXT NOT NULL,
  PRIMARY KEY (regression_id, job_id)
);
CREATE INDEX regression_jobs_job ON regression_jobs (job_id);

CREATE TABLE api_tokens (
  id BIGSERIAL PRIMARY KEY,
  "user" TEXT NOT NULL,
  scope TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL DEFAULT '',
  note TEXT NOT NULL DEFAULT '',
  created_by TEXT NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL,
  revoked_ms BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE audit_log (
  id BIGSERIAL PRIMARY KEY,
  ts_ms BIGINT NOT NULL,
  "user" TEXT NOT NULL,
  action TEXT NOT NULL,
  data TEXT NOT NULL DEFAULT '{}'
);
)sql",
      // 2: leadership among several kfleetd on one database. The leader holds a session
      // advisory lock and bumps `epoch` (its fencing number) when it takes over; every store
      // transaction of a leader checks the epoch is still its own.
      R"sql(
CREATE TABLE kfleet_leader (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  epoch BIGINT NOT NULL,
  url TEXT NOT NULL DEFAULT '',
  since_ms BIGINT NOT NULL DEFAULT 0
);
INSERT INTO kfleet_leader (id, epoch, url, since_ms) VALUES (1, 0, '', 0);
)sql",
      // 3: who set a baseline and who cancelled a job, as fields. Before this step the user
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
  SET set_by = substr(reason, strpos(reason, ' (set by ') + 9,
                      length(reason) - strpos(reason, ' (set by ') - 9)
  WHERE strpos(reason, ' (set by ') > 0 AND substr(reason, length(reason), 1) = ')'
    AND strpos(substr(reason, strpos(reason, ' (set by ') + 9), '(set by ') = 0;
UPDATE baselines SET set_by = substr(reason, 8)
  WHERE set_by = '' AND reason LIKE 'set by %' AND strpos(reason, '(set by ') = 0;
UPDATE baselines SET set_by = COALESCE((SELECT submitted_by FROM jobs WHERE jobs.id = baselines.job_id), '')
  WHERE set_by = '' AND (reason LIKE 'kept win of campaign %' OR reason LIKE 'first result in regression run %');
UPDATE jobs SET cancelled_by = substr(state_reason, 14)
  WHERE state = 'cancelled' AND state_reason LIKE 'cancelled by %'
    AND state_reason <> 'cancelled by user';
)sql",
      // 4: the live fleet (every agent but the retired ones) by its own index. Retired
      // agents' rows are kept for history and grow with every scale-down; the control plane
      // reads the live ones on every scheduling pass and tick, and must not walk the rest.
      R"sql(
CREATE INDEX agents_live ON agents (id) WHERE state <> 'retired';
)sql",
      // 5: where a job came from: the token that submitted it (per-token in-flight limit) and,
      // for a child submitted as parent + change, its parent and the change (one change at a
      // time, shown in every view and keyed by parent for the no-repeat map).
      R"sql(
CREATE TABLE job_origins (
  job_id BIGINT PRIMARY KEY REFERENCES jobs (id),
  token_key TEXT NOT NULL DEFAULT '',
  parent_job_id BIGINT NOT NULL DEFAULT 0,
  change TEXT NOT NULL DEFAULT 'null'
);
CREATE INDEX job_origins_token ON job_origins (token_key);
CREATE INDEX job_origins_parent ON job_origins (parent_job_id);
)sql",
      // 6: the leader's write lock and fencing check, in the server, in one statement. A
      // leader's transaction sends BEGIN, this call and its statements in one round trip
      // (pg_db.hpp); the check must therefore fail in the server, so that a deposed leader's
      // writes and COMMIT behind it are skipped without the client looking at the epoch
      // first. The lock comes first: the epoch is read after every earlier writer committed.
      R"sql(
CREATE FUNCTION kfleet_lock_and_fence(lock_key BIGINT, expected BIGINT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
  current BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(lock_key);
  SELECT epoch INTO current FROM kfleet_leader WHERE id = 1;
  IF current IS DISTINCT FROM expected THEN
    RAISE EXCEPTION 'this kfleetd is no longer the leader (its epoch is %, the database''s %): another kfleetd took over',
      expected, COALESCE(current, 0) USING ERRCODE = 'KF001';
  END IF;
  RETURN current;
END
$$;
)sql",
      // 7: an event's job is checked by the statement that writes it, once per statement,
      // instead of by a foreign key, once per row. The key's per-row trigger (a lookup and a
      // share lock on the job's row for every event) was most of the time an event batch
      // spends in the server. Every statement that inserts events takes the job from a row it
      // reads or writes in the same statement (the job updated, the run's job_id, itself
      // under runs' foreign key) or refuses a job that is not there, under the write lock;
      // and no statement deletes a job.
      R"sql(
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_job_id_fkey;
)sql",
      // 8: limited enrolment tokens (hashes only: single use, a count, an expiry, bound to an
      // instance), and which one let each agent in (id 0: the fleet's long-lived token, the only
      // way in before this step).
      R"sql(
CREATE TABLE enrol_tokens (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL DEFAULT '',
  instance_id TEXT NOT NULL DEFAULT '',
  max_uses BIGINT NOT NULL DEFAULT 1,
  uses BIGINT NOT NULL DEFAULT 0,
  created_by TEXT NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL DEFAULT 0,
  revoked_ms BIGINT NOT NULL DEFAULT 0
);
ALTER TABLE agents ADD COLUMN enrol_token_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN enrol_token_name TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN enrol_token_by TEXT NOT NULL DEFAULT '';
)sql",
      // 9: an agent's row is rewritten in place when only its state changes. Every job moves
      // its agent idle -> busy -> idle, and step 4's index named `state` in its condition,
      // so each of those updates wrote new entries into every index of agents (no HOT
      // update): with 100 agents at 700 jobs a second, thousands of dead index entries a
      // second that each read of an agent by id walked, until autovacuum came by. The live
      // fleet's condition is now a stored column computed from the state, which changes only
      // on retirement; half of each page is left free for the in-place versions.
      R"sql(
ALTER TABLE agents ADD COLUMN retired BOOLEAN GENERATED ALWAYS AS (state = 'retired') STORED;
DROP INDEX agents_live;
CREATE INDEX agents_live ON agents (id) WHERE NOT retired;
ALTER TABLE agents SET (fillfactor = 50);
)sql",
      // 10: events are stored a batch to a row. A row per event cost a heap tuple and three
      // index entries each, about 4 us of server time per event and most of what a batch of
      // 500 spent in the server; a batch is now one row with its events in arrays (kept out
      // of line and uncompressed: writing them is a copy, reading them one detoast), and
      // three index entries per batch. An orchestrator event about a job is a batch of one.
      // A batch's ids run first_id..last_id without a hole (taken from counters under the
      // write lock, as before), so "the events after id X" are the batches whose last_id > X.
      // A run's seqs stay unique because every writer checks them under the write lock
      // (min_seq/max_seq bound that check to the batches that can overlap). `events` is now
      // a view with the old columns, one row per event, for people and tests that query it.
      R"sql(
CREATE TABLE event_batches (
  last_id BIGINT PRIMARY KEY,
  first_id BIGINT NOT NULL,
  job_id BIGINT NOT NULL,
  run_id BIGINT NOT NULL,
  min_seq BIGINT NOT NULL,
  max_seq BIGINT NOT NULL,
  seqs BIGINT[] NOT NULL,
  ts_ms BIGINT[] NOT NULL,
  types TEXT[] NOT NULL,
  datas TEXT[] NOT NULL
);
ALTER TABLE event_batches ALTER seqs SET STORAGE EXTERNAL, ALTER ts_ms SET STORAGE EXTERNAL,
  ALTER types SET STORAGE EXTERNAL, ALTER datas SET STORAGE EXTERNAL;
CREATE INDEX event_batches_job ON event_batches (job_id, last_id);
CREATE INDEX event_batches_run ON event_batches (job_id, run_id, max_seq);
INSERT INTO event_batches (last_id, first_id, job_id, run_id, min_seq, max_seq, seqs, ts_ms,
                           types, datas)
  SELECT id, id, job_id, run_id, seq, seq, ARRAY[seq], ARRAY[ts_ms], ARRAY[type], ARRAY[data]
  FROM events;
DROP TABLE events;
CREATE VIEW events AS
  SELECT b.first_id + u.ord - 1 AS id, b.job_id, b.run_id, u.seq, u.ts_ms, u.type, u.data
  FROM event_batches b,
       unnest(b.seqs, b.ts_ms, b.types, b.datas) WITH ORDINALITY AS u(seq, ts_ms, type, data, ord);
)sql",
      // 11: a batch's arrays are compressed with lz4 where the server can (PostgreSQL 14 or
      // newer, built with lz4, as Debian's is). Stored uncompressed (step 10) a batch of 500
      // events was about 40 KB in some 20 TOAST rows, each with its index entry and its WAL,
      // and that insert was most of the batch's server time; lz4 writes a few KB and costs
      // less than the copy it saves (pglz, PostgreSQL's default, costs more than it saves).
      // Elsewhere the arrays stay as step 10 left them. Rows already stored keep their form.
      R"sql(
DO $$
BEGIN
  IF current_setting('server_version_num')::int >= 140000 THEN
    EXECUTE 'ALTER TABLE event_batches '
            'ALTER seqs SET STORAGE EXTENDED, ALTER seqs SET COMPRESSION lz4, '
            'ALTER ts_ms SET STORAGE EXTENDED, ALTER ts_ms SET COMPRESSION lz4, '
            'ALTER types SET STORAGE EXTENDED, ALTER types SET COMPRESSION lz4, '
            'ALTER datas SET STORAGE EXTENDED, ALTER datas SET COMPRESSION lz4';
  END IF;
EXCEPTION WHEN feature_not_supported THEN
  NULL;  -- a server built without lz4
END
$$;
)sql",
      // 12: a job's token on its row, and the jobs still in flight by token in an index of
      // their own (SQLite's step 9). The per-token in-flight limit counted a token's jobs
      // through job_origins, its whole history joined to jobs: at 200,000 past jobs a submit
      // spent 230-440 ms on it. The index's condition is kInFlightSql's, word for word, so the
      // planner can use it for the statement's generic plan. A job's state change is not a
      // HOT update either way (jobs_state_priority names the state), so this index adds an
      // entry where one was being written anyway.
      R"sql(
ALTER TABLE jobs ADD COLUMN token_key TEXT NOT NULL DEFAULT '';
UPDATE jobs SET token_key = o.token_key FROM job_origins o
  WHERE o.job_id = jobs.id AND o.token_key <> '';
CREATE INDEX jobs_live_token ON jobs (token_key)
  WHERE state NOT IN ('passed', 'rejected', 'error', 'cancelled');
)sql",
      // 13: a job's kernel.language on its row (SQLite's step 10). The scheduler offers triton
      // and torch jobs only to agents whose Python runs them, and its scan of the queue
      // (pending_jobs) reads no spec: the language is a column it reads beside the GPU class.
      // Older rows get it from their stored spec (always JSON: the store writes it), or cuda
      // when it names none. Adding a column with a constant default rewrites nothing; the
      // UPDATE touches only the rows whose spec names a language other than cuda.
      R"sql(
ALTER TABLE jobs ADD COLUMN language TEXT NOT NULL DEFAULT 'cuda';
UPDATE jobs SET language = spec::jsonb #>> '{kernel,language}'
  WHERE jsonb_typeof(spec::jsonb #> '{kernel,language}') = 'string'
    AND spec::jsonb #>> '{kernel,language}' NOT IN ('', 'cuda');
)sql",
      // 14: a job's runs by outcome (SQLite's step 11). A lost run that never started counts
      // its job's lost runs; with runs_job and runs_outcome_expiry to choose from, the generic
      // plan took the outcome index and read every lost run of the fleet (0.61 ms a call at
      // 13,000 lost runs, more than the lease itself). The pair replaces runs_job: a lookup by
      // job alone reads its prefix.
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
  const int latest = latest_schema_version();
  // One transaction holding the write lock: kfleetds starting together on a fresh database
  // migrate one after the other, and the second finds the work done.
  auto r = db.transaction([&]() -> Result<void> {
    db.exec("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)");
    int version = 0;
    {
      auto q = db.prepare("SELECT version FROM schema_version LIMIT 1");
      if (q.step()) version = q.i32(0);
    }
    if (version > latest) {
      return make_error(Errc::invalid_argument,
                        "the database " + db.where() + " has schema version " +
                            std::to_string(version) + ", newer than this kfleetd knows (" +
                            std::to_string(latest) +
                            "); run a newer kfleetd or point --db at another database");
    }
    for (int v = version + 1; v <= std::min(latest, target); ++v) {
      try {
        db.exec(steps()[static_cast<std::size_t>(v - 1)]);
      } catch (const DbError& e) {
        return make_error(Errc::internal, "migrating " + db.where() + " to schema version " +
                                              std::to_string(v) + " failed: " + e.message);
      }
      db.exec("DELETE FROM schema_version");
      db.prepare("INSERT INTO schema_version (version) VALUES (?)").args(v).run();
    }
    return ok_result();
  });
  if (!r && r.error().code == Errc::internal &&
      r.error().message.find("schema version") == std::string::npos) {
    return make_error(Errc::internal, "cannot read or migrate the schema of " + db.where() +
                                          ": " + r.error().message +
                                          " (is it a kfleet database?)");
  }
  return r;
}

}  // namespace kfleet::store::pg
