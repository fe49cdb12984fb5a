-- Dagster's PostgreSQL storage (dagster-postgres), read in read-only transactions. Its runs
-- are in the table runs and the events of every run in event_logs. Times in the TIMESTAMP
-- columns are naive UTC datetimes that Dagster's processes write.

-- dagster_runs_columns --
SELECT column_name AS name FROM information_schema.columns
WHERE table_name = 'runs' AND table_schema = current_schema()

-- dagster_runs --
-- The unfinished runs through idx_run_status, and those finished since $1 through idx_run_range
-- (status, update_timestamp). A NULL $1 reads every finished run.
SELECT run_id, pipeline_name AS job, status, create_timestamp, update_timestamp, start_time,
       end_time
FROM runs
WHERE status NOT IN ('SUCCESS', 'FAILURE', 'CANCELED')
UNION ALL
SELECT run_id, pipeline_name AS job, status, create_timestamp, update_timestamp, start_time,
       end_time
FROM runs
WHERE status IN ('SUCCESS', 'FAILURE', 'CANCELED')
  AND ($1::timestamp IS NULL OR update_timestamp >= $1::timestamp)

-- dagster_run_events --
-- The events of some runs ($1: a JSON list of [run_id, last id read]) after the last one read,
-- through idx_events_by_run_id (run_id, id). As on SQLite, only the events that name a process
-- or say the run's failure carry their JSON body.
SELECT e.run_id, e.id, e.dagster_event_type AS type, e.timestamp, e.step_key,
       CASE WHEN e.dagster_event_type IN ('PIPELINE_START', 'RUN_START', 'STEP_START',
                                          'PIPELINE_FAILURE', 'RUN_FAILURE')
            THEN e.event END AS event
FROM jsonb_array_elements($1::jsonb) AS k
JOIN event_logs AS e ON e.run_id = k->>0 AND e.id > (k->>1)::bigint
ORDER BY e.id
