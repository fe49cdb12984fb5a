-- zombietop's SQL for the PostgreSQL store. Blocks are named by a `-- name --` line and loaded
-- once by core/queries.py. Parameters are written :name and turned into $n by core/pg_store.py.
-- Times are double precision seconds since the epoch, read from the server's clock (see
-- transaction_now): no host's clock ever decides when a lease expires.

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
-- Where a beat came from (see sqlite.sql schema_v8): 'reported' or 'observed'.
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
-- The samples, kills and host requests of a read-only source's tasks (see sqlite.sql
-- schema_v10): `source` names the source, NULL for this store's own tasks, and the three tables
-- lose their reference to tasks (never deleted, so the cascade never ran).
ALTER TABLE process_samples DROP CONSTRAINT process_samples_task_id_fkey;
ALTER TABLE process_samples ADD COLUMN source text;
ALTER TABLE pending_kills DROP CONSTRAINT pending_kills_task_id_fkey;
ALTER TABLE pending_kills ADD COLUMN source text;
ALTER TABLE host_requests DROP CONSTRAINT host_requests_task_id_fkey;
ALTER TABLE host_requests ADD COLUMN source text;

-- schema_v9 --
-- A process's start as the kernel counts it (see sqlite.sql schema_v11): the boot's id and the
-- clock ticks from the host's boot, compared exactly; rows from before have NULL and are still
-- compared by pid_start_time, within a tolerance.
ALTER TABLE tasks ADD COLUMN pid_boot_id text;
ALTER TABLE tasks ADD COLUMN pid_start_ticks bigint;
ALTER TABLE pending_kills ADD COLUMN pid_boot_id text;
ALTER TABLE pending_kills ADD COLUMN pid_start_ticks bigint;

-- schema_v10 --
-- When each schedule was first seen (see sqlite.sql schema_v12): its fire times before that are
-- not judged.
CREATE TABLE schedules_seen (
    name        text NOT NULL,
    step        text NOT NULL,
    cron        text NOT NULL,
    tz          text NOT NULL,
    first_seen  double precision NOT NULL,
    PRIMARY KEY (name, step, cron, tz)
);

-- schema_v11 --
-- Retention (see sqlite.sql schema_v13): finished tasks in (finished_at, task_id) order, and a
-- pruned task's host requests by its id.
DROP INDEX tasks_finished_at;
CREATE INDEX tasks_finished_at ON tasks (finished_at, task_id);
CREATE INDEX host_requests_task ON host_requests (task_id);

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

-- transaction_now --
-- The server's clock, read after the transaction's row lock is held: now() is frozen at BEGIN,
-- so a transaction that queued behind another would judge expiry with a stale time.
-- :pinned replaces it only in tests (PostgresStore.open(pinned_clock=...)).
SELECT COALESCE(:pinned::double precision,
                extract(epoch FROM clock_timestamp())::double precision)

-- lock_task --
-- Every write to one task holds its row: leases, heartbeats and actions on a task are
-- serialized, and their events are numbered in the order they happened.
SELECT {task_columns} FROM tasks WHERE task_id = :task_id FOR UPDATE

-- select_task --
SELECT {task_columns} FROM tasks WHERE task_id = :task_id

-- select_tasks_for_poll --
{task_records}
WHERE t.finished_at IS NULL
UNION ALL
{task_records}
WHERE t.finished_at >= :finished_since::double precision

-- select_all_tasks --
{task_records}

-- select_task_record --
{task_records}
WHERE t.task_id = :task_id

-- insert_task --
INSERT INTO tasks (task_id, run_id, step, step_type, state, attempt, upstream, host, command, cwd,
                   created_at, updated_at)
VALUES (:task_id, :run_id, :step, :step_type, :state, 1, :upstream, :host, :command, :cwd,
        :now, :now)

-- select_lease --
SELECT task_id, owner, token, acquired_at, renewed_at, expires_at FROM leases WHERE task_id = :task_id

-- upsert_lease --
INSERT INTO leases (task_id, owner, token, acquired_at, renewed_at, expires_at)
VALUES (:task_id, :owner, :token, :now, :now, :expires_at)
ON CONFLICT (task_id) DO UPDATE SET
    owner = excluded.owner, token = excluded.token, acquired_at = excluded.acquired_at,
    renewed_at = excluded.renewed_at, expires_at = excluded.expires_at

