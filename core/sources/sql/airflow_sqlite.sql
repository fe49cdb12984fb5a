-- Airflow's metadata database on SQLite, read-only (opened with mode=ro). Times are the text
-- SQLAlchemy writes for Airflow's UtcDateTime columns: 'YYYY-MM-DD HH:MM:SS.ffffff', UTC.

-- airflow_schema_version --
SELECT version_num FROM alembic_version

-- airflow_task_instance_columns --
SELECT name FROM pragma_table_info('task_instance')

-- airflow_now --
SELECT 1

-- airflow_task_instances_v3 --
-- Airflow 3: the task instance carries its own heartbeat (last_heartbeat_at).
SELECT ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, ti.state, ti.hostname,
       ti.pid, ti.operator, ti.custom_operator_name, ti.start_date, ti.end_date, ti.queued_dttm,
       ti.updated_at, ti.last_heartbeat_at AS heartbeat_at, dr.logical_date
FROM task_instance AS ti
LEFT JOIN dag_run AS dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id
WHERE ti.state IS NULL
   OR ti.state NOT IN ('success', 'failed', 'skipped', 'upstream_failed', 'removed')
   OR ?1 IS NULL OR ti.end_date >= ?1
ORDER BY ti.dag_id, ti.task_id, ti.run_id, ti.map_index

-- airflow_task_instances_v2 --
-- Airflow 2: the heartbeat is the LocalTaskJob's, through task_instance.job_id.
SELECT ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, ti.state, ti.hostname,
       ti.pid, ti.operator, ti.custom_operator_name, ti.start_date, ti.end_date, ti.queued_dttm,
       ti.updated_at, job.latest_heartbeat AS heartbeat_at,
       dr.execution_date AS logical_date
FROM task_instance AS ti
LEFT JOIN dag_run AS dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id
LEFT JOIN job ON job.id = ti.job_id
WHERE ti.state IS NULL
   OR ti.state NOT IN ('success', 'failed', 'skipped', 'upstream_failed', 'removed')
   OR ?1 IS NULL OR ti.end_date >= ?1
ORDER BY ti.dag_id, ti.task_id, ti.run_id, ti.map_index
