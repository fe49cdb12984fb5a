"""Airflow's metadata database (2.x and 3.x) as a read-only source.

The database is opened read-only (SQLite with ``mode=ro``, and ``immutable=1`` too while Airflow is
stopped, so that no file is ever made beside it: ``sqlite_files``; PostgreSQL in read-only
transactions) and never written. Each task instance becomes one zombietop task:

- its id reads ``DAG/TASK/RUN`` (``[MAP_INDEX]`` after it when the task is mapped) and its step
  type is the DAG id, so ``[step_types.DAG]`` sets per-DAG thresholds;
- running with a heartbeat is running (fresh: healthy; stale: stalled); running with a NULL
  heartbeat is starting, stalled past the start grace; queued, scheduled and the other waiting
  states are queued; success and skipped are succeeded, failed and upstream_failed failed;
- a task instance waiting to start (no state yet, scheduled or queued) waits on its upstream
  task instances of the same DAG run, read from Airflow's serialized DAG (``airflow_waits``):
  the watchdog pages a stalled upstream once, naming what it blocks; one in upstream_failed is
  held by them the same way, so a failure is paged once with what it blocks;
- only scheduled and queued wait for a slot or a worker (``queue_timeout``, counted from
  Airflow's scheduled time): not a task waiting for its upstream, a retry or a trigger;
- Airflow 3 keeps the heartbeat on the task instance (``last_heartbeat_at``); Airflow 2 on the
  LocalTaskJob the task instance points at (``job.latest_heartbeat`` through ``job_id``). The
  schema says which: the columns ``task_instance`` has, and ``alembic_version``.

A heartbeat from Airflow proves its supervisor lives, not that the task's code moves
(apache/airflow#13747): its beats are ``SUPERVISOR`` beats, and for a task on this host the
process probe reads the task's own pid, so a hung task, idle past the progress timeout beside
its fresh heartbeat, is spinning.

The module declares its engine (``ENGINE``, at the end) for the table in ``registry.py``; its
SQL is in ``sql/airflow_sqlite.sql`` and ``sql/airflow_postgresql.sql``.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from zombietop.clock import Clock
from zombietop.errors import SourceError
from zombietop.locations import printable_url
from zombietop.model import Lease, Task, TaskRecord, TaskState
from zombietop.printable import printable
from zombietop.procs import read_start
from zombietop.rows import Row
from zombietop.sources.airflow_reads import Key, ReadPlan, key_of
from zombietop.sources.airflow_waits import (
    WAITS_IN_POOL,
    DagShapes,
    Waits,
    pool_words,
    upstream_waits,
)
from zombietop.sources.airflow_workers import GONE_KEPT, job_workers
from zombietop.sources.base import (
    Capability,
    Engine,
    EngineWorker,
    Origin,
    ReadOnlySource,
    SourceRecord,
    proof_of_life,
)
from zombietop.sources.engine_text import bounded_id
from zombietop.sources.pg_reader import connect_read_only
from zombietop.sources.sqlite_reader import SqliteReader
from zombietop.start_identity import ProcessStart
from zombietop.store.queries import load

SCHEMES = ("airflow+sqlite", "airflow+postgresql", "airflow+postgres")
"""The URL schemes of an Airflow database, as in Airflow's own ``sql_alchemy_conn``."""
FORMS = ("airflow+sqlite:///PATH", "airflow+postgresql://USER@HOST/DB")
"""How a person writes them, for help and error texts."""

AIRFLOW_HEARTBEAT_TIMEOUT = 300.0
"""Airflow's own ``[scheduler] task_instance_heartbeat_timeout`` default, in seconds: past it,
Airflow's scheduler itself calls a running task instance a zombie."""

IDENTITY_SLACK = 5.0
"""Seconds a task's process may have started after its recorded ``start_date`` and still be
the same process. Airflow forks the task process first and records the start a moment later,
so the process is older than ``start_date``; one born well after it got the pid by reuse."""