-- renew_lease --
-- Compare-and-swap: only the current owner with the current token, and only before expiry.
UPDATE leases SET renewed_at = :now, expires_at = :expires_at
WHERE task_id = :task_id AND owner = :owner AND token = :token AND expires_at >= :now

-- release_lease --
UPDATE leases SET owner = NULL, expires_at = NULL, renewed_at = :now
WHERE task_id = :task_id AND owner = :owner AND token = :token

-- claim_task --
UPDATE tasks SET
    state = CASE WHEN state IN ('queued', 'interrupted') THEN 'starting' ELSE state END,
    claimed_at = :now, updated_at = :now, attempt = attempt + :attempt_bump::integer
WHERE task_id = :task_id

-- upsert_heartbeat --
-- As in sqlite.sql: progress_changed_at moves only when stage, progress, counters or checkpoint
-- change, stage_started_at only when the stage does; every right-hand side sees the old row.
INSERT INTO heartbeats AS hb (task_id, stage, progress, counters, checkpoint, eta_s, request_name,
                        request_started_at, trace_id, reported_at, written_at,
                        progress_changed_at, stage_started_at, seq)
VALUES (:task_id, :stage::text, :progress::double precision, :counters, :checkpoint::text,
        :eta_s, :request_name::text,
        COALESCE(:request_at::double precision,
                 CASE WHEN :request_name::text IS NOT NULL THEN :now::double precision END),
        :trace_id, :reported_at, :now, :now, :now,
        (SELECT COALESCE(max(seq), 0) + 1 FROM heartbeat_history WHERE task_id = :task_id))
ON CONFLICT (task_id) DO UPDATE SET
    progress_changed_at = CASE
        WHEN hb.stage IS NOT DISTINCT FROM excluded.stage
             AND hb.progress IS NOT DISTINCT FROM excluded.progress
             -- An observation's counters ride along; they are activity, not progress.
             AND (hb.counters::jsonb - 'cpu_s' - 'io_bytes' - 'out_lines')
                 = (excluded.counters::jsonb - 'cpu_s' - 'io_bytes' - 'out_lines')
             AND hb.checkpoint IS NOT DISTINCT FROM excluded.checkpoint
        THEN hb.progress_changed_at ELSE excluded.written_at END,
    stage_started_at = CASE
        WHEN hb.stage IS NOT DISTINCT FROM excluded.stage THEN hb.stage_started_at
        ELSE excluded.written_at END,
    stage = excluded.stage, progress = excluded.progress, counters = excluded.counters,
    checkpoint = excluded.checkpoint, eta_s = excluded.eta_s,
    request_started_at = CASE
        WHEN excluded.request_name IS NULL THEN NULL
        WHEN :request_at::double precision IS NOT NULL THEN :request_at::double precision
        WHEN hb.request_name IS NOT DISTINCT FROM excluded.request_name
        THEN COALESCE(hb.request_started_at, excluded.written_at)
        ELSE excluded.written_at END,
    request_name = excluded.request_name,
    trace_id = excluded.trace_id, reported_at = excluded.reported_at,
    written_at = excluded.written_at, seq = hb.seq + 1, source = 'reported'
RETURNING seq

-- observe_heartbeat --
-- As in sqlite.sql: counters added, time moved, stage and progress kept.
INSERT INTO heartbeats AS hb (task_id, counters, written_at, progress_changed_at,
                              stage_started_at, seq, source)
VALUES (:task_id, :counters, :now, :now, :now,
        (SELECT COALESCE(max(seq), 0) + 1 FROM heartbeat_history WHERE task_id = :task_id),
        'observed')
ON CONFLICT (task_id) DO UPDATE SET
    counters = (hb.counters::jsonb || excluded.counters::jsonb)::text,
    written_at = excluded.written_at, seq = hb.seq + 1, source = 'observed'
RETURNING seq, stage, progress

-- mark_running_observed --
UPDATE tasks SET state = 'running', started_at = COALESCE(started_at, :now), updated_at = :now
WHERE task_id = :task_id AND (state = 'starting' OR started_at IS NULL)

-- select_heartbeat --
SELECT {heartbeat_columns} FROM heartbeats WHERE task_id = :task_id

-- insert_heartbeat_history --
INSERT INTO heartbeat_history (task_id, seq, written_at, stage, progress)
VALUES (:task_id, :seq, :now, :stage::text, :progress::double precision)

-- trim_heartbeat_history --
DELETE FROM heartbeat_history WHERE task_id = :task_id AND seq <= :oldest_dropped

