-- zombietop's SQL for the SQLite store. Blocks are named by a `-- name --` line and loaded once
-- by core/queries.py. Times are REAL seconds since the epoch, written from the store's clock.

-- schema_v1 --
CREATE TABLE tasks (
    task_id             TEXT PRIMARY KEY,
    run_id              TEXT NOT NULL,
    step                TEXT NOT NULL,
    step_type           TEXT NOT NULL,
    state               TEXT NOT NULL,
    attempt             INTEGER NOT NULL DEFAULT 1,
    upstream            TEXT NOT NULL DEFAULT '[]',
    host                TEXT,
    pid                 INTEGER,
    pid_start_time      REAL,
    command             TEXT,
    cwd                 TEXT,
    checkpoint          TEXT,
    exit_code           INTEGER,
    state_reason        TEXT,
    heartbeat_error     TEXT,
    heartbeat_error_at  REAL,
    quarantined_at      REAL,
    quarantined_by      TEXT,
    quarantine_reason   TEXT,
    created_at          REAL NOT NULL,
    claimed_at          REAL,
    started_at          REAL,
    finished_at         REAL,
    updated_at          REAL NOT NULL
);
-- The poll reads finished_at IS NULL (active) plus a recent window: both ride this index, so
-- a million finished rows cost the poll nothing.
CREATE INDEX tasks_finished_at ON tasks (finished_at);
CREATE TABLE leases (
    task_id      TEXT PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    owner        TEXT,
    token        INTEGER NOT NULL,
    acquired_at  REAL,
    renewed_at   REAL,
    expires_at   REAL
);
-- One row per task, upserted on every beat: the poll joins this, never the history.
CREATE TABLE heartbeats (
    task_id              TEXT PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    stage                TEXT,
    progress             REAL,
    counters             TEXT NOT NULL DEFAULT '{}',
    checkpoint           TEXT,
    eta_s                REAL,
    request_name         TEXT,
    request_started_at   REAL,
    trace_id             TEXT,
    reported_at          REAL,
    written_at           REAL NOT NULL,
    progress_changed_at  REAL NOT NULL,
    stage_started_at     REAL NOT NULL,
    seq                  INTEGER NOT NULL
);
CREATE TABLE heartbeat_history (
    task_id     TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    written_at  REAL NOT NULL,
    stage       TEXT,
    progress    REAL,
    PRIMARY KEY (task_id, seq)
);
CREATE TABLE events (
    event_id  INTEGER PRIMARY KEY AUTOINCREMENT,
    at        REAL NOT NULL,
    task_id   TEXT,
    kind      TEXT NOT NULL,
    actor     TEXT NOT NULL,
    message   TEXT NOT NULL,
    data      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_task ON events (task_id, event_id);

-- schema_v2 --
-- A graceful kill in flight: durable so that any zombietop on the host can finish it after the
-- one that sent SIGTERM exits. At most one open (outcome IS NULL) kill per task.
CREATE TABLE pending_kills (
    kill_id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    pid             INTEGER NOT NULL,
    pid_start_time  REAL,
    pgid            INTEGER,
    host            TEXT,
    requested_by    TEXT NOT NULL,
    term_sent_at    REAL NOT NULL,
    deadline        REAL NOT NULL,
    outcome         TEXT,
    finished_at     REAL
);
CREATE INDEX pending_kills_task ON pending_kills (task_id, kill_id);
CREATE UNIQUE INDEX pending_kills_open ON pending_kills (task_id) WHERE outcome IS NULL;

-- schema_v3 --
-- Fleets: one agent per host reports its presence, the processes behind its host's tasks, and
-- carries out the actions other hosts ask for.
CREATE TABLE agents (
    host         TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    interval_s   REAL NOT NULL,
    started_at   REAL NOT NULL,
    seen_at      REAL NOT NULL,
    reported_at  REAL,
    stopped_at   REAL
);
CREATE TABLE process_samples (
    task_id      TEXT PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    alive        INTEGER NOT NULL,
    identity_ok  INTEGER NOT NULL,
    status       TEXT,
    cpu_percent  REAL,
    rss_bytes    INTEGER,
    threads      INTEGER,
    io_idle_s    REAL,
    children     INTEGER NOT NULL,
    create_time  REAL,
    sampled_at   REAL NOT NULL,
    written_at   REAL NOT NULL
);
CREATE TABLE host_requests (
    request_id      INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    host            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    expected_token  INTEGER,
    actor           TEXT NOT NULL,
    reason          TEXT,
    requested_at    REAL NOT NULL,
    claimed_by      TEXT,
    claimed_at      REAL,
    outcome         TEXT,
    message         TEXT,
    finished_at     REAL
);
CREATE INDEX host_requests_open ON host_requests (host, request_id) WHERE finished_at IS NULL;
CREATE UNIQUE INDEX host_requests_one_open ON host_requests (task_id, kind) WHERE finished_at IS NULL;

-- schema_v4 --
-- Every change to a task's row, lease, latest heartbeat or kill stamps the task with the next
-- revision. SQLite has one writer at a time, so revisions follow commit order and a poll needs
-- only the tasks stamped after the revision it last read (select_tasks_changed); a deleted
-- task bumps `removals`, which sends the next poll back to reading everything.
CREATE TABLE revision (
    singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
    changes    INTEGER NOT NULL,
    removals   INTEGER NOT NULL
);
INSERT INTO revision (singleton, changes, removals) VALUES (1, 0, 0);
ALTER TABLE tasks ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_rev ON tasks (rev);
CREATE TRIGGER tasks_insert_stamps_task AFTER INSERT ON tasks BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
-- The stamp itself is an update of tasks: the WHEN clause keeps it from stamping again.
CREATE TRIGGER tasks_update_stamps_task AFTER UPDATE ON tasks WHEN NEW.rev = OLD.rev BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER tasks_delete_counts AFTER DELETE ON tasks BEGIN
    UPDATE revision SET removals = removals + 1;
END;
CREATE TRIGGER leases_insert_stamps_task AFTER INSERT ON leases BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER leases_update_stamps_task AFTER UPDATE ON leases BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER leases_delete_stamps_task AFTER DELETE ON leases BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = OLD.task_id;
END;
CREATE TRIGGER heartbeats_insert_stamps_task AFTER INSERT ON heartbeats BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER heartbeats_update_stamps_task AFTER UPDATE ON heartbeats BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER heartbeats_delete_stamps_task AFTER DELETE ON heartbeats BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = OLD.task_id;
END;
CREATE TRIGGER pending_kills_insert_stamps_task AFTER INSERT ON pending_kills BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER pending_kills_update_stamps_task AFTER UPDATE ON pending_kills BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER pending_kills_delete_stamps_task AFTER DELETE ON pending_kills BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = OLD.task_id;
END;

-- schema_v5 --
-- A task's own row gets a stamp of its own too (task_rev): a beat or a renewal stamps the task
-- (rev) but leaves task_rev. No read uses it any more (a poll reads every changed task whole);
-- the column and its triggers stay, as a migration already applied does.
ALTER TABLE tasks ADD COLUMN task_rev INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER tasks_insert_stamps_task;
DROP TRIGGER tasks_update_stamps_task;
CREATE TRIGGER tasks_insert_stamps_task AFTER INSERT ON tasks BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision), task_rev = (SELECT changes FROM revision)
    WHERE task_id = NEW.task_id;
