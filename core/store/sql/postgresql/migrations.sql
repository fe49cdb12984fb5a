-- The PostgreSQL store's schema, one block per version (schema_vN), applied in order by
-- core/store/postgres.py, and the store marker that says which version a database holds.
-- Times are double precision seconds since the epoch, read from the server's clock (see
-- transaction_now in backend.sql): no host's clock ever decides when a lease expires.

-- schema_v1 --
CREATE TABLE zombietop_store (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    application     text NOT NULL,
    schema_version  integer NOT NULL
);
CREATE TABLE tasks (
    task_id             text PRIMARY KEY,
    run_id              text NOT NULL,
    step                text NOT NULL,
    step_type           text NOT NULL,
    state               text NOT NULL,
    attempt             integer NOT NULL DEFAULT 1,
    upstream            text NOT NULL DEFAULT '[]',
    host                text,
    pid                 integer,
    pid_start_time      double precision,
    command             text,
    cwd                 text,
    checkpoint          text,
    exit_code           integer,
    state_reason        text,
    heartbeat_error     text,
    heartbeat_error_at  double precision,
    quarantined_at      double precision,
    quarantined_by      text,
    quarantine_reason   text,
    created_at          double precision NOT NULL,
    claimed_at          double precision,
    started_at          double precision,
    finished_at         double precision,
    updated_at          double precision NOT NULL
);
-- The poll reads finished_at IS NULL (active) plus a recent window: both ride this index.
CREATE INDEX tasks_finished_at ON tasks (finished_at);
CREATE TABLE leases (
    task_id      text PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    owner        text,
    token        bigint NOT NULL,
    acquired_at  double precision,
    renewed_at   double precision,
    expires_at   double precision
);
CREATE TABLE heartbeats (
    task_id              text PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    stage                text,
    progress             double precision,
    counters             text NOT NULL DEFAULT '{}',
    checkpoint           text,
    eta_s                double precision,
    request_name         text,
    request_started_at   double precision,
    trace_id             text,
    reported_at          double precision,
    written_at           double precision NOT NULL,
    progress_changed_at  double precision NOT NULL,
    stage_started_at     double precision NOT NULL,
    seq                  bigint NOT NULL
);
CREATE TABLE heartbeat_history (
    task_id     text NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    seq         bigint NOT NULL,
    written_at  double precision NOT NULL,
    stage       text,
    progress    double precision,
    PRIMARY KEY (task_id, seq)
);
CREATE TABLE events (
    event_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        double precision NOT NULL,
    task_id   text,
    kind      text NOT NULL,
    actor     text NOT NULL,
    message   text NOT NULL,
    data      text NOT NULL DEFAULT '{}'
);
CREATE INDEX events_task ON events (task_id, event_id);

-- schema_v2 --
CREATE TABLE pending_kills (
    kill_id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id         text NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    pid             integer NOT NULL,
    pid_start_time  double precision,
    pgid            integer,
    host            text,
    requested_by    text NOT NULL,
    term_sent_at    double precision NOT NULL,
    deadline        double precision NOT NULL,
    outcome         text,
    finished_at     double precision
);
CREATE INDEX pending_kills_task ON pending_kills (task_id, kill_id);
CREATE UNIQUE INDEX pending_kills_open ON pending_kills (task_id) WHERE outcome IS NULL;

