"""Dagster's run storage (SQLite or PostgreSQL) as a read-only source.

zombietop reads a Dagster instance's storage and never writes to it. On SQLite, the files of
the instance's folder (``$DAGSTER_HOME``): the runs in ``history/runs.db`` (``sqlite_reader``)
and each run's event log in ``history/runs/<run_id>.db`` (``dagster_events``); on PostgreSQL,
the tables ``runs`` and ``event_logs`` in read-only transactions. Each run becomes one
zombietop task:

- its id reads ``JOB/RUN_ID``; its job and step type are the job's name, so
  ``[step_types.JOB]`` sets per-job thresholds; its step is the steps running now;
- QUEUED and NOT_STARTED are queued, STARTING is starting, STARTED and CANCELING are running;
  SUCCESS is succeeded, FAILURE failed (with Dagster's message, paged as any failed run),
  CANCELED discarded;
- the run worker is the process that wrote the run's start event. A SQLite storage is one
  machine's folder, so its pids are this host's; Dagster records no host, so on PostgreSQL
  they are the host's that the URL names (``?run_workers_on=HOST``), else no host's. Its
  identity: a process that started after the event that named it took the pid by reuse;
- while the run worker lives, its beat is now (proof of life from the kernel, not of
  progress: the process probe's CPU and I/O say whether it works); once it is gone, the last
  event's time. A run that Dagster still calls STARTED with no process behind it is ``dead``
  at the next poll: Dagster's default run launcher has no check of its run worker, and only
  run monitoring's ``max_runtime`` would end the run (dagster#4937, #17403, #21813);
- a finished run whose run worker still runs is orphaned.

The module declares its engine (``ENGINE``, at the end) for the table in ``registry.py``; its
SQL is in ``sql/dagster_sqlite.sql`` and ``sql/dagster_postgresql.sql``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shlex
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import psutil

from zombietop.clock import Clock
from zombietop.errors import SourceError
from zombietop.locations import printable_url
from zombietop.model import Lease, Task, TaskRecord, TaskState
from zombietop.printable import printable
from zombietop.procs import read_start
from zombietop.rows import Row
from zombietop.sources.base import Engine, Origin, ReadOnlySource, SourceRecord, proof_of_life
from zombietop.sources.dagster_events import EventLogs, PostgresEvents, RunEvents, dagster_time
from zombietop.sources.engine_text import bounded_id
from zombietop.sources.pg_reader import connect_read_only
from zombietop.sources.sqlite_reader import SqliteReader
from zombietop.start_identity import ProcessStart
from zombietop.store.queries import load

SCHEMES = ("dagster+sqlite", "dagster+postgresql", "dagster+postgres")
FORMS = ("dagster+sqlite:///PATH", "dagster+postgresql://USER@HOST/DB")
"""How a person writes the URLs: PATH is the instance's folder, ``$DAGSTER_HOME``; the
PostgreSQL one is dagster.yaml's ``postgres_url``, with ``?run_workers_on=HOST`` when the run
workers run on HOST."""

DAGSTER_HEARTBEAT_TIMEOUT = 3600.0
"""Seconds without an event, and with no run worker seen alive on this host, before a running
run is stalled. Dagster itself has no such limit."""

IDENTITY_SLACK = 5.0
"""Seconds a run worker may have started after the event that named it and still be that
process: the event is written after the process starts, on the same clock, so only a pid that
was reused afterwards is newer."""

ORPHAN_LOOK = 3600.0
"""Seconds after its end that a finished run's event log is still read, to see whether its run
worker runs on (orphaned); older finished runs are shown without a process."""

_STATES: dict[str, TaskState] = {
    "QUEUED": TaskState.QUEUED,
    "NOT_STARTED": TaskState.QUEUED,
    "MANAGED": TaskState.QUEUED,
    "SUSPENDED": TaskState.QUEUED,
    "STARTING": TaskState.STARTING,
    "STARTED": TaskState.RUNNING,
    "CANCELING": TaskState.RUNNING,
    "SUCCESS": TaskState.SUCCEEDED,
    "FAILURE": TaskState.FAILED,
    "CANCELED": TaskState.DISCARDED,
}
WAITS_IN_QUEUE = frozenset({"QUEUED", "NOT_STARTED"})
"""The statuses in which a run waits for the run queue or a launcher: not MANAGED (run outside
Dagster) nor SUSPENDED (waiting on purpose)."""


def check_url(url: str) -> str:
    """Return ``url`` if it names a Dagster instance's storage, else raise saying what to write."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in SCHEMES:
        raise SourceError(
            f"source {printable_url(url)!r}: not a Dagster instance; use {' or '.join(FORMS)} "
            "(PATH: the folder of $DAGSTER_HOME)"
        )
    if scheme == "dagster+sqlite" and not url.partition(":///")[2]:
        raise SourceError(
            f"source {printable_url(url)!r}: no folder; use dagster+sqlite:///PATH with PATH the "
            "instance's folder, $DAGSTER_HOME (dagster+sqlite:////abs/path for an absolute one)"
        )
    return url