END;
-- The stamp itself is an update of tasks: the WHEN clause keeps it from stamping again, and
-- keeps the stamps of a lease, beat or kill (which move rev alone) from moving task_rev.
CREATE TRIGGER tasks_update_stamps_task AFTER UPDATE ON tasks WHEN NEW.rev = OLD.rev BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision), task_rev = (SELECT changes FROM revision)
    WHERE task_id = NEW.task_id;
END;

-- schema_v6 --
-- Who asked, as the asking process's real uid says (not the actor text, which is free-form):
-- an agent carries out only its own user's requests and those of users its config allows.
ALTER TABLE host_requests ADD COLUMN requester_uid INTEGER;
ALTER TABLE host_requests ADD COLUMN requester TEXT;

-- schema_v7 --
-- The on-call loop: acks (someone is on a task's incident, until a time) and silences (a rule by
-- task glob, step type or host that holds pages until it ends; an ended one is kept, with who
-- ended it). Both are written with the store's clock. Schedules count a step's runs by when they
-- were claimed: the index keeps that one lookup per schedule a poll cheap.
CREATE TABLE acks (
    task_id   TEXT PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    actor     TEXT NOT NULL,
    reason    TEXT,
    acked_at  REAL NOT NULL,
    until_at  REAL NOT NULL
);
CREATE TABLE silences (
    silence_id  INTEGER PRIMARY KEY AUTOINCREMENT,
    matcher     TEXT NOT NULL CHECK (matcher IN ('task', 'step_type', 'host')),
    pattern     TEXT NOT NULL,
    actor       TEXT NOT NULL,
    reason      TEXT NOT NULL,
    created_at  REAL NOT NULL,
    until_at    REAL NOT NULL,
    ended_at    REAL,
    ended_by    TEXT
);
CREATE INDEX silences_open ON silences (until_at) WHERE ended_at IS NULL;
CREATE INDEX tasks_step_claimed ON tasks (step, claimed_at);

