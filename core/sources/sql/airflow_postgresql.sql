-- Airflow's metadata database on PostgreSQL, read in read-only transactions.

-- airflow_schema_version --
SELECT version_num FROM alembic_version

-- airflow_task_instance_columns --
SELECT column_name AS name FROM information_schema.columns
WHERE table_name = 'task_instance' AND table_schema = current_schema()

-- airflow_now --
SELECT extract(epoch FROM clock_timestamp())::float8 AS now

-- airflow_task_instances_v3 --
-- A full read (``airflow_reads``): the finished ones too, which no index finds by end_date
-- (the rows are put in key order after).
-- Airflow 3: the task instance carries its own heartbeat (last_heartbeat_at).
SELECT ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, ti.state, ti.hostname,
       ti.pid, ti.operator, ti.custom_operator_name, ti.start_date, ti.end_date, ti.queued_dttm,
       ti.scheduled_dttm, ti.updated_at, ti.last_heartbeat_at AS heartbeat_at, dr.logical_date,
       ti.dag_version_id AS dag_version
FROM task_instance AS ti
LEFT JOIN dag_run AS dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id
WHERE ti.state IS NULL
   OR ti.state NOT IN ('success', 'failed', 'skipped', 'upstream_failed', 'removed')
   OR $1::timestamptz IS NULL OR ti.end_date >= $1::timestamptz

-- airflow_task_instances_v2 --
-- A full read, as above.
-- Airflow 2: the heartbeat is the LocalTaskJob's, through task_instance.job_id.
-- Its one serialized DAG per DAG is found by dag_id: the DAG's version, to ``airflow_waits``.
SELECT ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, ti.state, ti.hostname,
       ti.pid, ti.operator, ti.custom_operator_name, ti.start_date, ti.end_date, ti.queued_dttm,
       NULL AS scheduled_dttm, ti.updated_at, job.latest_heartbeat AS heartbeat_at,
       dr.execution_date AS logical_date, ti.dag_id AS dag_version
FROM task_instance AS ti
LEFT JOIN dag_run AS dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id
LEFT JOIN job ON job.id = ti.job_id
WHERE ti.state IS NULL
   OR ti.state NOT IN ('success', 'failed', 'skipped', 'upstream_failed', 'removed')
   OR $1::timestamptz IS NULL OR ti.end_date >= $1::timestamptz

-- airflow_task_instances_indexed_v3 --
-- Between full reads (``airflow_reads``): the unfinished through ti_state, and those unfinished at
-- the last read by their keys ($1: a JSON list of [dag_id, task_id, run_id, map_index]) through
-- ti_state_lkp. Airflow's unfinished states (State.unfinished); the finished are listed above.
-- And those finished since $3 in the DAG runs made since the last read (dag_run.id above
-- $2) or running, through ti_dag_run: a task instance made and finished between two reads.
SELECT ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, ti.state, ti.hostname,
       ti.pid, ti.operator, ti.custom_operator_name, ti.start_date, ti.end_date, ti.queued_dttm,
       ti.scheduled_dttm, ti.updated_at, ti.last_heartbeat_at AS heartbeat_at, dr.logical_date,
       ti.dag_version_id AS dag_version
FROM task_instance AS ti
LEFT JOIN dag_run AS dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id
WHERE ti.state IS NULL
   OR ti.state IN ('scheduled', 'queued', 'running', 'restarting', 'up_for_retry',
                   'up_for_reschedule', 'deferred', 'awaiting_input')
   OR (ti.dag_id, ti.task_id, ti.run_id, ti.map_index) IN
          (SELECT k->>0, k->>1, k->>2, (k->>3)::int
           FROM jsonb_array_elements($1::jsonb) AS k)
   OR (ti.end_date >= $3::timestamptz AND (ti.dag_id, ti.run_id) IN
          (SELECT r.dag_id, r.run_id FROM dag_run AS r
           WHERE r.id > $2::bigint OR r.state = 'running'))

-- airflow_task_instances_indexed_v2 --
-- The same, for Airflow 2.
SELECT ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, ti.state, ti.hostname,
       ti.pid, ti.operator, ti.custom_operator_name, ti.start_date, ti.end_date, ti.queued_dttm,
       NULL AS scheduled_dttm, ti.updated_at, job.latest_heartbeat AS heartbeat_at,
       dr.execution_date AS logical_date, ti.dag_id AS dag_version
FROM task_instance AS ti
LEFT JOIN dag_run AS dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id
LEFT JOIN job ON job.id = ti.job_id
WHERE ti.state IS NULL
   OR ti.state IN ('scheduled', 'queued', 'running', 'restarting', 'up_for_retry',
                   'up_for_reschedule', 'deferred', 'awaiting_input')
   OR (ti.dag_id, ti.task_id, ti.run_id, ti.map_index) IN
          (SELECT k->>0, k->>1, k->>2, (k->>3)::int
           FROM jsonb_array_elements($1::jsonb) AS k)
   OR (ti.end_date >= $3::timestamptz AND (ti.dag_id, ti.run_id) IN
          (SELECT r.dag_id, r.run_id FROM dag_run AS r
           WHERE r.id > $2::bigint OR r.state = 'running'))

