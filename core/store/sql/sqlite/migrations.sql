-- The SQLite store's schema, one block per version (schema_vN), applied in order by
-- core/store/sqlite.py. Times are REAL seconds since the epoch, written from the store's clock.

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

-- schema_v14 --
-- Acks on the tasks of read-only sources (Airflow's task instances), which the tasks table
-- never holds, so acks cannot point at them. They are keyed by the source's name as well as
-- its task id: two sources (a staging and a production Airflow with the same DAGs) can both
-- have a task DAG/TASK/RUN, and an ack on one must not quiet the other.
CREATE TABLE source_acks (
    source    TEXT NOT NULL,
    task_id   TEXT NOT NULL,
    actor     TEXT NOT NULL,
    reason    TEXT,
    acked_at  REAL NOT NULL,
    until_at  REAL NOT NULL,
    PRIMARY KEY (source, task_id)
);

-- schema_v15 --
-- Jobs: a run belongs to a job (a name that runs again and again) and has a number within it,
-- counted from 1. A job's history is read by its name, newest run first; the summary of its
-- successful runs by (job, state, finished_at).
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
    last_finished_at REAL,
    last_success_at  REAL,
    durations        TEXT NOT NULL,
    updated_at       REAL NOT NULL
);
CREATE INDEX jobs_updated ON jobs (updated_at);

-- schema_v16 --
-- An agent's samples say how long the process has used no CPU and done no I/O (idle_s), so a
-- task on another host can be judged idle under a beating supervisor; after_finish says the
-- agent sampled the process knowing its task had finished, so the sample can tell an orphan.
ALTER TABLE process_samples ADD COLUMN idle_s REAL;
ALTER TABLE process_samples ADD COLUMN after_finish INTEGER NOT NULL DEFAULT 0;

-- schema_v17 --
-- A page kept for a channel that keeps incidents (PagerDuty) names its incident, so a
-- watchdog that takes it over triggers, acknowledges and resolves the same one; and its
-- runbook, which such a channel sends as a link.
ALTER TABLE pending_pages ADD COLUMN incident TEXT;
ALTER TABLE pending_pages ADD COLUMN runbook TEXT;

-- schema_v18 --
-- A run lasts from its claim to its end, not from its first heartbeat: a job that beat once, at
-- its end, was kept as taking no time. Each job's durations are counted again from the claims
-- of its latest successful runs (at most 100, as the summary keeps). A job whose successful
-- runs were all removed by retention keeps its list as it was.
UPDATE jobs SET durations = (
    SELECT json_group_array(took) FROM (
        SELECT took FROM (
            SELECT max(0.0, t.finished_at - COALESCE(t.claimed_at, t.started_at, t.created_at))
                       AS took,
                   t.finished_at, t.task_id
            FROM tasks t
            WHERE t.job = jobs.job AND t.state = 'succeeded' AND t.finished_at IS NOT NULL
            ORDER BY t.finished_at DESC, t.task_id DESC LIMIT 100
        ) ORDER BY finished_at, task_id
    )
)
WHERE EXISTS (SELECT 1 FROM tasks t
              WHERE t.job = jobs.job AND t.state = 'succeeded' AND t.finished_at IS NOT NULL);

-- schema_v19 --
-- Each job keeps how its runs of the last 30 days began and ended (a JSON list of
-- [began, finished_at, succeeded], oldest first), for the rules that judge a job's start
-- times and failure rate against its own history. Kept from this version on: the runs that
-- ended before it are not counted again.
ALTER TABLE jobs ADD COLUMN ends TEXT NOT NULL DEFAULT '[]';

-- schema_v20 --
-- The trace a task's run belongs to (W3C trace context: `zombietop run` and the SDK join the
-- caller's TRACEPARENT or start a trace), so pages and `status --json` name it; the run's own
-- span in it, and the caller's span it joined (NULL: the run started the trace), so the span
-- exported for the run is the one its command's spans name as their parent.
ALTER TABLE tasks ADD COLUMN trace_id TEXT;
ALTER TABLE tasks ADD COLUMN span_id TEXT;
ALTER TABLE tasks ADD COLUMN parent_span_id TEXT;

-- schema_v21 --
-- An agent's tick drops its host's samples it did not write again: by host, not by a scan of
-- every host's samples (a fleet of a thousand hosts has a thousand times its own).
CREATE INDEX process_samples_host ON process_samples (host, source);

-- schema_v22 --
-- A kept page's trace (the W3C trace id) and the link to it: a page sent after a failed try,
-- or by the next watchdog, names the trace in PagerDuty's details as the first try did.
ALTER TABLE pending_pages ADD COLUMN trace_id TEXT;
ALTER TABLE pending_pages ADD COLUMN trace_url TEXT;

-- schema_v23 --
-- The samples that say a task's process is gone, so that a poll of a large store finds the few
-- tasks they keep from being quiet without reading every sample (zombietop.judge.quiet).
CREATE INDEX process_samples_gone ON process_samples (task_id)
    WHERE NOT alive OR NOT identity_ok OR status = 'zombie';