-- schema_v8 --
-- Where a beat came from: 'reported' by the job (a heartbeat line, `zombietop beat`, the SDK)
-- or 'observed' by `zombietop run` when the command's process tree moved (CPU, I/O, output)
-- while it reported nothing: proof of activity, never of progress.
ALTER TABLE heartbeats ADD COLUMN source TEXT NOT NULL DEFAULT 'reported';

-- schema_v9 --
-- The store's clock: the wall time when the first zombietop of a boot opened the store, with
-- the boot clock (CLOCK_BOOTTIME) then. Every process of that boot reads anchor + boot clock
-- since, so a step of the wall clock does not age every task at once (AnchoredClock).
CREATE TABLE clock_anchors (
    boot_id  TEXT PRIMARY KEY,
    wall     REAL NOT NULL,
    boot     REAL NOT NULL
);
-- One watchdog acts on a store at a time: it holds this lease; the others wait as standbys.
CREATE TABLE watchdog_lease (
    singleton    INTEGER PRIMARY KEY CHECK (singleton = 1),
    owner        TEXT NOT NULL,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    token        INTEGER NOT NULL,
    acquired_at  REAL NOT NULL,
    renewed_at   REAL NOT NULL,
    expires_at   REAL NOT NULL
);
-- Pages not yet delivered, one row per channel: a watchdog that stops or fails leaves them
-- here and the next one delivers them.
CREATE TABLE pending_pages (
    page_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    notifier   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    line       TEXT NOT NULL,
    task_id    TEXT,
    health     TEXT,
    page_at    REAL NOT NULL,
    attempts   INTEGER NOT NULL,
    next_at    REAL NOT NULL
);

-- schema_v10 --
-- The samples, kills and host requests of a read-only source's tasks (Airflow's task instances,
-- which the tasks table never holds): `source` names the source, NULL for this store's own tasks.
-- So the three tables lose their reference to tasks (SQLite drops one only by copying the table;
-- tasks are never deleted, so the cascade they lose never ran).
CREATE TABLE process_samples_v10 (
    task_id      TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    alive        INTEGER NOT NULL,
    identity_ok  INTEGER NOT NULL,
    status       TEXT,
    cpu_percent  REAL,
    rss_bytes    INTEGER,
    threads      INTEGER,
    io_idle_s    REAL,
    children     INTEGER NOT NULL,
    create_time  REAL,
    sampled_at   REAL NOT NULL,
    written_at   REAL NOT NULL,
    source       TEXT
);
INSERT INTO process_samples_v10 (task_id, host, pid, alive, identity_ok, status, cpu_percent,
                                 rss_bytes, threads, io_idle_s, children, create_time,
                                 sampled_at, written_at)
