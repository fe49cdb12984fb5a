-- Heartbeats, their history and the process samples.
-- The PostgreSQL text of the blocks the two backends write differently (core/store/beats.py);
-- the blocks they share are in common/beats.sql.

-- upsert_heartbeat --
-- As in sqlite/beats.sql: progress_changed_at moves only when stage, progress, counters or
-- checkpoint change, stage_started_at only when the stage does; every right-hand side sees the
-- old row.
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
-- As in sqlite/beats.sql: counters added, time moved, stage and progress kept.
INSERT INTO heartbeats AS hb (task_id, counters, written_at, progress_changed_at,
                              stage_started_at, seq, source)
VALUES (:task_id, :counters, :now, :now, :now,
        (SELECT COALESCE(max(seq), 0) + 1 FROM heartbeat_history WHERE task_id = :task_id),
        'observed')
ON CONFLICT (task_id) DO UPDATE SET
    counters = (hb.counters::jsonb || excluded.counters::jsonb)::text,
    written_at = excluded.written_at, seq = hb.seq + 1, source = 'observed'
RETURNING seq, stage, progress

-- insert_heartbeat_history --
INSERT INTO heartbeat_history (task_id, seq, written_at, stage, progress)
VALUES (:task_id, :seq, :now, :stage::text, :progress::double precision)

-- mark_running --
-- Later beats touch the task's row only when they change it (see sqlite/beats.sql).
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

-- upsert_process_sample_bulk --
-- upsert_process_sample (sqlite/beats.sql) for a whole batch in one statement: each parameter
-- is an array holding one element a row, read back into rows by unnest. The batch holds each
-- task once (the caller's samples are keyed by task id): ON CONFLICT may touch a row only once.
INSERT INTO process_samples (task_id, host, pid, alive, identity_ok, status, cpu_percent,
                             rss_bytes, threads, io_idle_s, idle_s, children, create_time,
                             sampled_at, written_at, source, after_finish)
SELECT * FROM unnest(:task_id::text[], :host::text[], :pid::integer[], :alive::boolean[],
                     :identity_ok::boolean[], :status::text[], :cpu_percent::double precision[],
                     :rss_bytes::bigint[], :threads::integer[], :io_idle_s::double precision[],
                     :idle_s::double precision[], :children::integer[],
                     :create_time::double precision[], :sampled_at::double precision[],
                     :now::double precision[], :source::text[], :after_finish::boolean[])
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
WHERE s.source IS NULL AND s.task_id IN (SELECT jsonb_array_elements_text(:ids::jsonb))
  AND (t.finished_at IS NULL OR s.after_finish)