_STATES: dict[str | None, TaskState] = {
    "running": TaskState.RUNNING,
    None: TaskState.QUEUED,
    "scheduled": TaskState.QUEUED,
    "queued": TaskState.QUEUED,
    "up_for_retry": TaskState.QUEUED,
    "up_for_reschedule": TaskState.QUEUED,
    "deferred": TaskState.QUEUED,
    "restarting": TaskState.QUEUED,
    "awaiting_input": TaskState.QUEUED,
    "success": TaskState.SUCCEEDED,
    "skipped": TaskState.SUCCEEDED,
    "failed": TaskState.FAILED,
    "upstream_failed": TaskState.FAILED,
    "removed": TaskState.DISCARDED,
}
_SAID_AS_IS = frozenset({"running", "queued", "success", "failed"})
"""Airflow states that zombietop's word says whole; every other one is kept as the reason."""


def check_url(url: str) -> str:
    """Return ``url`` if it names an Airflow database zombietop can read, else raise saying how
    to write one."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in SCHEMES:
        raise SourceError(
            f"source {printable_url(url)!r}: not an Airflow database; use {' or '.join(FORMS)}"
        )
    if scheme == "airflow+sqlite" and not url.partition(":///")[2]:
        raise SourceError(
            f"source {url!r}: no database file; use airflow+sqlite:///PATH "
            "(airflow+sqlite:////abs/path for an absolute one, as in Airflow's own URL)"
        )
    return url


def airflow_task_id(dag_id: str, task_id: str, run_id: str, map_index: int | None) -> str:
    """zombietop's id for a task instance: ``DAG/TASK/RUN`` (``[MAP_INDEX]`` when mapped)."""
    mapped = f"[{map_index}]" if map_index is not None and map_index >= 0 else ""
    return f"{bounded_id(dag_id)}/{bounded_id(task_id)}/{bounded_id(run_id)}{mapped}"


def _epoch(value: Any) -> float | None:
    """An Airflow time as epoch seconds: a datetime (PostgreSQL) or SQLAlchemy's UTC text."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise SourceError(f"unexpected time {value!r} in Airflow's task_instance")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # UtcDateTime columns hold UTC
    return float(value.timestamp())


def task_instance_record(
    row: Row,
    *,
    source: str,
    host: str,
    local: frozenset[str],
    now: float,
    waits: str | None = None,
    upstream: tuple[str, ...] = (),
) -> SourceRecord:
    """Map one task instance row onto zombietop's task, lease and heartbeat (reads the start
    time of a local pid, nothing else); ``waits`` says why a waiting one waits, ``upstream``
    names the task instances it waits on (``airflow_waits``)."""
    task = replace(_task(row, host=host, local=local, now=now), upstream=upstream)
    if waits:
        task = replace(task, state_reason=f"{task.state_reason or 'airflow state queued'}, {waits}")
    lease = heartbeat = None
    if task.state.executing:
        # Airflow has no leases: its worker holds the task instance until the scheduler fails
        # it, so zombietop sees a lease held without an expiry (never reclaimable).
        lease = Lease(
            task_id=task.task_id,
            owner=f"airflow@{bounded_id(row['hostname'] or '?')}",
            token=_try_number(row),
            acquired_at=task.started_at,
        )
        heartbeat = proof_of_life(task.task_id, _epoch(row["heartbeat_at"]), task.started_at)
    return SourceRecord(
        record=TaskRecord(task=task, lease=lease, heartbeat=heartbeat),
        origin=_origin(row, source),
    )


def _task(row: Row, *, host: str, local: frozenset[str], now: float) -> Task:
    """zombietop's task for one task instance row."""
    airflow_state: str | None = row["state"]
    state = _STATES.get(airflow_state, TaskState.QUEUED)
    if state is TaskState.RUNNING and _epoch(row["heartbeat_at"]) is None:
        # Claimed but never beat: zombietop's start grace covers it (Airflow never did).
        state = TaskState.STARTING
    # Airflow stamps the moment it gave an upstream_failed task up as its start: it never ran.
    start = None if airflow_state == "upstream_failed" else _epoch(row["start_date"])
    hostname: str | None = bounded_id(row["hostname"]) if row["hostname"] else None
    on_this_host = hostname is not None and hostname in local
    # A finished task's pid too: its process may live on (orphaned), and the monitor decides
    # how long to look at it.
    pid: int | None = row["pid"] if state.executing or state.finished else None
    pid_start: ProcessStart | None = None
    if pid is not None and on_this_host:
        pid_start = _identity(pid, start)
    reason = None
    if airflow_state not in _SAID_AS_IS:
        reason = f"airflow state {airflow_state or 'none'}"
    updated = _epoch(row["updated_at"])
    created = _queued_since(row) or start or updated or now
    return Task(
        task_id=airflow_task_id(row["dag_id"], row["task_id"], row["run_id"], row["map_index"]),
        run_id=bounded_id(row["run_id"]),
        step=bounded_id(row["task_id"]),
        step_type=bounded_id(row["dag_id"]),
        job=f"{bounded_id(row['dag_id'])}/{bounded_id(row['task_id'])}",
        state=state,
        attempt=max(_try_number(row), 1),
        host=host if on_this_host else hostname,
        pid=pid,
        pid_start_time=None if pid_start is None else pid_start.time,
        pid_start_identity=None if pid_start is None else pid_start.identity,
        state_reason=reason,
        # Only a slot or a worker is waited for too long: not a retry at a set time, a trigger,
        # or the upstream (that one's own health says what holds it).
        waits_in_queue=airflow_state in WAITS_IN_POOL,
        created_at=created,
        claimed_at=start if state.executing else None,
        started_at=start,
        finished_at=_epoch(row["end_date"]) if state.finished else None,
        updated_at=updated or created,
    )