SELECT task_id, host, pid, alive, identity_ok, status, cpu_percent, rss_bytes, threads, io_idle_s,
       children, create_time, sampled_at, written_at FROM process_samples;
DROP TABLE process_samples;
ALTER TABLE process_samples_v10 RENAME TO process_samples;
CREATE TABLE pending_kills_v10 (
    kill_id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         TEXT NOT NULL,
    pid             INTEGER NOT NULL,
    pid_start_time  REAL,
    pgid            INTEGER,
    host            TEXT,
    requested_by    TEXT NOT NULL,
    term_sent_at    REAL NOT NULL,
    deadline        REAL NOT NULL,
    outcome         TEXT,
    finished_at     REAL,
    source          TEXT
);
INSERT INTO pending_kills_v10 (kill_id, task_id, pid, pid_start_time, pgid, host, requested_by,
                               term_sent_at, deadline, outcome, finished_at)
SELECT kill_id, task_id, pid, pid_start_time, pgid, host, requested_by, term_sent_at, deadline,
       outcome, finished_at FROM pending_kills;
DROP TABLE pending_kills;
ALTER TABLE pending_kills_v10 RENAME TO pending_kills;
CREATE INDEX pending_kills_task ON pending_kills (task_id, kill_id);
CREATE UNIQUE INDEX pending_kills_open ON pending_kills (task_id) WHERE outcome IS NULL;
CREATE TRIGGER pending_kills_insert_stamps_task AFTER INSERT ON pending_kills BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER pending_kills_update_stamps_task AFTER UPDATE ON pending_kills BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = NEW.task_id;
END;
CREATE TRIGGER pending_kills_delete_stamps_task AFTER DELETE ON pending_kills BEGIN
    UPDATE revision SET changes = changes + 1;
    UPDATE tasks SET rev = (SELECT changes FROM revision) WHERE task_id = OLD.task_id;
END;
CREATE TABLE host_requests_v10 (
    request_id      INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         TEXT NOT NULL,
    host            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    expected_token  INTEGER,
    actor           TEXT NOT NULL,
    reason          TEXT,
    requested_at    REAL NOT NULL,
    claimed_by      TEXT,
    claimed_at      REAL,
    outcome         TEXT,
    message         TEXT,
    finished_at     REAL,
    requester_uid   INTEGER,
    requester       TEXT,
    source          TEXT
);
INSERT INTO host_requests_v10 (request_id, task_id, host, kind, expected_token, actor, reason,
                               requested_at, claimed_by, claimed_at, outcome, message,
                               finished_at, requester_uid, requester)
SELECT request_id, task_id, host, kind, expected_token, actor, reason, requested_at, claimed_by,
       claimed_at, outcome, message, finished_at, requester_uid, requester FROM host_requests;
DROP TABLE host_requests;
ALTER TABLE host_requests_v10 RENAME TO host_requests;
CREATE INDEX host_requests_open ON host_requests (host, request_id) WHERE finished_at IS NULL;
CREATE UNIQUE INDEX host_requests_one_open ON host_requests (task_id, kind) WHERE finished_at IS NULL;

-- schema_v11 --
-- A process's start as the kernel counts it: the boot's id, and the clock ticks from the host's
-- boot to the start (whatever time namespace read them). Identity checks compare these two
-- exactly. pid_start_time stays for people to read; rows written before v11 have no ticks
-- (NULL) and are still compared by pid_start_time, within a tolerance.
ALTER TABLE tasks ADD COLUMN pid_boot_id TEXT;
ALTER TABLE tasks ADD COLUMN pid_start_ticks INTEGER;
ALTER TABLE pending_kills ADD COLUMN pid_boot_id TEXT;
ALTER TABLE pending_kills ADD COLUMN pid_start_ticks INTEGER;