def dagster_task_id(job: str, run_id: str) -> str:
    """zombietop's id for a Dagster run: ``JOB/RUN_ID``, each part bounded."""
    return f"{bounded_id(job)}/{bounded_id(run_id)}"


def no_process_words(status: str) -> str:
    """A run Dagster calls running whose run worker is gone, in Dagster's words."""
    return (
        f"{status} in Dagster with no process behind it; its default run launcher never "
        "checks the run worker, only run monitoring's max_runtime would end the run"
    )


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def worker_identity(pid: int, named_at: float | None) -> tuple[ProcessStart | None, bool]:
    """The start the probe checks ``pid`` against, and whether it is the run worker, alive and
    not a zombie, right now: its own start (with the kernel's count) when it can be the
    process the event named; ``named_at`` itself (which no live process matches) when it was
    born after that event."""
    if named_at is None:
        return None, False
    actual = read_start(pid)
    if actual is None or actual.time > named_at + IDENTITY_SLACK:
        return ProcessStart(time=named_at), False
    try:
        zombie = psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return actual, False
    return actual, not zombie


class DagsterSource(ReadOnlySource):
    """One Dagster instance's storage (SQLite or PostgreSQL), read-only."""

    clock = "this host's clock (Dagster's processes write their own times into its storage)"

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(url, heartbeat_timeout=heartbeat_timeout, clock=clock)
        scheme, _, rest = url.partition("://")
        self.backend = "sqlite" if scheme == "dagster+sqlite" else "postgresql"
        self._sql = load(f"dagster_{self.backend}", package="zombietop.sources")
        self._lock = asyncio.Lock()
        self.notes: list[str] = []
        """What the last poll could not read of some runs (their event logs); the rest of it
        was read."""
        self.workers_on: str | None = None
        """The host the run workers run on: this one for a SQLite storage (one machine's
        folder); on PostgreSQL only what the URL's ``run_workers_on`` says."""
        if self.backend == "sqlite":
            # As SQLAlchemy reads sqlite:/// URLs: three slashes, then the path (a fourth:
            # absolute).
            self.home = str(Path(unquote(url.split(":///", 1)[1])).resolve())
            self.runs_db = Path(self.home) / "history" / "runs.db"
            self._runs = SqliteReader(self.runs_db, self.name, replaced=lambda: None)
            self._files = EventLogs(
                Path(self.home) / "history" / "runs", self.name, self._sql["dagster_run_events"]
            )
        else:
            parts = urlsplit("postgresql://" + rest)
            query = parse_qsl(parts.query, keep_blank_values=True)
            self.workers_on = dict(query).get("run_workers_on") or None
            kept = urlencode([(key, value) for key, value in query if key != "run_workers_on"])
            self.dsn = urlunsplit(parts._replace(query=kept))
            self.home = printable_url(self.dsn)
            self._pg: Any = None
            self._rows = PostgresEvents(self._sql["dagster_run_events"])

    async def open(self) -> None:
        """Check that the storage holds Dagster's runs."""
        columns = await self._fetch(self._sql["dagster_runs_columns"], what="its runs' columns")
        missing = {"run_id", "pipeline_name", "status", "start_time", "end_time"} - {
            row["name"] for row in columns
        }
        if missing:
            raise SourceError(
                f"source {self.name}: no runs table with Dagster's columns (missing "
                f"{', '.join(sorted(missing))}); is it a Dagster instance's run storage, "
                "migrated with `dagster instance migrate`?"
            )

    async def close(self) -> None:
        if self.backend == "sqlite":
            self._runs.close()
        elif self._pg is not None:
            await self._pg.close()
            self._pg = None

    async def _fetch(self, query: str, *params: Any, what: str) -> list[Row]:
        """The rows of ``query``, read-only on either backend; ``what`` names it for errors."""
        if self.backend == "sqlite":
            return await asyncio.to_thread(self._sqlite_rows, query, params, what)
        conn = await self._pg_connection()
        try:
            async with conn.transaction(readonly=True, isolation="repeatable_read"):
                return list(await conn.fetch(query, *params))
        except Exception as exc:
            raise self._pg_error(exc) from None

    def _sqlite_rows(self, query: str, params: tuple[Any, ...], what: str) -> list[Row]:
        if not self.runs_db.is_file():
            raise SourceError(
                f"source {self.name}: no Dagster run storage at {self.runs_db}; give the "
                "instance's folder ($DAGSTER_HOME), or the base_dir of dagster.yaml's "
                "storage: sqlite: section"
            )
        return self._runs.read(lambda conn: list(conn.execute(query, params)), what)

    async def _pg_connection(self) -> Any:
        if self._pg is None or self._pg.is_closed():
            self._pg = await connect_read_only(
                self.dsn, needs="a Dagster source on PostgreSQL", name=self.name
            )
        return self._pg

    def _pg_error(self, exc: Exception) -> SourceError:
        return SourceError(f"source {self.name}: cannot read ({exc})")

    async def _events(self, run_ids: list[str], *, again: bool = False) -> dict[str, RunEvents]:
        """By run id, what each run's events say (``again``: only these runs, read now)."""
        if self.backend == "sqlite":
            if again:
                return await asyncio.to_thread(self._files.again, run_ids)
            found, errors = await asyncio.to_thread(self._files.read, run_ids)
            self.notes = [f"run {printable(bounded_id(r))}: {why}" for r, why in errors.items()]
            return found
        conn = await self._pg_connection()
        try:
            async with conn.transaction(readonly=True):
                if again:
                    return await self._rows.again(conn, run_ids)
                return await self._rows.read(conn, run_ids)
        except Exception as exc:
            raise self._pg_error(exc) from None

    def _here(self, host: str) -> bool:
        """True when the run workers' pids are this host's processes."""
        if self.backend == "sqlite":
            return True
        return self.workers_on is not None and self.workers_on in self.local_names(host)

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        async with self._lock:
            now = self._clock.now()
            rows = await self._fetch(
                self._sql["dagster_runs"], _time_param(since, self.backend), what="its runs"
            )
            events = await self._events([r["run_id"] for r in rows if _reads_events(r, now)])
            here = self._here(host)
            checks = await asyncio.to_thread(_identities, rows, events) if here else {}
            executing = {
                row["run_id"]
                for row in rows
                if _STATES.get(str(row["status"]), TaskState.QUEUED).executing
            }
            gone = [
                run_id
                for run_id, (_, alive) in checks.items()
                if not alive and run_id in executing and not events[run_id].ended
            ]
            if gone:
                # Gone: read what they wrote before they went, so a run that ended as this
                # poll read it waits for Dagster's mark instead of reading as dead.
                events.update(await self._events(gone, again=True))
            # In a thread: a dead run's reason asks the kernel about its step processes.
            return await asyncio.to_thread(
                lambda: [
                    self._record(
                        row, events.get(row["run_id"]), checks, host if here else None, now
                    )
                    for row in rows
                ]
            )

    def _record(
        self,
        row: Row,
        events: RunEvents | None,
        checks: dict[str, tuple[ProcessStart | None, bool]],
        host: str | None,
        now: float,
    ) -> SourceRecord:
        """One run as zombietop's task; ``host`` is the run workers' when they are this
        host's, and ``checks`` says of each run worker there whether it lives."""
        status = str(row["status"])
        state = _STATES.get(status, TaskState.QUEUED)
        job = bounded_id(row["job"] or "?")
        zid = dagster_task_id(job, row["run_id"])
        created = dagster_time(row["create_timestamp"]) or now
        started = _float(row["start_time"])
        events = events or RunEvents()
        pid = events.worker_pid if state.executing or state.finished else None
        pid_start, alive = checks.get(row["run_id"], (None, False))
        steps = sorted(events.steps) if state.executing else []
        task = Task(
            task_id=zid,
            run_id=bounded_id(row["run_id"]),
            step=", ".join(steps) or job,
            step_type=job,
            job=job,
            state=state,
            host=host if pid is not None else None,
            pid=pid,
            pid_start_time=None if pid_start is None else pid_start.time,
            pid_start_identity=None if pid_start is None else pid_start.identity,
            state_reason=_reason(status, state, events, pid if host else None, alive),
            waits_in_queue=status in WAITS_IN_QUEUE,
            created_at=created,
            claimed_at=started if state.executing or state.finished else None,
            started_at=started,
            finished_at=(_float(row["end_time"]) or now) if state.finished else None,
            updated_at=dagster_time(row["update_timestamp"]) or created,
        )
        lease = heartbeat = None
        if state.executing:
            # Dagster has no leases: the run worker holds its run until something marks it
            # finished, so zombietop sees a lease held without an expiry (never reclaimable).
            owner = f"dagster run worker pid {pid}" if pid is not None else "dagster"
            lease = Lease(task_id=zid, owner=owner, token=1, acquired_at=started or created)
            beat = _beat(now, events, pid if host else None, alive)
            heartbeat = proof_of_life(zid, beat, started)
        origin = self.origin(
            {
                "run_id": bounded_id(row["run_id"]),
                "job": job,
                "status": status,
                "run_worker_pid": pid,
                "steps": ", ".join(f"{step} (pid {events.steps[step][0] or '?'})" for step in steps)
                or None,
                "last_event_at": _iso(events.last_event_at),
                "instance": self.home,
            }
        )
        return SourceRecord(
            record=TaskRecord(task=task, lease=lease, heartbeat=heartbeat), origin=origin
        )

    def kill_check(self, pid: int) -> str | None:
        """None when ``pid`` runs Dagster (``dagster api execute_run``, ``dagster job
        execute``, ``python -m dagster ...``); else what it is, and why it is not signalled.
        The executor has already checked that it is the process the run's start named."""
        try:
            argv = psutil.Process(pid).cmdline()
        except psutil.NoSuchProcess:
            return f"pid {pid} is gone; nothing signalled"
        except psutil.Error as exc:
            return f"cannot read what pid {pid} is ({exc}), so it is not shown to be Dagster's"
        if runs_dagster(argv):
            return None
        said = printable(shlex.join(argv)[:80]) if argv else "(no command line)"
        return f"pid {pid} is `{said}`, not a Dagster run worker; nothing signalled"


