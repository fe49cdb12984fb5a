-- Heartbeats, their history and the process samples.
-- The SQLite text of the blocks the two backends write differently (core/store/beats.py);
-- the blocks they share are in common/beats.sql.

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

-- insert_heartbeat_history --
INSERT INTO heartbeat_history (task_id, seq, written_at, stage, progress)
VALUES (:task_id, :seq, :now, :stage, :progress)

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

-- upsert_process_sample --
-- PostgreSQL writes a whole batch in one statement instead (postgresql/beats.sql).
INSERT INTO process_samples (task_id, host, pid, alive, identity_ok, status, cpu_percent,
                             rss_bytes, threads, io_idle_s, idle_s, children, create_time,
                             sampled_at, written_at, source, after_finish)
VALUES (:task_id, :host, :pid, :alive, :identity_ok, :status, :cpu_percent, :rss_bytes, :threads,
        :io_idle_s, :idle_s, :children, :create_time, :sampled_at, :now, :source, :after_finish)
ON CONFLICT (task_id) DO UPDATE SET
    host = excluded.host, source = excluded.source, pid = excluded.pid, alive = excluded.alive,
    identity_ok = excluded.identity_ok, status = excluded.status,
    cpu_percent = excluded.cpu_percent, rss_bytes = excluded.rss_bytes,
    threads = excluded.threads, io_idle_s = excluded.io_idle_s, idle_s = excluded.idle_s,
    children = excluded.children, create_time = excluded.create_time,
    sampled_at = excluded.sampled_at, written_at = excluded.written_at,
    after_finish = excluded.after_finish

-- select_process_samples_of --
-- The samples of the store's tasks a poll of a large store read, and every source's (see
-- select_process_samples). Two halves, sources' and the store's tasks', so that the second looks
-- up the tasks read by their ids instead of joining every sample to its task.
SELECT s.task_id, s.host, s.pid, s.alive, s.identity_ok, s.status, s.cpu_percent, s.rss_bytes,
       s.threads, s.io_idle_s, s.idle_s, s.children, s.create_time, s.sampled_at, s.written_at,
       s.source, s.after_finish
FROM process_samples s
WHERE s.source IS NOT NULL
UNION ALL
SELECT s.task_id, s.host, s.pid, s.alive, s.identity_ok, s.status, s.cpu_percent, s.rss_bytes,
       s.threads, s.io_idle_s, s.idle_s, s.children, s.create_time, s.sampled_at, s.written_at,
       s.source, s.after_finish
FROM process_samples s JOIN tasks t ON t.task_id = s.task_id
WHERE s.source IS NULL AND s.task_id IN (SELECT value FROM json_each(:ids))
  AND (t.finished_at IS NULL OR s.after_finish)