-- schema_v12 --
-- When each schedule was first seen (its name, step, cron and zone: a changed cron or zone is a
-- new schedule): its fire times before that are not judged, so a schedule just added to the
-- config is not missed for the nights before it existed.
CREATE TABLE schedules_seen (
    name        TEXT NOT NULL,
    step        TEXT NOT NULL,
    cron        TEXT NOT NULL,
    tz          TEXT NOT NULL,
    first_seen  REAL NOT NULL,
    PRIMARY KEY (name, step, cron, tz)
);

-- schema_v13 --
-- Retention (`[store] keep_finished`): finished tasks are pruned oldest first and `status --all`
-- reads them newest first, both in (finished_at, task_id) order; a pruned task's host requests
-- are found by its id.
DROP INDEX tasks_finished_at;
CREATE INDEX tasks_finished_at ON tasks (finished_at, task_id);
CREATE INDEX host_requests_task ON host_requests (task_id);

-- select_task --
SELECT {task_columns} FROM tasks WHERE task_id = :task_id

-- select_tasks_for_poll --
-- Every active task plus those finished since :finished_since, with lease, latest beat and
-- latest kill.
{task_records}
WHERE t.finished_at IS NULL
UNION ALL
{task_records}
WHERE t.finished_at >= :finished_since

-- select_revision --
SELECT changes, removals FROM revision WHERE singleton = 1

-- select_tasks_changed --
-- The tasks stamped after :rev, finished or not (the poll cache decides what it keeps).
{task_records}
WHERE t.rev > :rev

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
-- Taking a lease moves a waiting task to starting; a running task keeps its state.
UPDATE tasks SET
    state = CASE WHEN state IN ('queued', 'interrupted') THEN 'starting' ELSE state END,
    claimed_at = :now, updated_at = :now, attempt = attempt + :attempt_bump
WHERE task_id = :task_id

-- upsert_heartbeat --
-- progress_changed_at moves only when stage, progress, counters or checkpoint change, and
-- stage_started_at only when the stage does: that is what tells spinning from healthy.
-- The column order of the SET list matters: SQLite evaluates every right-hand side against
-- the old row, so reading heartbeats.* anywhere in it sees the previous beat.
INSERT INTO heartbeats (task_id, stage, progress, counters, checkpoint, eta_s, request_name,
                        request_started_at, trace_id, reported_at, written_at,
                        progress_changed_at, stage_started_at, seq)
VALUES (:task_id, :stage, :progress, :counters, :checkpoint, :eta_s, :request_name,
        COALESCE(:request_at, CASE WHEN :request_name IS NOT NULL THEN :now END),
        :trace_id, :reported_at, :now, :now, :now,
        -- A resumed task starts without a latest beat but keeps its history: continue the seq.
        (SELECT COALESCE(max(seq), 0) + 1 FROM heartbeat_history WHERE task_id = :task_id))
ON CONFLICT (task_id) DO UPDATE SET
    progress_changed_at = CASE
        WHEN heartbeats.stage IS excluded.stage AND heartbeats.progress IS excluded.progress
             -- An observation's counters ride along; they are activity, not progress.
             AND json_remove(heartbeats.counters, '$.cpu_s', '$.io_bytes', '$.out_lines')
                 = json_remove(excluded.counters, '$.cpu_s', '$.io_bytes', '$.out_lines')
             AND heartbeats.checkpoint IS excluded.checkpoint
        THEN heartbeats.progress_changed_at ELSE excluded.written_at END,
    stage_started_at = CASE
        WHEN heartbeats.stage IS excluded.stage THEN heartbeats.stage_started_at
        ELSE excluded.written_at END,
    stage = excluded.stage, progress = excluded.progress, counters = excluded.counters,
    checkpoint = excluded.checkpoint, eta_s = excluded.eta_s,
    -- A request keeps its start while the same name stays in flight (unless req_at says).
    request_started_at = CASE
        WHEN excluded.request_name IS NULL THEN NULL
        WHEN :request_at IS NOT NULL THEN :request_at
        WHEN heartbeats.request_name IS excluded.request_name
        THEN COALESCE(heartbeats.request_started_at, excluded.written_at)
        ELSE excluded.written_at END,
    request_name = excluded.request_name,
    trace_id = excluded.trace_id, reported_at = excluded.reported_at,
    written_at = excluded.written_at, seq = heartbeats.seq + 1, source = 'reported'