def runs_dagster(argv: Sequence[str]) -> bool:
    """True for a command line that runs Dagster: its ``dagster`` program (a script run by
    Python too), or ``python -m dagster``."""
    names = [os.path.basename(arg) for arg in argv[:2]]
    if "dagster" in names:
        return True
    return any(arg == "-m" and nxt == "dagster" for arg, nxt in itertools.pairwise(argv[1:4]))


def _identities(
    rows: Sequence[Row], events: dict[str, RunEvents]
) -> dict[str, tuple[ProcessStart | None, bool]]:
    """By run id, the start the probe checks each run worker against, and whether it lives
    (``worker_identity``): the runs that run or ended of late, whose run worker is known."""
    found: dict[str, tuple[ProcessStart | None, bool]] = {}
    for row in rows:
        known = events.get(row["run_id"])
        if known is not None and known.worker_pid is not None:
            found[row["run_id"]] = worker_identity(known.worker_pid, known.worker_named_at)
    return found


def _reads_events(row: Row, now: float) -> bool:
    """True for a run whose event log this poll reads: an unfinished one, or one finished
    within ``ORPHAN_LOOK`` (its run worker may run on)."""
    state = _STATES.get(str(row["status"]), TaskState.QUEUED)
    if not state.finished:
        return state.executing
    ended = _float(row["end_time"])
    return ended is not None and now - ended <= ORPHAN_LOOK