def _queued_since(row: Row) -> float | None:
    """When the task instance began to wait for a slot or a worker: when Airflow scheduled it
    (Airflow 3 records it), else when it queued it."""
    scheduled, queued = _epoch(row["scheduled_dttm"]), _epoch(row["queued_dttm"])
    if row["state"] == "queued" and queued is not None:
        # Scheduled, then queued: it has waited since it was scheduled, if that was this try.
        return scheduled if scheduled is not None and scheduled <= queued else queued
    return scheduled or queued


def _try_number(row: Row) -> int:
    return int(row["try_number"] or 0)


def _origin(row: Row, source: str) -> Origin:
    """Where a task instance came from, with Airflow's own names for it."""
    logical = row["logical_date"]
    return Origin(
        source=source,
        kind=ENGINE.kind,
        capability=Capability.READ_ONLY,
        ids={
            "dag_id": row["dag_id"],
            "task_id": row["task_id"],
            "run_id": row["run_id"],
            "map_index": row["map_index"],
            "try_number": _try_number(row),
            "operator": row["custom_operator_name"] or row["operator"],
            "state": row["state"],
            "hostname": row["hostname"] or None,
            "logical_date": None if logical is None else _iso(_epoch(logical)),
        },
    )


def _iso(when: float | None) -> str | None:
    if when is None:
        return None
    return datetime.fromtimestamp(when, tz=UTC).isoformat()


def _identity(pid: int, start: float | None) -> ProcessStart | None:
    """The start the probe checks ``pid`` against: its own (with the kernel's count, checked
    exactly from then on) when it can be Airflow's task process, ``start`` itself (which no
    live process matches) when it was born after it.

    ``start`` is Airflow's ``start_date``, written from another clock (the worker's, or the
    database's) at another moment than the fork: only a slack can compare the two.
    """
    if start is None:
        return None
    actual = read_start(pid)
    if actual is None or actual.time > start + IDENTITY_SLACK:
        return ProcessStart(time=start)
    return actual


def clear_command(origin: Origin) -> str | None:
    """The ``airflow tasks clear`` that re-runs this one task instance, or None when its run
    has no logical date (``tasks clear`` picks runs by logical date, so it cannot name it)."""
    ids = origin.ids
    when = ids.get("logical_date")
    if not when:
        return None
    task = shlex.quote(f"^{re.escape(str(ids['task_id']))}$")
    dag, at = shlex.quote(str(ids["dag_id"])), shlex.quote(str(when))
    return f"airflow tasks clear {dag} -t {task} -s {at} -e {at} -y"