RETURNING seq

-- observe_heartbeat --
-- An observed beat adds its counters (cpu_s, io_bytes, out_lines) to the latest beat and moves
-- its time; the stage, progress and progress_changed_at stay as the job last reported them.
INSERT INTO heartbeats (task_id, counters, written_at, progress_changed_at, stage_started_at,
                        seq, source)
VALUES (:task_id, :counters, :now, :now, :now,
        (SELECT COALESCE(max(seq), 0) + 1 FROM heartbeat_history WHERE task_id = :task_id),
        'observed')
ON CONFLICT (task_id) DO UPDATE SET
    counters = json_patch(heartbeats.counters, excluded.counters),
    written_at = excluded.written_at, seq = heartbeats.seq + 1, source = 'observed'
RETURNING seq, stage, progress

-- mark_running_observed --
-- The first sign of activity starts a task, as a first beat does; an observation clears no
-- heartbeat error (a malformed line is still the job's last word).
UPDATE tasks SET state = 'running', started_at = COALESCE(started_at, :now), updated_at = :now
WHERE task_id = :task_id AND (state = 'starting' OR started_at IS NULL)

-- select_heartbeat --
SELECT {heartbeat_columns} FROM heartbeats WHERE task_id = :task_id

-- insert_heartbeat_history --
INSERT INTO heartbeat_history (task_id, seq, written_at, stage, progress)
VALUES (:task_id, :seq, :now, :stage, :progress)

-- trim_heartbeat_history --
DELETE FROM heartbeat_history WHERE task_id = :task_id AND seq <= :oldest_dropped

-- mark_running --
-- The first heartbeat is the moment a task starts executing. Later beats touch the task's row
-- only when they change it (a checkpoint, a cleared heartbeat error): most beats leave it as it
-- was, so a poll keeps the task's record and the write stays one row smaller.
UPDATE tasks SET
    state = CASE WHEN state = 'starting' THEN 'running' ELSE state END,
    started_at = COALESCE(started_at, :now),
    checkpoint = COALESCE(:checkpoint, checkpoint),
    heartbeat_error = NULL, heartbeat_error_at = NULL,
    updated_at = :now
WHERE task_id = :task_id
  AND (state = 'starting' OR started_at IS NULL OR heartbeat_error IS NOT NULL
       OR heartbeat_error_at IS NOT NULL OR (:checkpoint IS NOT NULL AND checkpoint IS NOT :checkpoint))

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
WHERE (:task_id IS NULL OR task_id = :task_id) AND (:before_id IS NULL OR event_id < :before_id)
  AND (:kind IS NULL OR kind = :kind) AND (:skip_kind IS NULL OR kind <> :skip_kind)
ORDER BY event_id DESC LIMIT :limit


-- select_open_kill --
SELECT {kill_columns} FROM pending_kills k WHERE k.task_id = :task_id AND k.outcome IS NULL

-- select_open_kills_for_host --
-- Every open kill this host must finish, soonest deadline first.
SELECT {kill_columns} FROM pending_kills k
WHERE k.outcome IS NULL AND (k.host = :host OR (k.host IS NULL AND :host IS NULL))
ORDER BY k.deadline, k.kill_id

-- select_source_kills --
-- The latest kill of each read-only source's task, open or finished since :since (the store's
-- clock; NULL: all): a poll joins them to the source's records as the tasks table's join does.
SELECT {kill_columns} FROM pending_kills k
WHERE k.source IS NOT NULL AND (k.outcome IS NULL OR :since IS NULL OR k.finished_at >= :since)
  AND k.kill_id = (SELECT max(kill_id) FROM pending_kills WHERE task_id = k.task_id)