-- mark_running --
-- Later beats touch the task's row only when they change it (see sqlite.sql).
UPDATE tasks SET
    state = CASE WHEN state = 'starting' THEN 'running' ELSE state END,
    started_at = COALESCE(started_at, :now),
    checkpoint = COALESCE(:checkpoint::text, checkpoint),
    heartbeat_error = NULL, heartbeat_error_at = NULL,
    updated_at = :now
WHERE task_id = :task_id
  AND (state = 'starting' OR started_at IS NULL OR heartbeat_error IS NOT NULL
       OR heartbeat_error_at IS NOT NULL
       OR (:checkpoint::text IS NOT NULL AND checkpoint IS DISTINCT FROM :checkpoint::text))

-- select_heartbeat_history --
SELECT written_at, stage, progress FROM heartbeat_history
WHERE task_id = :task_id ORDER BY seq DESC LIMIT :limit

-- set_heartbeat_error --
UPDATE tasks SET heartbeat_error = :message, heartbeat_error_at = :now, updated_at = :now
WHERE task_id = :task_id

-- set_process --
UPDATE tasks SET pid = :pid, pid_start_time = :pid_start_time, pid_boot_id = :pid_boot_id,
    pid_start_ticks = :pid_start_ticks, host = :host, updated_at = :now
WHERE task_id = :task_id

-- finish_task --
UPDATE tasks SET state = :state, exit_code = :exit_code, state_reason = :reason,
    finished_at = :finished_at, updated_at = :now
WHERE task_id = :task_id

-- set_quarantine --
UPDATE tasks SET quarantined_at = :quarantined_at, quarantined_by = :actor,
    quarantine_reason = :reason, updated_at = :now
WHERE task_id = :task_id

-- insert_event --
INSERT INTO events (at, task_id, kind, actor, message, data)
VALUES (:now, :task_id, :kind, :actor, :message, :data)

-- select_events --
SELECT event_id, at, task_id, kind, actor, message, data FROM events
WHERE (:task_id::text IS NULL OR task_id = :task_id::text)
  AND (:before_id::bigint IS NULL OR event_id < :before_id::bigint)
  AND (:kind::text IS NULL OR kind = :kind::text)
  AND (:skip_kind::text IS NULL OR kind <> :skip_kind::text)
ORDER BY event_id DESC LIMIT :limit

-- select_open_kill --
SELECT {kill_columns} FROM pending_kills k WHERE k.task_id = :task_id AND k.outcome IS NULL

-- select_open_kills_for_host --
SELECT {kill_columns} FROM pending_kills k
WHERE k.outcome IS NULL AND k.host IS NOT DISTINCT FROM :host::text
ORDER BY k.deadline, k.kill_id

-- select_source_kills --
-- The latest kill of each read-only source's task, open or finished since :since (the store's
-- clock; NULL: all): a poll joins them to the source's records as the tasks table's join does.
SELECT {kill_columns} FROM pending_kills k
WHERE k.source IS NOT NULL
  AND (k.outcome IS NULL OR CAST(:since AS double precision) IS NULL OR k.finished_at >= :since)
  AND k.kill_id = (SELECT max(kill_id) FROM pending_kills WHERE task_id = k.task_id)

-- insert_pending_kill --
INSERT INTO pending_kills (task_id, pid, pid_start_time, pid_boot_id, pid_start_ticks, pgid, host,
                           requested_by, term_sent_at, deadline, source)
VALUES (:task_id, :pid, :pid_start_time, :pid_boot_id, :pid_start_ticks, :pgid, :host,
        :requested_by, :now, :deadline, :source)

-- close_pending_kill --
UPDATE pending_kills SET outcome = :outcome, finished_at = :now
WHERE task_id = :task_id AND outcome IS NULL

-- bump_lease_token --
INSERT INTO leases (task_id, owner, token, acquired_at, renewed_at, expires_at)
VALUES (:task_id, NULL, :token, NULL, :now, NULL)
ON CONFLICT (task_id) DO UPDATE SET
    owner = NULL, token = excluded.token, renewed_at = excluded.renewed_at, expires_at = NULL

-- requeue_task --
UPDATE tasks SET state = 'queued', attempt = attempt + 1, pid = NULL, pid_start_time = NULL,
    pid_boot_id = NULL, pid_start_ticks = NULL, exit_code = NULL, state_reason = :reason, heartbeat_error = NULL, heartbeat_error_at = NULL,
    quarantined_at = NULL, quarantined_by = NULL, quarantine_reason = NULL,
    claimed_at = NULL, started_at = NULL, finished_at = NULL, updated_at = :now