-- airflow_newest_run --
-- The newest DAG run's row id (dag_run's primary key): the next indexed read reads the runs
-- made after it.
SELECT max(id) AS newest FROM dag_run

-- airflow_waiting_pools --
-- The pool of each task instance that waits to run, its slots and how many of them run or are
-- queued now (as Airflow counts a pool's occupied slots): why a task waits. Through ti_state,
-- and slot_pool is small.
SELECT ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.pool, p.slots,
       (SELECT count(*) FROM task_instance AS t
        WHERE t.pool = ti.pool AND t.state IN ('running', 'queued')) AS used
FROM task_instance AS ti
LEFT JOIN slot_pool AS p ON p.pool = ti.pool
WHERE ti.state IN ('scheduled', 'queued')

-- airflow_dag_hashes_v3 --
-- The DAG versions the waiting task instances were made from ($1: a JSON list of their
-- dag_version_id), through serialized_dag's unique index on it: which shapes to parse
-- (``airflow_waits``).
SELECT sd.dag_version_id::text AS version, sd.dag_id, sd.dag_hash
FROM serialized_dag AS sd
WHERE sd.dag_version_id IN (SELECT jsonb_array_elements_text($1::jsonb)::uuid)

-- airflow_dag_hashes_v2 --
-- Airflow 2 keeps one serialized DAG per DAG: its version is its dag_id (the primary key).
SELECT sd.dag_id AS version, sd.dag_id, sd.dag_hash
FROM serialized_dag AS sd
WHERE sd.dag_id IN (SELECT jsonb_array_elements_text($1::jsonb))

-- airflow_dags_v3 --
-- The serialized DAGs of those versions, plain or compressed ([core] compress_serialized_dags).
SELECT sd.dag_id, sd.dag_hash, sd.data, sd.data_compressed
FROM serialized_dag AS sd
WHERE sd.dag_version_id IN (SELECT jsonb_array_elements_text($1::jsonb)::uuid)

-- airflow_dags_v2 --
SELECT sd.dag_id, sd.dag_hash, sd.data, sd.data_compressed
FROM serialized_dag AS sd
WHERE sd.dag_id IN (SELECT jsonb_array_elements_text($1::jsonb))

-- airflow_jobs_v3 --
-- Airflow's running jobs (job, through idx_job_state_heartbeat), each with how many task
-- instances it holds: a scheduler the queued and running ones it queued (queued_by_job_id: the
-- ones Airflow adopts from a scheduler that died), a triggerer the deferred ones whose trigger
-- it runs (trigger.triggerer_id). The job table records no pid. A job that holds none is left
-- out once its last heartbeat is older than $1 (``airflow_workers``).
SELECT id, job_type, hostname, latest_heartbeat, holds FROM (
    SELECT j.id, j.job_type, j.hostname, j.latest_heartbeat,
           CASE j.job_type
             WHEN 'SchedulerJob' THEN (SELECT count(*) FROM task_instance AS ti
                  WHERE ti.state IN ('queued', 'running', 'restarting')
                    AND ti.queued_by_job_id = j.id)
             WHEN 'TriggererJob' THEN (SELECT count(*) FROM task_instance AS ti
                  JOIN "trigger" AS t ON t.id = ti.trigger_id
                  WHERE ti.state = 'deferred' AND t.triggerer_id = j.id)
             ELSE 0
           END AS holds
    FROM job AS j
    WHERE j.state = 'running'
      AND j.job_type IN ('SchedulerJob', 'TriggererJob', 'DagProcessorJob')
) AS running
WHERE holds > 0 OR latest_heartbeat >= $1::timestamptz
ORDER BY id

-- airflow_jobs_v2 --
-- The same, for Airflow 2, with its LocalTaskJobs: one per running task instance.
SELECT id, job_type, hostname, latest_heartbeat, holds FROM (
    SELECT j.id, j.job_type, j.hostname, j.latest_heartbeat,
           CASE j.job_type
             WHEN 'SchedulerJob' THEN (SELECT count(*) FROM task_instance AS ti
                  WHERE ti.state IN ('queued', 'running', 'restarting')
                    AND ti.queued_by_job_id = j.id)
             WHEN 'TriggererJob' THEN (SELECT count(*) FROM task_instance AS ti
                  JOIN "trigger" AS t ON t.id = ti.trigger_id
                  WHERE ti.state = 'deferred' AND t.triggerer_id = j.id)
             -- The LocalTaskJob running a task instance (task_instance.job_id: ti_job_id).
             WHEN 'LocalTaskJob' THEN (SELECT count(*) FROM task_instance AS ti
                  WHERE ti.job_id = j.id AND ti.state = 'running')
             ELSE 0
           END AS holds
    FROM job AS j
    WHERE j.state = 'running'
      AND j.job_type IN ('SchedulerJob', 'TriggererJob', 'DagProcessorJob', 'LocalTaskJob')
) AS running
WHERE holds > 0 OR latest_heartbeat >= $1::timestamptz
ORDER BY id