-- insert_pending_kill --
INSERT INTO pending_kills (task_id, pid, pid_start_time, pid_boot_id, pid_start_ticks, pgid, host,
                           requested_by, term_sent_at, deadline, source)
VALUES (:task_id, :pid, :pid_start_time, :pid_boot_id, :pid_start_ticks, :pgid, :host,
        :requested_by, :now, :deadline, :source)

-- close_pending_kill --
-- Compare-and-swap on the open row: of two zombietops racing to finish a kill, one wins.
UPDATE pending_kills SET outcome = :outcome, finished_at = :now
WHERE task_id = :task_id AND outcome IS NULL

-- bump_lease_token --
-- Resume and discard take the lease from whoever holds it: the token grows and nobody owns it,
-- so the old owner's renew, fenced heartbeat and finish all fail.
INSERT INTO leases (task_id, owner, token, acquired_at, renewed_at, expires_at)
VALUES (:task_id, NULL, :token, NULL, :now, NULL)
ON CONFLICT (task_id) DO UPDATE SET
    owner = NULL, token = excluded.token, renewed_at = excluded.renewed_at, expires_at = NULL

-- requeue_task --
-- Keep the checkpoint and the heartbeat (where it was); forget the old process and the end.
UPDATE tasks SET state = 'queued', attempt = attempt + 1, pid = NULL, pid_start_time = NULL,
    pid_boot_id = NULL, pid_start_ticks = NULL, exit_code = NULL, state_reason = :reason, heartbeat_error = NULL, heartbeat_error_at = NULL,
    quarantined_at = NULL, quarantined_by = NULL, quarantine_reason = NULL,
    claimed_at = NULL, started_at = NULL, finished_at = NULL, updated_at = :now
WHERE task_id = :task_id

-- delete_heartbeat --
-- A requeued task has no latest beat until its next attempt beats (history stays for sparklines),
-- so the new attempt is judged by its start grace, not by the old attempt's silence.
DELETE FROM heartbeats WHERE task_id = :task_id

-- discard_task --
UPDATE tasks SET state = 'discarded', state_reason = :reason, finished_at = :now, updated_at = :now
WHERE task_id = :task_id

-- upsert_agent --
-- An agent's beat: seen_at is the store's clock, reported_at the agent host's; their
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
WHERE finished_at IS NULL AND (:host IS NULL OR host = :host)
ORDER BY request_id

-- claim_host_request --
-- Compare-and-swap: of two agents claiming one request, one wins. A request an earlier agent of
-- the host claimed and never finished (it died) may be claimed again.
UPDATE host_requests SET claimed_by = :agent_id, claimed_at = :now
WHERE request_id = :request_id AND finished_at IS NULL AND claimed_by IS NOT :agent_id

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

-- select_clock_anchor --
SELECT wall, boot FROM clock_anchors WHERE boot_id = :boot_id

-- insert_clock_anchor --
-- Two processes of a new boot opening the store at once: the first anchor wins.
INSERT INTO clock_anchors (boot_id, wall, boot) VALUES (:boot_id, :wall, :boot)
ON CONFLICT (boot_id) DO NOTHING

-- prune_clock_anchors --
DELETE FROM clock_anchors WHERE boot_id <> :boot_id AND wall < :wall - 2592000

-- insert_watchdog_lease --
-- The first watchdog of a store: nobody held the lease before.
INSERT INTO watchdog_lease (singleton, owner, host, pid, token, acquired_at, renewed_at, expires_at)
VALUES (1, :owner, :host, :pid, 1, :now, :now, :expires_at)
ON CONFLICT (singleton) DO NOTHING