WHERE task_id = :task_id

-- delete_heartbeat --
DELETE FROM heartbeats WHERE task_id = :task_id

-- discard_task --
UPDATE tasks SET state = 'discarded', state_reason = :reason, finished_at = :now, updated_at = :now
WHERE task_id = :task_id

-- upsert_agent --
-- An agent's beat: seen_at is the server's clock, reported_at the agent host's; their
-- difference is that host's clock skew.
INSERT INTO agents (host, agent_id, pid, interval_s, started_at, seen_at, reported_at, stopped_at)
VALUES (:host, :agent_id, :pid, :interval_s, :now, :now, :reported_at, NULL)
ON CONFLICT (host) DO UPDATE SET
    started_at = CASE WHEN agents.agent_id = excluded.agent_id AND agents.stopped_at IS NULL
                      THEN agents.started_at ELSE excluded.started_at END,
    agent_id = excluded.agent_id, pid = excluded.pid, interval_s = excluded.interval_s,
    seen_at = excluded.seen_at, reported_at = excluded.reported_at, stopped_at = NULL

-- stop_agent --
UPDATE agents SET stopped_at = :now WHERE host = :host AND agent_id = :agent_id

-- select_agents --
SELECT host, agent_id, pid, interval_s, started_at, seen_at, reported_at, stopped_at
FROM agents ORDER BY host

-- select_active_tasks_on_host --
SELECT {task_columns} FROM tasks
WHERE finished_at IS NULL AND pid IS NOT NULL AND host = :host

-- upsert_process_sample --
INSERT INTO process_samples (task_id, host, pid, alive, identity_ok, status, cpu_percent,
                             rss_bytes, threads, io_idle_s, children, create_time, sampled_at,
                             written_at, source)
VALUES (:task_id, :host, :pid, :alive, :identity_ok, :status, :cpu_percent, :rss_bytes, :threads,
        :io_idle_s, :children, :create_time, :sampled_at, :now, :source)
ON CONFLICT (task_id) DO UPDATE SET
    host = excluded.host, source = excluded.source, pid = excluded.pid, alive = excluded.alive,
    identity_ok = excluded.identity_ok, status = excluded.status,
    cpu_percent = excluded.cpu_percent, rss_bytes = excluded.rss_bytes,
    threads = excluded.threads, io_idle_s = excluded.io_idle_s, children = excluded.children,
    create_time = excluded.create_time, sampled_at = excluded.sampled_at,
    written_at = excluded.written_at

-- select_process_samples --
SELECT s.task_id, s.host, s.pid, s.alive, s.identity_ok, s.status, s.cpu_percent, s.rss_bytes,
       s.threads, s.io_idle_s, s.children, s.create_time, s.sampled_at, s.written_at, s.source
FROM process_samples s LEFT JOIN tasks t ON t.task_id = s.task_id
WHERE s.source IS NOT NULL OR (t.task_id IS NOT NULL AND t.finished_at IS NULL)