def _beat(now: float, events: RunEvents, pid: int | None, alive: bool) -> float | None:
    """When the run last showed life: now while its run worker lives on this host; the last
    event's time when the run worker is not known, or when it wrote the run's end (Dagster
    marks the run next: the judge waits for it); none when it went without an end, as
    nothing will record one: the run is dead at once."""
    if alive:
        return now
    if pid is None or events.ended:
        return events.last_event_at
    return None


def _reason(
    status: str, state: TaskState, events: RunEvents, pid: int | None, alive: bool
) -> str | None:
    if state.executing and pid is not None and not alive:
        left = [
            f"step {step}'s process (pid {step_pid}) still runs"
            for step, (step_pid, named_at) in sorted(events.steps.items())
            if step_pid is not None and worker_identity(step_pid, named_at)[1]
        ]
        return "; ".join([no_process_words(status), *left])
    if status == "FAILURE":
        return f"dagster FAILURE: {events.failure}" if events.failure else "dagster FAILURE"
    if status == "CANCELING":
        return "dagster CANCELING: asked to stop, its run worker has not ended it yet"
    if status == "QUEUED":
        return "dagster QUEUED: waits for the run queue (the daemon launches it)"
    if status in ("STARTED", "SUCCESS"):
        return None
    return f"dagster {printable(bounded_id(status))}"