-- select_watchdog_lease --
SELECT owner, host, pid, token, acquired_at, renewed_at, expires_at FROM watchdog_lease

-- hold_watchdog_lease_row --
-- SQLite: BEGIN IMMEDIATE already holds the whole file.
SELECT owner, host, pid, token, acquired_at, renewed_at, expires_at FROM watchdog_lease

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
           CASE WHEN json_extract(data, '$.schedule') IS NOT NULL
                THEN 'schedule:' || json_extract(data, '$.schedule') ELSE task_id END AS subject,
           json_extract(data, '$.page') AS page,
           json_extract(data, '$.released') AS released
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
SELECT DISTINCT json_extract(e.data, '$.key') AS key
FROM tasks t JOIN events e ON e.task_id = t.task_id
WHERE t.state NOT IN ('succeeded', 'failed', 'discarded') AND e.kind IN ('page', 'watchdog')
  AND json_extract(e.data, '$.key') IS NOT NULL

-- select_last_watchdog_digest --
SELECT MAX(at) AS at FROM events
WHERE kind = 'watchdog' AND json_extract(data, '$.digest') IS NOT NULL

-- select_prunable_tasks --
-- Up to :limit tasks finished before :before, oldest first from the cursor (:after_at,
-- :after_id), that nothing needs any more: no open incident (its latest incident page has no
-- all-clear after it), no unfinished task waiting behind it, no open kill or host request, no
-- ack in force.
SELECT t.task_id, t.finished_at FROM tasks t
WHERE t.finished_at < :before
  AND t.finished_at >= :after_at AND (t.finished_at > :after_at OR t.task_id > :after_id)
  AND NOT EXISTS (SELECT 1 FROM pending_kills k WHERE k.task_id = t.task_id AND k.outcome IS NULL)
  AND NOT EXISTS (SELECT 1 FROM host_requests r
                  WHERE r.task_id = t.task_id AND r.finished_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM acks a WHERE a.task_id = t.task_id AND a.until_at > :now)
  AND t.task_id NOT IN (SELECT u.value FROM tasks w, json_each(w.upstream) u
                        WHERE w.finished_at IS NULL)
  AND COALESCE((SELECT json_extract(e.data, '$.page') FROM events e
                WHERE e.task_id = t.task_id AND e.kind IN ('page', 'watchdog')
                  AND json_extract(e.data, '$.page') IN ('incident', 'all_clear')
                  AND json_extract(e.data, '$.released') IS NULL
                ORDER BY e.event_id DESC LIMIT 1), '') <> 'incident'
ORDER BY t.finished_at, t.task_id
LIMIT :limit

-- prune_events --
DELETE FROM events WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_heartbeat_history --
DELETE FROM heartbeat_history WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_heartbeats --
DELETE FROM heartbeats WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_leases --
DELETE FROM leases WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_acks --
DELETE FROM acks WHERE task_id IN (SELECT value FROM json_each(:ids))

-- prune_process_samples --
DELETE FROM process_samples
WHERE source IS NULL AND task_id IN (SELECT value FROM json_each(:ids))

-- prune_pending_kills --
DELETE FROM pending_kills
WHERE source IS NULL AND task_id IN (SELECT value FROM json_each(:ids))

-- prune_host_requests --
DELETE FROM host_requests
WHERE source IS NULL AND task_id IN (SELECT value FROM json_each(:ids))

-- prune_tasks --
DELETE FROM tasks WHERE task_id IN (SELECT value FROM json_each(:ids))

-- count_finished_before --
SELECT state, count(*) AS n FROM tasks WHERE finished_at < :before GROUP BY state

-- select_finished_page --
-- Up to :limit tasks finished before the cursor (:after_at, :after_id), newest first: `status
-- --all` reads every finished task a page at a time. The first cursor is (the window, '').
{task_records}
WHERE t.finished_at <= :after_at AND (t.finished_at < :after_at OR t.task_id < :after_id)
ORDER BY t.finished_at DESC, t.task_id DESC
LIMIT :limit
