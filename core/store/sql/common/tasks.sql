-- Tasks: create, read, poll, finish, quarantine, resume and discard.
-- Both backends run these blocks as written (core/store/tasks.py); the blocks each writes
-- its own way are in sqlite/tasks.sql and postgresql/tasks.sql.

-- select_task --
SELECT {task_columns} FROM tasks WHERE task_id = :task_id

-- select_all_tasks --
{task_records}

-- count_active_tasks --
SELECT count(*) AS active FROM tasks WHERE finished_at IS NULL

-- select_tasks_to_glance --
-- The first screenful at start-up, read before the whole poll: the active tasks whose last
-- sign of life (a beat, else the start, else the creation) is oldest, those most likely stalled
-- (their ids sorted first: sorting whole records would sort every active task's).
WITH oldest AS (
    SELECT t.task_id, coalesce(h.written_at, t.started_at, t.created_at) AS silent_since
    FROM tasks t
    LEFT JOIN heartbeats h ON h.task_id = t.task_id
    WHERE t.finished_at IS NULL
    ORDER BY silent_since, t.task_id
    LIMIT :limit
)
{task_records}
JOIN oldest ON oldest.task_id = t.task_id
ORDER BY oldest.silent_since, t.task_id

-- count_active_by_state --
SELECT state, count(*) AS tasks FROM tasks WHERE finished_at IS NULL GROUP BY state

-- select_loud_tasks --
-- A poll of a large store (zombietop.judge.quiet): the active tasks that are not quiet, those
-- whose last sign of life is oldest first, each row with how many there are (of them, running,
-- queued). The loud tasks are found first, by joins that read each table once, and only they
-- are sorted: sorting first would sort every active task, and a sort with a LIMIT leads
-- PostgreSQL to look up each task's lease one by one.
WITH loud AS MATERIALIZED (
    SELECT t.task_id, t.state, coalesce(h.written_at, t.started_at, t.created_at) AS silent_since
    FROM tasks t
    LEFT JOIN leases l ON l.task_id = t.task_id
    LEFT JOIN heartbeats h ON h.task_id = t.task_id
    {quiet_joins}
    WHERE t.finished_at IS NULL AND NOT {quiet}
), oldest AS (
    SELECT task_id, silent_since,
           count(*) OVER () AS loud,
           count(*) FILTER (WHERE state = 'running') OVER () AS loud_running,
           count(*) FILTER (WHERE state = 'queued') OVER () AS loud_queued
    FROM loud
    ORDER BY silent_since, task_id
    LIMIT :limit
)
SELECT {columns}, oldest.loud, oldest.loud_running, oldest.loud_queued
{record_joins}
JOIN oldest ON oldest.task_id = t.task_id
ORDER BY oldest.silent_since, t.task_id

-- select_quiet_tasks_found --
-- The dashboard's filter on a large store (zombietop.judge.quiet): the quiet active tasks whose
-- id or latest stage holds the filter's text, by task id, at most :limit. The text comes as
-- :pattern, a LIKE pattern in lower case with its own %, _ and \ escaped (Tasks.find_quiet).
-- Only these two columns are searched (a health word would hold every quiet task); classify
-- judges every task read.
SELECT {columns}
{record_joins}
{quiet_joins}
WHERE t.finished_at IS NULL AND {quiet}
  AND (lower(t.task_id) LIKE :pattern ESCAPE '\'
       OR lower(coalesce(h.stage, '')) LIKE :pattern ESCAPE '\')
ORDER BY t.task_id
LIMIT :limit

-- select_finished_since --
{task_records}
WHERE t.finished_at >= :finished_since

-- select_task_record --
{task_records}
WHERE t.task_id = :task_id

-- insert_task --
-- A run of a job is numbered after the job's latest run; the insert runs in the write
-- transaction, so two runs of one job never take the same number.
INSERT INTO tasks (task_id, run_id, step, step_type, state, attempt, upstream, host, command, cwd,
                   job, run_number, created_at, updated_at)
VALUES (:task_id, :run_id, :step, :step_type, :state, 1, :upstream, :host, :command, :cwd,
        :job,
        CASE WHEN CAST(:job AS TEXT) IS NULL THEN NULL
             ELSE (SELECT coalesce(max(run_number), 0) + 1 FROM tasks WHERE job = :job) END,
        :now, :now)

-- set_process --
UPDATE tasks SET pid = :pid, pid_start_time = :pid_start_time, pid_boot_id = :pid_boot_id,
    pid_start_ticks = :pid_start_ticks, host = :host,
    trace_id = COALESCE(CAST(:trace_id AS TEXT), trace_id),
    span_id = COALESCE(CAST(:span_id AS TEXT), span_id),
    parent_span_id = COALESCE(CAST(:parent_span_id AS TEXT), parent_span_id), updated_at = :now
WHERE task_id = :task_id

-- set_trace --
UPDATE tasks SET trace_id = :trace_id, span_id = :span_id, parent_span_id = :parent_span_id,
    updated_at = :now
WHERE task_id = :task_id

-- finish_task --
UPDATE tasks SET state = :state, exit_code = :exit_code, state_reason = :reason,
    finished_at = :finished_at, updated_at = :now
WHERE task_id = :task_id

-- set_quarantine --
UPDATE tasks SET quarantined_at = :quarantined_at, quarantined_by = :actor,
    quarantine_reason = :reason, updated_at = :now
WHERE task_id = :task_id

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