def _iso(when: float | None) -> str | None:
    return None if when is None else datetime.fromtimestamp(when, tz=UTC).isoformat()


def _time_param(when: float | None, backend: str) -> str | datetime | None:
    """``when`` as Dagster's naive UTC datetime columns compare: their text on SQLite, which
    orders as the times do."""
    if when is None:
        return None
    param = datetime.fromtimestamp(when, tz=UTC).replace(tzinfo=None)
    return param.strftime("%Y-%m-%d %H:%M:%S.%f") if backend == "sqlite" else param


def _resume(origin: Origin) -> str:
    run_id, job = str(origin.ids["run_id"]), str(origin.ids["job"])
    first = ""
    if origin.ids.get("status") not in ("FAILURE", "CANCELED"):
        first = "Mark it canceled first (Dagster re-executes a finished run only), then "
    return (
        f"{first}re-execute it from failure in the Dagster UI (Runs > {run_id} > Re-execute > "
        f"From failure), or in Python: execute_job(reconstructable({job}), instance, "
        f"reexecution_options=ReexecutionOptions.from_failure({run_id!r}, instance))"
    )


def _discard(origin: Origin) -> str:
    run_id = str(origin.ids["run_id"])
    return (
        "Mark it canceled in the Dagster UI (Terminate, then Force termination immediately "
        f"when its process is gone), or with Dagster's GraphQL: terminateRun(runId: "
        f'"{run_id}", terminatePolicy: MARK_AS_CANCELED_IMMEDIATELY); to drop its record: '
        f"dagster run delete {shlex.quote(run_id)}"
    )


ENGINE = Engine(
    kind="dagster",
    name="Dagster",
    unit="run",
    schemes=SCHEMES,
    forms=FORMS,
    check_url=check_url,
    make=DagsterSource,
    heartbeat_timeout=(
        DAGSTER_HEARTBEAT_TIMEOUT,
        "zombietop: an hour without an event or a live run worker; Dagster has no such limit",
    ),
    actions="re-execute it from failure in Dagster, mark it canceled, or kill its run worker",
    task_id=lambda origin: dagster_task_id(str(origin.ids["job"]), str(origin.ids["run_id"])),
    resume=_resume,
    discard=_discard,
)