-- prune_source_samples --
-- A source's samples of this host that this round did not write again: its task instance
-- finished or left the host (the source's tasks are not in tasks, so no join drops them).
DELETE FROM process_samples
WHERE host = :host AND source = :source AND written_at < :now

-- insert_host_request --
INSERT INTO host_requests (task_id, host, kind, expected_token, actor, reason, requested_at,
                           requester_uid, requester, source)
VALUES (:task_id, :host, :kind, :expected_token, :actor, :reason, :now, :requester_uid, :requester,
        :source)
RETURNING request_id

-- select_host_request --
SELECT {request_columns} FROM host_requests WHERE request_id = :request_id

-- select_open_host_requests --
-- Every request not yet carried out, oldest first; :host NULL means every host.
SELECT {request_columns} FROM host_requests
WHERE finished_at IS NULL AND (:host::text IS NULL OR host = :host::text)
ORDER BY request_id

-- claim_host_request --
-- Compare-and-swap: of two agents claiming one request, one wins. A request an earlier agent of
-- the host claimed and never finished (it died) may be claimed again.
UPDATE host_requests SET claimed_by = :agent_id, claimed_at = :now
WHERE request_id = :request_id AND finished_at IS NULL
  AND claimed_by IS DISTINCT FROM :agent_id::text

-- finish_host_request --
UPDATE host_requests SET outcome = :outcome, message = :message, finished_at = :now
WHERE request_id = :request_id AND finished_at IS NULL

-- upsert_ack --
INSERT INTO acks (task_id, actor, reason, acked_at, until_at)
VALUES (:task_id, :actor, :reason, :now, :until_at)
ON CONFLICT (task_id) DO UPDATE SET
    actor = excluded.actor, reason = excluded.reason, acked_at = excluded.acked_at,
    until_at = excluded.until_at

-- select_ack --
SELECT task_id, actor, reason, acked_at, until_at FROM acks WHERE task_id = :task_id

-- delete_ack --
DELETE FROM acks WHERE task_id = :task_id

-- select_acks --
-- Acks still in force; expired ones stay until the task's next ack or unack replaces them.
SELECT task_id, actor, reason, acked_at, until_at FROM acks WHERE until_at > :now
ORDER BY task_id

-- insert_silence --
INSERT INTO silences (matcher, pattern, actor, reason, created_at, until_at)
VALUES (:matcher, :pattern, :actor, :reason, :now, :until_at)
RETURNING silence_id

-- select_silence --
SELECT silence_id, matcher, pattern, actor, reason, created_at, until_at, ended_at, ended_by
FROM silences WHERE silence_id = :silence_id

-- select_active_silences --
SELECT silence_id, matcher, pattern, actor, reason, created_at, until_at, ended_at, ended_by
FROM silences WHERE ended_at IS NULL AND until_at > :now
ORDER BY until_at, silence_id

-- end_silence --
UPDATE silences SET ended_at = :now, ended_by = :actor
WHERE silence_id = :silence_id AND ended_at IS NULL AND until_at > :now

-- select_step_runs --
-- A schedule's view of its step: when a run last started (was claimed), and since when the
-- oldest still executing has been going.
SELECT max(COALESCE(claimed_at, started_at)) AS last_started,
       min(CASE WHEN finished_at IS NULL AND state IN ('starting', 'running')
                THEN COALESCE(claimed_at, started_at) END) AS running_since
FROM tasks WHERE step = :step

-- insert_schedule_seen --
-- The first reader to see a schedule records it; later ones keep that first time.
INSERT INTO schedules_seen (name, step, cron, tz, first_seen)
VALUES (:name, :step, :cron, :tz, :first_seen)
ON CONFLICT (name, step, cron, tz) DO NOTHING

-- select_schedule_seen --
SELECT first_seen FROM schedules_seen
WHERE name = :name AND step = :step AND cron = :cron AND tz = :tz

-- insert_watchdog_lease --
-- The first watchdog of a store: nobody held the lease before.
INSERT INTO watchdog_lease (singleton, owner, host, pid, token, acquired_at, renewed_at, expires_at)
VALUES (true, :owner, :host, :pid, 1, :now, :now, :expires_at)
ON CONFLICT (singleton) DO NOTHING

-- select_watchdog_lease --
SELECT owner, host, pid, token, acquired_at, renewed_at, expires_at FROM watchdog_lease

-- hold_watchdog_lease_row --
SELECT owner, host, pid, token, acquired_at, renewed_at, expires_at FROM watchdog_lease FOR UPDATE

-- renew_watchdog_lease --
UPDATE watchdog_lease SET renewed_at = :now, expires_at = :expires_at, host = :host, pid = :pid
WHERE owner = :owner

-- take_watchdog_lease --
-- A standby takes over an expired lease: a new token, so the old holder knows it lost it.
UPDATE watchdog_lease SET owner = :owner, host = :host, pid = :pid, token = token + 1,
    acquired_at = :now, renewed_at = :now, expires_at = :expires_at
WHERE expires_at < :now

-- release_watchdog_lease --
DELETE FROM watchdog_lease WHERE owner = :owner

-- insert_pending_page --
INSERT INTO pending_pages (notifier, kind, line, task_id, health, page_at, attempts, next_at)
VALUES (:notifier, :kind, :line, :task_id, :health, :page_at, :attempts, :next_at)
RETURNING page_id

-- select_pending_pages --
SELECT page_id, notifier, kind, line, task_id, health, page_at, attempts, next_at
FROM pending_pages ORDER BY page_id

-- update_pending_page --
UPDATE pending_pages SET attempts = :attempts, next_at = :next_at WHERE page_id = :page_id

-- delete_pending_page --
DELETE FROM pending_pages WHERE page_id = :page_id

-- select_open_incident_events --
-- The watchdog's memory of every incident still open, however long the event log: for each
-- task or schedule whose latest opening or closing page opened an incident, its page and
-- watchdog events from that page on, oldest first (they are replayed in order). A released
-- page (one a silence held, sent later) neither opens nor closes.
WITH marks AS (
    SELECT event_id,
           CASE WHEN data::jsonb ->> 'schedule' IS NOT NULL
                THEN 'schedule:' || (data::jsonb ->> 'schedule') ELSE task_id END AS subject,
           data::jsonb ->> 'page' AS page,
           data::jsonb ->> 'released' AS released
    FROM events WHERE kind IN ('page', 'watchdog')
),
turns AS (
    SELECT subject, MAX(event_id) AS event_id FROM marks
    WHERE subject IS NOT NULL AND released IS NULL AND page IN ('incident', 'all_clear')
    GROUP BY subject
),
opened AS (
    SELECT t.subject, t.event_id FROM turns t JOIN marks m ON m.event_id = t.event_id
    WHERE m.page = 'incident'
)
SELECT e.event_id, e.at, e.task_id, e.kind, e.actor, e.message, e.data
FROM marks m JOIN opened o ON o.subject = m.subject AND m.event_id >= o.event_id
JOIN events e ON e.event_id = m.event_id
ORDER BY e.event_id

-- select_watchdog_keys --
-- The one-shot reactions (an overrun's page, a kill, a retry limit) the watchdog already took
-- on tasks that have not finished: a restarted watchdog does not take them again.
SELECT DISTINCT e.data::jsonb ->> 'key' AS key
FROM tasks t JOIN events e ON e.task_id = t.task_id
WHERE t.state NOT IN ('succeeded', 'failed', 'discarded') AND e.kind IN ('page', 'watchdog')
  AND e.data::jsonb ->> 'key' IS NOT NULL

-- select_last_watchdog_digest --
SELECT MAX(at) AS at FROM events
WHERE kind = 'watchdog' AND data::jsonb ->> 'digest' IS NOT NULL

-- select_prunable_tasks --
-- As in sqlite.sql. The rows are locked, and those another writer holds are skipped: an
-- action, a kill or an ack on a task holds its row, so none of them races the prune.
SELECT t.task_id, t.finished_at FROM tasks t
WHERE t.finished_at < :before
  AND t.finished_at >= :after_at AND (t.finished_at > :after_at OR t.task_id > :after_id::text)
  AND NOT EXISTS (SELECT 1 FROM pending_kills k WHERE k.task_id = t.task_id AND k.outcome IS NULL)
  AND NOT EXISTS (SELECT 1 FROM host_requests r
                  WHERE r.task_id = t.task_id AND r.finished_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM acks a WHERE a.task_id = t.task_id AND a.until_at > :now)
  AND t.task_id NOT IN (SELECT jsonb_array_elements_text(w.upstream::jsonb) FROM tasks w
                        WHERE w.finished_at IS NULL)
  AND COALESCE((SELECT e.data::jsonb ->> 'page' FROM events e
                WHERE e.task_id = t.task_id AND e.kind IN ('page', 'watchdog')
                  AND e.data::jsonb ->> 'page' IN ('incident', 'all_clear')
                  AND NOT (e.data::jsonb ? 'released')
                ORDER BY e.event_id DESC LIMIT 1), '') <> 'incident'
ORDER BY t.finished_at, t.task_id
LIMIT :limit
FOR UPDATE OF t SKIP LOCKED

-- prune_events --
DELETE FROM events WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_heartbeat_history --
DELETE FROM heartbeat_history WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_heartbeats --
DELETE FROM heartbeats WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_leases --
DELETE FROM leases WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_acks --
DELETE FROM acks WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_process_samples --
DELETE FROM process_samples
WHERE source IS NULL AND task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_pending_kills --
DELETE FROM pending_kills
WHERE source IS NULL AND task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_host_requests --
DELETE FROM host_requests
WHERE source IS NULL AND task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- prune_tasks --
DELETE FROM tasks WHERE task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))

-- count_finished_before --
SELECT state, count(*) AS n FROM tasks WHERE finished_at < :before GROUP BY state

-- select_finished_page --
-- As in sqlite.sql: a page of the tasks finished before the cursor, newest first.
{task_records}
WHERE t.finished_at <= :after_at
  AND (t.finished_at < :after_at OR t.task_id < :after_id::text)
ORDER BY t.finished_at DESC, t.task_id DESC
LIMIT :limit
