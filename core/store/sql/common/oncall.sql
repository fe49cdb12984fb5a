-- The on-call loop: acks, silences and the schedules seen.
-- Both backends run these blocks as written (core/store/oncall.py), and need no others.

-- upsert_ack --
INSERT INTO acks (task_id, actor, reason, acked_at, until_at)
VALUES (:task_id, :actor, :reason, :now, :until_at)
ON CONFLICT (task_id) DO UPDATE SET
    actor = excluded.actor, reason = excluded.reason, acked_at = excluded.acked_at,
    until_at = excluded.until_at

-- select_ack --
SELECT task_id, actor, reason, acked_at, until_at, NULL AS source FROM acks
WHERE task_id = :task_id

-- delete_ack --
DELETE FROM acks WHERE task_id = :task_id

-- select_acks --
-- Acks still in force, on this store's tasks and on the sources' tasks; expired ones stay
-- until the task's next ack or unack replaces them.
SELECT task_id, actor, reason, acked_at, until_at, NULL AS source FROM acks
WHERE until_at > :now
UNION ALL
SELECT task_id, actor, reason, acked_at, until_at, source FROM source_acks
WHERE until_at > :now
ORDER BY task_id, source

-- upsert_source_ack --
-- An ack on a read-only source's task (an Airflow task instance): kept here, by the source's
-- name and its task id, since the engine's database is never written.
INSERT INTO source_acks (source, task_id, actor, reason, acked_at, until_at)
VALUES (:source, :task_id, :actor, :reason, :now, :until_at)
ON CONFLICT (source, task_id) DO UPDATE SET
    actor = excluded.actor, reason = excluded.reason, acked_at = excluded.acked_at,
    until_at = excluded.until_at

-- select_source_ack --
SELECT task_id, actor, reason, acked_at, until_at, source FROM source_acks
WHERE source = :source AND task_id = :task_id

-- delete_source_ack --
DELETE FROM source_acks WHERE source = :source AND task_id = :task_id

-- delete_expired_source_acks --
-- A source's tasks are never pruned with this store's, so the acks that ended go when the
-- next source ack is written: nothing reads an ended one but the unack that replaces it.
DELETE FROM source_acks WHERE until_at <= :now AND NOT (source = :source AND task_id = :task_id)

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

-- select_job_step_runs --
-- The same view for a schedule of a job: its runs, whatever their step.
SELECT max(COALESCE(claimed_at, started_at)) AS last_started,
       min(CASE WHEN finished_at IS NULL AND state IN ('starting', 'running')
                THEN COALESCE(claimed_at, started_at) END) AS running_since
FROM tasks WHERE job = :job

-- insert_schedule_seen --
-- The first reader to see a schedule records it; later ones keep that first time.
INSERT INTO schedules_seen (name, step, cron, tz, first_seen)
VALUES (:name, :step, :cron, :tz, :first_seen)
ON CONFLICT (name, step, cron, tz) DO NOTHING

-- select_schedule_seen --
SELECT first_seen FROM schedules_seen
WHERE name = :name AND step = :step AND cron = :cron AND tz = :tz