def clear_request(origin: Origin) -> str:
    """The REST request that clears this one task instance, so Airflow runs its next try.

    ``clearTaskInstances`` defaults ``dry_run`` and ``only_failed`` to true (Airflow 3.3): a
    body without them clears nothing, and a running or succeeded task never. A mapped task is
    named with its map index, or every index would be cleared.
    """
    ids = origin.ids
    mapped = ids.get("map_index")
    task: str | list[str | int] = str(ids["task_id"])
    if isinstance(mapped, int) and mapped >= 0:
        task = [str(ids["task_id"]), mapped]
    tasks: list[str | list[str | int]] = [task]
    body = json.dumps(
        {"dag_run_id": ids["run_id"], "task_ids": tasks, "dry_run": False, "only_failed": False}
    )
    return f"POST /api/v2/dags/{quote(str(ids['dag_id']), safe='')}/clearTaskInstances {body}"


def task_instance_path(origin: Origin) -> str:
    """The REST API path of this task instance (Airflow 3's /api/v2; 2.x serves /api/v1)."""
    ids = origin.ids
    mapped = ids.get("map_index")
    tail = f"/{mapped}" if isinstance(mapped, int) and mapped >= 0 else ""
    return (
        f"/api/v2/dags/{quote(str(ids['dag_id']), safe='')}/dagRuns/"
        f"{quote(str(ids['run_id']), safe='')}/taskInstances/"
        f"{quote(str(ids['task_id']), safe='')}{tail}"
    )