-- schema_v3 --
-- Fleets: one agent per host reports its presence, the processes behind its host's tasks, and
-- carries out the actions other hosts ask for.
CREATE TABLE agents (
    host         text PRIMARY KEY,
    agent_id     text NOT NULL,
    pid          integer NOT NULL,
    interval_s   double precision NOT NULL,
    started_at   double precision NOT NULL,
    seen_at      double precision NOT NULL,
    reported_at  double precision,
    stopped_at   double precision
);
CREATE TABLE process_samples (
    task_id      text PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    host         text NOT NULL,
    pid          integer NOT NULL,
    alive        boolean NOT NULL,
    identity_ok  boolean NOT NULL,
    status       text,
    cpu_percent  double precision,
    rss_bytes    bigint,
    threads      integer,
    io_idle_s    double precision,
    children     integer NOT NULL,
    create_time  double precision,
    sampled_at   double precision NOT NULL,
    written_at   double precision NOT NULL
);
CREATE TABLE host_requests (
    request_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id         text NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    host            text NOT NULL,
    kind            text NOT NULL,
    expected_token  bigint,
    actor           text NOT NULL,
    reason          text,
    requested_at    double precision NOT NULL,
    claimed_by      text,
    claimed_at      double precision,
    outcome         text,
    message         text,
    finished_at     double precision
);
CREATE INDEX host_requests_open ON host_requests (host, request_id) WHERE finished_at IS NULL;
CREATE UNIQUE INDEX host_requests_one_open ON host_requests (task_id, kind) WHERE finished_at IS NULL;

-- schema_v4 --
-- Who asked, as the asking process's real uid says (not the actor text, which is free-form):
-- an agent carries out only its own user's requests and those of users its config allows.
ALTER TABLE host_requests ADD COLUMN requester_uid bigint;
ALTER TABLE host_requests ADD COLUMN requester text;

-- schema_v5 --
-- The on-call loop: acks (someone is on a task's incident, until a time) and silences (a rule by
-- task glob, step type or host that holds pages until it ends; an ended one is kept, with who
-- ended it). Both are written with the store's clock. Schedules count a step's runs by when they
-- were claimed: the index keeps that one lookup per schedule a poll cheap.
CREATE TABLE acks (
    task_id   text PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    actor     text NOT NULL,
    reason    text,
    acked_at  double precision NOT NULL,
    until_at  double precision NOT NULL
);
CREATE TABLE silences (
    silence_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    matcher     text NOT NULL CHECK (matcher IN ('task', 'step_type', 'host')),
    pattern     text NOT NULL,
    actor       text NOT NULL,
    reason      text NOT NULL,
    created_at  double precision NOT NULL,
    until_at    double precision NOT NULL,
    ended_at    double precision,
    ended_by    text
);
CREATE INDEX silences_open ON silences (until_at) WHERE ended_at IS NULL;
CREATE INDEX tasks_step_claimed ON tasks (step, claimed_at);

-- schema_v6 --
-- Where a beat came from (see sqlite/migrations.sql, schema_v8): 'reported' or 'observed'.
ALTER TABLE heartbeats ADD COLUMN source text NOT NULL DEFAULT 'reported';

-- schema_v7 --
-- One watchdog acts on a store at a time: it holds this lease; the others wait as standbys.
CREATE TABLE watchdog_lease (
    singleton    boolean PRIMARY KEY CHECK (singleton),
    owner        text NOT NULL,
    host         text NOT NULL,
    pid          integer NOT NULL,
    token        bigint NOT NULL,
    acquired_at  double precision NOT NULL,
    renewed_at   double precision NOT NULL,
    expires_at   double precision NOT NULL
);
-- Pages not yet delivered, one row per channel: a watchdog that stops or fails leaves them
-- here and the next one delivers them.
CREATE TABLE pending_pages (
    page_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notifier   text NOT NULL,
    kind       text NOT NULL,
    line       text NOT NULL,
    task_id    text,
    health     text,
    page_at    double precision NOT NULL,
    attempts   integer NOT NULL,
    next_at    double precision NOT NULL
);

-- schema_v8 --
-- The samples, kills and host requests of a read-only source's tasks (see sqlite/migrations.sql,
-- schema_v10): `source` names the source, NULL for this store's own tasks, and the three tables
-- lose their reference to tasks (never deleted, so the cascade never ran).
ALTER TABLE process_samples DROP CONSTRAINT process_samples_task_id_fkey;
ALTER TABLE process_samples ADD COLUMN source text;
ALTER TABLE pending_kills DROP CONSTRAINT pending_kills_task_id_fkey;
ALTER TABLE pending_kills ADD COLUMN source text;
ALTER TABLE host_requests DROP CONSTRAINT host_requests_task_id_fkey;
ALTER TABLE host_requests ADD COLUMN source text;

