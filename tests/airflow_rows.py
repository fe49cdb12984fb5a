"""Write task instances into an Airflow metadata database as Airflow itself writes them.

Run by the Airflow venv's interpreter (never zombietop's): it reads a JSON list of task instances
on stdin and inserts the DAG, DAG run and task instance rows through Airflow's own table
definitions and column types (``UtcDateTime`` and all), on the database ``AIRFLOW__DATABASE__
SQL_ALCHEMY_CONN`` names. Times in the JSON are epoch seconds.

An entry with a ``job_type`` is one of Airflow's jobs instead (a scheduler, a triggerer), with
its ``id``, ``state``, ``hostname`` and ``latest_heartbeat``; a task instance names the
scheduler that queued it with ``queued_by_job_id``, and the triggerer that runs its trigger
with ``triggerer_id`` (a trigger row is made for it).
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import UTC, datetime
from typing import Any


def _when(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def _insert(conn: Any, table: Any, **values: Any) -> Any:
    """Insert the values ``table`` has columns for (Airflow 2 and 3 differ), return the row id."""
    known = set(table.c.keys())
    result = conn.execute(table.insert().values(**{k: v for k, v in values.items() if k in known}))
    return result.inserted_primary_key[0] if result.inserted_primary_key else None


def main() -> int:
    from airflow import settings
    from airflow.models.dag import DagModel
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import select, text

    try:  # Airflow 3: DAGs come from bundles
        from airflow.models.dagbundle import DagBundleModel
    except ImportError:
        DagBundleModel = None
    try:  # Airflow 3: a task instance names the DAG version it was made from
        from airflow.models.dag_version import DagVersion
    except ImportError:
        DagVersion = None
    try:  # Airflow 2: a task's heartbeat is its LocalTaskJob's
        from airflow.jobs.job import Job
    except ImportError:
        Job = None

    settings.configure_orm()
    rows: list[dict[str, Any]] = json.load(sys.stdin)
    ti_table = TaskInstance.__table__
    with settings.engine.begin() as conn:
        for job in [row for row in rows if "job_type" in row]:
            from airflow.jobs.job import Job as AnyJob

            _insert(
                conn,
                AnyJob.__table__,
                id=job["id"],
                state=job.get("state", "running"),
                job_type=job["job_type"],
                start_date=_when(job.get("start_date", job.get("latest_heartbeat"))),
                latest_heartbeat=_when(job.get("latest_heartbeat")),
                executor_class="LocalExecutor",
                hostname=job.get("hostname"),
                unixname="airflow",
            )
        rows = [row for row in rows if "job_type" not in row]
        if DagBundleModel is not None:
            table = DagBundleModel.__table__
            if "dags-folder" not in {name for (name,) in conn.execute(select(table.c.name))}:
                _insert(conn, table, name="dags-folder", active=True)
        dags = {d for (d,) in conn.execute(select(DagModel.__table__.c.dag_id))}
        run_table = DagRun.__table__
        # The newest log template, as the scheduler picks it for a new run.
        (template,) = conn.execute(text("SELECT max(id) FROM log_template")).one()
        runs = {(d, r) for d, r in conn.execute(select(run_table.c.dag_id, run_table.c.run_id))}
        versions: dict[str, Any] = {}
        if DagVersion is not None:  # the newest of each DAG (``airflow dags reserialize``)
            table = DagVersion.__table__
            order = select(table.c.dag_id, table.c.id).order_by(table.c.version_number)
            versions = {d: v for d, v in conn.execute(order)}
        for row in rows:
            dag_id, run_id = row["dag_id"], row["run_id"]
            if dag_id not in dags:
                dags.add(dag_id)
                _insert(
                    conn,
                    DagModel.__table__,
                    dag_id=dag_id,
                    is_paused=False,
                    is_active=True,
                    is_stale=False,
                    bundle_name="dags-folder",
                    timetable_type="",
                    partition_mapper_info={},
                    max_active_tasks=16,
                    max_consecutive_failed_dag_runs=0,
                    has_task_concurrency_limits=False,
                )
            if (dag_id, run_id) not in runs:
                runs.add((dag_id, run_id))
                start = _when(
                    row.get("start_date") or row.get("queued_dttm") or row.get("scheduled_dttm")
                )
                logical = _when(row.get("logical_date"))
                _insert(
                    conn,
                    run_table,
                    dag_id=dag_id,
                    run_id=run_id,
                    run_type="manual",
                    state="running",
                    run_after=start,
                    logical_date=logical,
                    execution_date=logical or start,
                    start_date=start,
                    log_template_id=template,
                    clear_number=0,
                    span_status="not_started",
                )
            job_id = None
            if Job is not None and row.get("last_heartbeat_at") is not None:
                job_id = _insert(
                    conn,
                    Job.__table__,
                    dag_id=dag_id,
                    state="running",
                    job_type="LocalTaskJob",
                    start_date=_when(row.get("start_date")),
                    latest_heartbeat=_when(row["last_heartbeat_at"]),
                    executor_class="LocalExecutor",
                    hostname=row.get("hostname"),
                    unixname="airflow",
                )
            trigger_id = None
            if row.get("triggerer_id") is not None:
                from airflow.models.trigger import Trigger

                table = Trigger.__table__
                # Airflow 2 keeps the kwargs as JSON, Airflow 3 as its own (encrypted) text.
                plain = "JSON" in type(table.c.kwargs.type).__name__.upper()
                trigger_id = _insert(
                    conn,
                    table,
                    classpath="airflow.triggers.temporal.DateTimeTrigger",
                    kwargs={} if plain else "{}",
                    created_date=_when(row.get("start_date")),
                    triggerer_id=row["triggerer_id"],
                )
            _insert(
                conn,
                ti_table,
                id=uuid.uuid4(),
                dag_id=dag_id,
                task_id=row["task_id"],
                run_id=run_id,
                map_index=row.get("map_index", -1),
                state=row["state"],
                try_number=row.get("try_number", 1),
                max_tries=row.get("max_tries", 1),
                hostname=row.get("hostname") or "",
                unixname="airflow",
                job_id=job_id,
                queued_by_job_id=row.get("queued_by_job_id"),
                trigger_id=trigger_id,
                pool="default_pool",
                pool_slots=1,
                queue="default",
                priority_weight=1,
                operator=row.get("operator"),
                custom_operator_name=row.get("operator"),
                pid=row.get("pid"),
                executor="LocalExecutor",
                start_date=_when(row.get("start_date")),
                end_date=_when(row.get("end_date")),
                duration=row.get("duration"),
                queued_dttm=_when(row.get("queued_dttm")),
                scheduled_dttm=_when(row.get("scheduled_dttm")),
                last_heartbeat_at=_when(row.get("last_heartbeat_at")),
                dag_version_id=versions.get(dag_id),
                updated_at=_when(row.get("updated_at") or row.get("start_date")),
                span_status="not_started",
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