class AirflowSource(ReadOnlySource):
    """One Airflow metadata database, read-only."""

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(url, heartbeat_timeout=heartbeat_timeout, clock=clock)
        scheme, _, rest = url.partition("://")
        self.backend = "sqlite" if scheme == "airflow+sqlite" else "postgresql"
        self.clock = (
            "this host's clock (Airflow's workers write UTC times into the SQLite file)"
            if self.backend == "sqlite"
            else "the PostgreSQL server's clock_timestamp()"
        )
        # As SQLAlchemy reads sqlite:/// URLs: three slashes, then the path (a fourth: absolute).
        self.path = (
            Path(unquote(url.split(":///", 1)[1])).resolve() if self.backend == "sqlite" else None
        )
        self.dsn = "postgresql://" + rest
        self.schema: str | None = None
        """``3`` or ``2``: which Airflow wrote the database (from its columns)."""
        self.revision: str | None = None
        """Airflow's alembic revision."""
        self._sql = load(f"airflow_{self.backend}", package="zombietop.sources")
        self._sqlite = (
            None if self.path is None else SqliteReader(self.path, self.name, replaced=self._reopen)
        )
        """The SQLite file's reads, with no file left beside it (``sqlite_reader``)."""
        self._pg: Any = None
        self._lock = asyncio.Lock()
        self._last: dict[str, SourceRecord] = {}
        self._plan = ReadPlan(lambda row: _epoch(row["end_date"]))
        """What each poll reads: in full now and then, else through Airflow's indexes."""
        self._shapes = DagShapes()
        """The DAGs' shapes, parsed once per version (``airflow_waits``)."""
        self._workers_seen: tuple[EngineWorker, ...] = ()
        self.notes: tuple[str, ...] = ()
        """What the last poll could not read, in words (Airflow's jobs), the rest read."""

    # Opening -------------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect read-only and find out which Airflow wrote the schema."""
        columns, revision = await self._read_schema()
        if "last_heartbeat_at" in columns:
            self.schema = "3"
        elif "job_id" in columns:
            self.schema = "2"
        else:
            raise SourceError(
                f"source {self.name}: no task_instance table with Airflow 2 or 3 columns; "
                "is this Airflow's metadata database, migrated with `airflow db migrate`?"
            )
        self.revision = revision
        self._plan.forget()

    async def _read_schema(self) -> tuple[set[str], str | None]:
        if self.backend == "sqlite":
            return await asyncio.to_thread(self._sqlite_schema)
        conn = await self._pg_connection()
        try:
            async with conn.transaction(readonly=True):
                cols = await conn.fetch(self._sql["airflow_task_instance_columns"])
                revision = await conn.fetchval(self._sql["airflow_schema_version"])
        except Exception as exc:
            raise self._pg_error(exc) from None
        return {r["name"] for r in cols}, revision

    def _sqlite_schema(self) -> tuple[set[str], str | None]:
        def read(conn: sqlite3.Connection) -> tuple[set[str], str | None]:
            cols = {r["name"] for r in conn.execute(self._sql["airflow_task_instance_columns"])}
            row = conn.execute(self._sql["airflow_schema_version"]).fetchone()
            return cols, None if row is None else row[0]

        assert self._sqlite is not None
        return self._sqlite.read(read, "its schema")

    async def _pg_connection(self) -> Any:
        if self._pg is None or self._pg.is_closed():
            self._pg = await connect_read_only(
                self.dsn, needs="an Airflow source on PostgreSQL", name=self.name
            )
        return self._pg

    def _pg_error(self, exc: Exception) -> SourceError:
        return SourceError(f"source {self.name}: cannot read ({exc})")

    def _reopen(self) -> None:
        """Read the schema again at the next poll: another file sits at the path."""
        self.schema = None

    async def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
        if self._pg is not None:
            await self._pg.close()
            self._pg = None

    # Reading -------------------------------------------------------------------------------

    async def now(self) -> float:
        if self.backend == "sqlite":
            return self._clock.now()
        conn = await self._pg_connection()
        try:
            value: float = await conn.fetchval(self._sql["airflow_now"])
        except Exception as exc:
            raise self._pg_error(exc) from None
        return value

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        if self.schema is None:
            await self.open()
        async with self._lock:
            rows = await self._rows(since, self._clock.now())
            pools = await self._pools(rows)
            waiting = await self._waits(rows)
            now = await self.now()
            self._workers_seen = await self._jobs(now)
            found = await asyncio.to_thread(self._records, rows, host, now, pools, waiting)
        return found

    def workers(self) -> Sequence[EngineWorker]:
        """Airflow's running jobs as the last poll read them (``ListsWorkers``): schedulers,
        triggerers, DAG processors (and Airflow 2's LocalTaskJobs), gone past Airflow's own
        health threshold (``airflow_workers``)."""
        return self._workers_seen

    async def _jobs(self, now: float) -> tuple[EngineWorker, ...]:
        """Airflow's running jobs, on the source's clock ``now``. They only add to the
        tasks: where they cannot be read (a role granted no SELECT on job), the tasks are
        shown and a note says why the workers are not."""
        self.notes = ()
        try:
            rows = await self._fetch(
                self._sql[f"airflow_jobs_v{self.schema}"],
                self._time_param(now - GONE_KEPT),
                what="its jobs",
            )
        except SourceError as exc:
            said = str(exc).removeprefix(f"source {self.name}: ")
            self.notes = (printable(f"its workers are not listed: {said}"),)
            return ()
        return job_workers(rows, source=self.name, now=now, epoch=_epoch)

    async def _pools(self, rows: Sequence[Row]) -> dict[Key, str]:
        """By key, the pool each waiting task instance waits in, with its open slots; none
        read while no task instance waits.

        The pools only explain a wait: where they cannot be read (a role granted no SELECT on
        slot_pool), the tasks are shown without that reason rather than not at all."""
        if not any(row["state"] in WAITS_IN_POOL for row in rows):
            return {}
        try:
            found = await self._fetch(self._sql["airflow_waiting_pools"], what="its pools")
        except SourceError:
            return {}
        return {key_of(r): pool_words(r) for r in found}

    async def _rows(self, since: float | None, now: float) -> list[Row]:
        """This poll's task instances: a full read or an indexed one (``airflow_reads``)."""
        indexed = self._plan.next_read(since, now)
        # Before the rows: a run made meanwhile is after it, so the next read reads it.
        found = await self._fetch(self._sql["airflow_newest_run"], what="its DAG runs")
        newest = int(found[0]["newest"] or 0) if found else 0
        params: tuple[Any, ...]
        if indexed is not None:
            query = self._sql[f"airflow_task_instances_indexed_v{self.schema}"]
            params = (indexed.keys, indexed.runs_after, self._time_param(since))
        else:
            query = self._sql[f"airflow_task_instances_v{self.schema}"]
            params = (self._time_param(since),)
        rows = await self._fetch(query, *params, what="its task instances")
        return self._plan.merge(rows, since, now, full=indexed is None, newest_run=newest)

    def _time_param(self, when: float | None) -> Any:
        """``when`` as the queries compare it with Airflow's time columns."""
        if when is None:
            return None
        param = datetime.fromtimestamp(when, tz=UTC)
        if self.backend == "sqlite":
            # SQLAlchemy's text for UtcDateTime, so the comparison is the column's order.
            return param.strftime("%Y-%m-%d %H:%M:%S.%f")
        return param

    async def _waits(self, rows: Sequence[Row]) -> Waits:
        """What the waiting task instances wait on (``airflow_waits``). Where the serialized
        DAGs cannot be read, each of them says so instead, and the source reads on."""
        versions = DagShapes.versions(rows)
        if not versions:
            return Waits()
        hashes, dags = f"airflow_dag_hashes_v{self.schema}", f"airflow_dags_v{self.schema}"
        data: list[Row] = []
        try:
            found = await self._fetch(self._sql[hashes], json.dumps(versions), what="its DAGs")
            if missing := self._shapes.missing(found):
                data = await self._fetch(self._sql[dags], json.dumps(missing), what="its DAGs")
        except SourceError as exc:
            return upstream_waits(rows, {}, unread=printable(f"upstream unknown: {exc}"))
        return await asyncio.to_thread(
            lambda: upstream_waits(rows, self._shapes.learn(found, data))
        )

    async def _fetch(self, query: str, *params: Any, what: str) -> list[Row]:
        """The rows of ``query``, read-only on either backend; ``what`` names it for errors."""
        if self._sqlite is not None:
            return await asyncio.to_thread(
                self._sqlite.read, lambda conn: list(conn.execute(query, params)), what
            )
        conn = await self._pg_connection()
        try:
            async with conn.transaction(readonly=True, isolation="repeatable_read"):
                return list(await conn.fetch(query, *params))
        except Exception as exc:
            raise self._pg_error(exc) from None

    def _records(
        self, rows: Sequence[Row], host: str, now: float, pools: Mapping[Key, str], waiting: Waits
    ) -> list[SourceRecord]:
        local = self.local_names(host)
        out: list[SourceRecord] = []
        last, kept = self._last, {}
        for row in rows:
            key = key_of(row)
            found = task_instance_record(
                row,
                source=self.name,
                host=host,
                local=local,
                now=now,
                waits=", ".join(filter(None, [pools.get(key), waiting.notes.get(key)])),
                upstream=tuple(airflow_task_id(*up) for up in waiting.upstream.get(key, ())),
            )
            task_id = found.record.task.task_id
            before = last.get(task_id)
            # The same objects for what did not change, so the monitor can keep its verdicts.
            if before is not None and before == found:
                found = before
            kept[task_id] = found
            out.append(found)
        self._last = kept
        return out


