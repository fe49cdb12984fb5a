-- Heartbeats, their history and the process samples.
-- Both backends run these blocks as written (core/store/beats.py); the blocks each writes
-- its own way are in sqlite/beats.sql and postgresql/beats.sql.

-- mark_running_observed --
-- The first sign of activity starts a task, as a first beat does; an observation clears no
-- heartbeat error (a malformed line is still the job's last word).
UPDATE tasks SET state = 'running', started_at = COALESCE(started_at, :now), updated_at = :now
WHERE task_id = :task_id AND (state = 'starting' OR started_at IS NULL)

-- select_heartbeat --
SELECT {heartbeat_columns} FROM heartbeats WHERE task_id = :task_id

-- trim_heartbeat_history --
DELETE FROM heartbeat_history WHERE task_id = :task_id AND seq <= :oldest_dropped

-- select_heartbeat_history --
SELECT written_at, stage, progress FROM heartbeat_history
WHERE task_id = :task_id ORDER BY seq DESC LIMIT :limit

-- set_heartbeat_error --
UPDATE tasks SET heartbeat_error = :message, heartbeat_error_at = :now, updated_at = :now
WHERE task_id = :task_id

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
