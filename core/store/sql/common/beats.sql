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

-- select_process_samples --
-- A sample of a finished task counts only when the agent took it knowing the task finished:
-- one taken before the finish would show the process as it was while the task ran.
SELECT s.task_id, s.host, s.pid, s.alive, s.identity_ok, s.status, s.cpu_percent, s.rss_bytes,
       s.threads, s.io_idle_s, s.idle_s, s.children, s.create_time, s.sampled_at, s.written_at,
       s.source, s.after_finish
FROM process_samples s LEFT JOIN tasks t ON t.task_id = s.task_id
WHERE s.source IS NOT NULL OR (t.task_id IS NOT NULL AND (t.finished_at IS NULL OR s.after_finish))

-- prune_source_samples --
-- A source's samples of this host that this round did not write again: its task instance
-- finished or left the host (the source's tasks are not in tasks, so no join drops them).
DELETE FROM process_samples
WHERE host = :host AND source = :source AND written_at < :now

-- prune_own_samples --
-- The samples of this store's tasks on this host that the agent's round did not write again:
-- the task finished and its process is no longer looked at, or it left the host.
DELETE FROM process_samples
WHERE host = :host AND source IS NULL AND written_at < :now