def _task_id_of(origin: Origin) -> str:
    ids = origin.ids
    mapped = ids.get("map_index")
    return airflow_task_id(
        str(ids["dag_id"]),
        str(ids["task_id"]),
        str(ids["run_id"]),
        mapped if isinstance(mapped, int) else None,
    )


def _resume(origin: Origin) -> str:
    api = clear_request(origin)
    command = clear_command(origin)
    if command is None:
        return (
            "Re-run it with Airflow's REST API (`airflow tasks clear` picks runs by logical "
            f"date, and this run has none): {api}, or in the UI: Clear"
        )
    return f"Re-run it in Airflow: {command} (or {api})"


def _discard(origin: Origin) -> str:
    return (
        f"Mark it failed in Airflow: PATCH {task_instance_path(origin)} "
        '{"new_state": "failed"} (Airflow 2: /api/v1/...), or in the UI: Mark as failed'
    )


# Airflow reports no stages: the task instance is one stage, budgeted as the task (Airflow
# enforces its own execution_timeout), unless the DAG's section says.
ENGINE = Engine(
    kind="airflow",
    name="Airflow",
    unit="task instance",
    schemes=SCHEMES,
    forms=FORMS,
    check_url=check_url,
    make=AirflowSource,
    heartbeat_timeout=(
        AIRFLOW_HEARTBEAT_TIMEOUT,
        "Airflow's [scheduler] task_instance_heartbeat_timeout",
    ),
    actions="clear it in Airflow, mark it failed, or kill it",
    task_id=_task_id_of,
    resume=_resume,
    discard=_discard,
)
