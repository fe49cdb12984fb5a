-- Dagster's SQLite storage, read-only (opened with mode=ro, or immutable while no -wal is
-- there: sqlite_files). The runs live in history/runs.db, each run's event log in
-- history/runs/<run_id>.db. Times in the DateTime/TIMESTAMP columns are the text SQLAlchemy
-- writes for a naive UTC datetime: 'YYYY-MM-DD HH:MM:SS.ffffff'.

-- dagster_runs_columns --
SELECT name FROM pragma_table_info('runs')

-- dagster_runs --
-- The unfinished runs through idx_run_status, and those finished since ?1 through idx_run_range
-- (status, update_timestamp): Dagster stamps update_timestamp when it writes the end. A NULL
-- ?1 reads every finished run.
SELECT run_id, pipeline_name AS job, status, create_timestamp, update_timestamp, start_time,
       end_time
FROM runs
WHERE status NOT IN ('SUCCESS', 'FAILURE', 'CANCELED')
UNION ALL
SELECT run_id, pipeline_name AS job, status, create_timestamp, update_timestamp, start_time,
       end_time
FROM runs
WHERE status IN ('SUCCESS', 'FAILURE', 'CANCELED')
  AND (?1 IS NULL OR update_timestamp >= ?1)

-- dagster_run_events --
-- One run's events after the id ?1 (its event log is a file of its own, ids from 1). Only the
-- events that name a process or say the run's failure carry their JSON body; for
-- the others the type, the time and the step are enough.
SELECT id, dagster_event_type AS type, timestamp, step_key,
       CASE WHEN dagster_event_type IN ('PIPELINE_START', 'RUN_START', 'STEP_START',
                                        'PIPELINE_FAILURE', 'RUN_FAILURE')
            THEN event END AS event
FROM event_logs
WHERE id > ?1
ORDER BY id