-- schema_v9 --
-- A process's start as the kernel counts it (see sqlite/migrations.sql, schema_v11): the
-- boot's id and the clock ticks from the host's boot, compared exactly; rows from before have
-- NULL and are still compared by pid_start_time, within a tolerance.
ALTER TABLE tasks ADD COLUMN pid_boot_id text;
ALTER TABLE tasks ADD COLUMN pid_start_ticks bigint;
ALTER TABLE pending_kills ADD COLUMN pid_boot_id text;
ALTER TABLE pending_kills ADD COLUMN pid_start_ticks bigint;

-- schema_v10 --
-- When each schedule was first seen (see sqlite/migrations.sql, schema_v12): its fire times
-- before that are not judged.
CREATE TABLE schedules_seen (
    name        text NOT NULL,
    step        text NOT NULL,
    cron        text NOT NULL,
    tz          text NOT NULL,
    first_seen  double precision NOT NULL,
    PRIMARY KEY (name, step, cron, tz)
);

-- schema_v11 --
-- Retention (see sqlite/migrations.sql, schema_v13): finished tasks in (finished_at, task_id)
-- order, and a pruned task's host requests by its id.
DROP INDEX tasks_finished_at;
CREATE INDEX tasks_finished_at ON tasks (finished_at, task_id);
CREATE INDEX host_requests_task ON host_requests (task_id);

-- schema_v12 --
-- Acks on the tasks of read-only sources, by the source's name and its task id (see
-- sqlite/migrations.sql, schema_v14).
CREATE TABLE source_acks (
    source    text NOT NULL,
    task_id   text NOT NULL,
    actor     text NOT NULL,
    reason    text,
    acked_at  double precision NOT NULL,
    until_at  double precision NOT NULL,
    PRIMARY KEY (source, task_id)
);

-- schema_v13 --
-- Jobs (see sqlite/migrations.sql, schema_v15): a run's job and its number within the job.
ALTER TABLE tasks ADD COLUMN job TEXT;
ALTER TABLE tasks ADD COLUMN run_number INTEGER;
CREATE INDEX tasks_job_runs ON tasks (job, run_number);
CREATE INDEX tasks_job_finished ON tasks (job, state, finished_at);
-- Each job's summary, kept as its runs finish (in the transaction that records the end), so
-- that reading every job's summary never scans the finished runs: how many ended, how many
-- succeeded, the last outcome, and the durations of its latest successful runs (a JSON list,
-- oldest first). A reader asks only for the jobs changed since its last read.
CREATE TABLE jobs (
    job              TEXT PRIMARY KEY,
    runs             INTEGER NOT NULL,
    succeeded        INTEGER NOT NULL,
    last_outcome     TEXT,
    last_finished_at DOUBLE PRECISION,
    last_success_at  DOUBLE PRECISION,
    durations        TEXT NOT NULL,
    updated_at       DOUBLE PRECISION NOT NULL
);
CREATE INDEX jobs_updated ON jobs (updated_at);

-- schema_v14 --
-- An agent's idle time and whether it sampled a finished task (see sqlite/migrations.sql,
-- schema_v16).
ALTER TABLE process_samples ADD COLUMN idle_s DOUBLE PRECISION;
ALTER TABLE process_samples ADD COLUMN after_finish BOOLEAN NOT NULL DEFAULT FALSE;

-- schema_v15 --
-- A kept page's incident and runbook (see sqlite/migrations.sql, schema_v17).
ALTER TABLE pending_pages ADD COLUMN incident text;
ALTER TABLE pending_pages ADD COLUMN runbook text;

-- schema_v16 --
-- Each job's durations counted again from its runs' claims (see sqlite/migrations.sql,
-- schema_v18).
UPDATE jobs SET durations = (
    SELECT COALESCE(json_agg(latest.took ORDER BY latest.finished_at, latest.task_id), '[]')::text
    FROM (
        SELECT greatest(0.0, t.finished_at - COALESCE(t.claimed_at, t.started_at, t.created_at))
                   AS took,
               t.finished_at, t.task_id
        FROM tasks t
        WHERE t.job = jobs.job AND t.state = 'succeeded' AND t.finished_at IS NOT NULL
        ORDER BY t.finished_at DESC, t.task_id DESC LIMIT 100
    ) latest
)
WHERE EXISTS (SELECT 1 FROM tasks t
              WHERE t.job = jobs.job AND t.state = 'succeeded' AND t.finished_at IS NOT NULL);

-- schema_v17 --
-- How each job's runs of the last 30 days began and ended (see sqlite/migrations.sql,
-- schema_v19).
ALTER TABLE jobs ADD COLUMN ends text NOT NULL DEFAULT '[]';

-- schema_v18 --
-- The trace a task's run belongs to (see sqlite/migrations.sql, schema_v20).
ALTER TABLE tasks ADD COLUMN trace_id text;
ALTER TABLE tasks ADD COLUMN span_id text;
ALTER TABLE tasks ADD COLUMN parent_span_id text;

-- schema_v19 --
-- An agent's tick drops its host's samples by host (see sqlite/migrations.sql, schema_v21).
CREATE INDEX process_samples_host ON process_samples (host, source);

-- schema_v20 --
-- The event log partitioned by day of its time (at, in seconds since the epoch, UTC days), so
-- retention drops a day whole (core/store/pg_partitions.py) instead of deleting its rows one by
-- one and leaving them for VACUUM. A partitioned table's keys must hold the partition key, so
-- the primary key is (event_id, at); event_id still comes from one sequence and stays unique,
-- and no query or ON CONFLICT relies on event_id alone being a key. Every row of the old table
-- moves, with its event_id, into the default partition (which takes any time no day partition
-- covers); the pruner carves day partitions out of it and makes the coming days ahead.
-- SQLite keeps one table: it has no partitions, and its retention deletes by task as before.
ALTER TABLE events RENAME TO events_unpartitioned;
ALTER INDEX events_task RENAME TO events_unpartitioned_task;
CREATE SEQUENCE events_event_id AS bigint;
CREATE TABLE events (
    event_id  bigint NOT NULL DEFAULT nextval('events_event_id'),
    at        double precision NOT NULL,
    task_id   text,
    kind      text NOT NULL,
    actor     text NOT NULL,
    message   text NOT NULL,
    data      text NOT NULL DEFAULT '{}',
    PRIMARY KEY (event_id, at)
) PARTITION BY RANGE (at);
ALTER SEQUENCE events_event_id OWNED BY events.event_id;
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE INDEX events_task ON events (task_id, event_id);
INSERT INTO events (event_id, at, task_id, kind, actor, message, data)
SELECT event_id, at, task_id, kind, actor, message, data FROM events_unpartitioned;
SELECT setval('events_event_id', COALESCE(max(event_id), 0) + 1, false) FROM events_unpartitioned;
DROP TABLE events_unpartitioned;

-- schema_v21 --
-- A kept page's trace and its link (see sqlite/migrations.sql, schema_v22).
ALTER TABLE pending_pages ADD COLUMN trace_id text;
ALTER TABLE pending_pages ADD COLUMN trace_url text;

-- schema_v22 --
-- The samples that say a task's process is gone (see sqlite/migrations.sql, schema_v23).
CREATE INDEX process_samples_gone ON process_samples (task_id)
    WHERE NOT alive OR NOT identity_ok OR status = 'zombie';

-- select_store_marker --
SELECT application, schema_version FROM zombietop_store

-- count_tables --
-- Tables in the schema we would write to: an empty database becomes a store, any other is
-- somebody else's and is left alone.
SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()

-- has_marker_table --
SELECT to_regclass('zombietop_store') IS NOT NULL

-- lock_migrations --
-- Two zombietops opening a fresh database at once: the second waits, then sees it migrated.
SELECT pg_advisory_xact_lock(1515146562)

-- upsert_store_marker --
INSERT INTO zombietop_store (singleton, application, schema_version)
VALUES (true, :application, :version)
ON CONFLICT (singleton) DO UPDATE SET application = excluded.application,
    schema_version = excluded.schema_version
