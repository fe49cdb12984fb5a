"""What a Dagster run's event log says of its processes, read without writing a byte.

Dagster's SQLite storage keeps each run's events in a file of its own
(``history/runs/<run_id>.db``). Every event that Dagster's own code writes names the process
that wrote it (``dagster_event.pid`` in the event's JSON): the run worker writes the run's
start (``PIPELINE_START``, ``RUN_START`` in newer words), each step process its
``STEP_START``. From them this module keeps, per run:

- the run worker's pid, and the time of the event that first named it: a process that started
  after that event cannot be the run worker (its pid was reused);
- the steps that started and have not ended, with the pid of each;
- the time of the last event of any kind (a log line from the op's code is one too);
- the message of the run's failure.

A run's file is read again only when it changed (its inode, size and time, and its log's), and
then only the events after the last one read. Dagster opens and closes a connection for each
write, so between writes the file has no ``-wal``: it is read then with ``immutable=1`` and the
read thrown away when the file changed during it (``sqlite_files``). No connection is kept: a
thousand running runs are a thousand files.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from zombietop.errors import SourceError
from zombietop.printable import bounded
from zombietop.sources.engine_text import bounded_id
from zombietop.sources.sqlite_files import FileMark, mark, read_only_uri, readable_hint

READ_TRIES = 3
"""Reads of one run's file in one poll, each thrown away when the file changed under it."""

RUN_STARTS = frozenset({"PIPELINE_START", "RUN_START"})
RUN_FAILURES = frozenset({"PIPELINE_FAILURE", "RUN_FAILURE"})
RUN_ENDS = frozenset(
    {*RUN_FAILURES, "PIPELINE_SUCCESS", "RUN_SUCCESS", "PIPELINE_CANCELED", "RUN_CANCELED"}
)
"""The events a run worker writes as it ends its run, just before Dagster marks the run."""
STEP_ENDS = frozenset({"STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED", "STEP_UP_FOR_RETRY"})
MESSAGE_LIMIT = 300
"""The most characters of a failure's message kept as the run's reason."""


def dagster_time(value: Any) -> float | None:
    """A Dagster time column as epoch seconds: a naive UTC datetime, or its text on SQLite."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # Dagster writes naive UTC datetimes
    return float(value.timestamp())


@dataclass(slots=True)
class RunEvents:
    """What one run's events said, up to the last one read."""

    last_id: int = 0
    file: tuple[Any, ...] | None = None
    """The file as it was at the last read (``sqlite_files.mark``): unchanged, nothing to read."""
    worker_pid: int | None = None
    worker_named_at: float | None = None
    """When the event that first named the run worker was written."""
    steps: dict[str, tuple[int | None, float]] = field(default_factory=dict)
    """By step key, the steps started and not ended: the step process's pid, and when."""
    last_event_at: float | None = None
    ended: bool = False
    """The run worker wrote the run's end: Dagster marks the run finished next."""
    failure: str | None = None

    def take(self, row: Any) -> None:
        """Fold one event row (``dagster_run_events``) into what is known."""
        self.last_id = int(row["id"])
        kind: str | None = row["type"]
        at = dagster_time(row["timestamp"])
        if at is not None:
            self.last_event_at = at if self.last_event_at is None else max(self.last_event_at, at)
        step = row["step_key"]
        self.ended = self.ended or kind in RUN_ENDS
        if kind in STEP_ENDS and step is not None:
            self.steps.pop(bounded_id(step), None)
            return
        if kind not in RUN_STARTS and kind not in RUN_FAILURES and kind != "STEP_START":
            return
        body = _body(row["event"])
        pid = _pid(body)
        when = _float(body.get("timestamp")) or at
        if kind == "STEP_START" and step is not None:
            self.steps[bounded_id(step)] = (pid, when or 0.0)
        elif kind in RUN_FAILURES:
            said = body.get("user_message") or body.get("message")
            self.failure = bounded(str(said), limit=MESSAGE_LIMIT) if said else None
        elif pid is not None:
            # Only the run's start names the run worker: an engine event before it may be
            # the launcher's (the webserver's or the daemon's process).
            self.worker_pid, self.worker_named_at = pid, when


def _body(text: Any) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _pid(body: dict[str, Any]) -> int | None:
    event = body.get("dagster_event")
    pid = event.get("pid") if isinstance(event, dict) else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class EventLogs:
    """The event logs of a Dagster instance's runs (``runs_dir``), read as they change."""

    def __init__(self, runs_dir: Path, name: str, query: str) -> None:
        self.runs_dir = runs_dir
        self.name = name
        self._query = query
        self._known: dict[str, RunEvents] = {}

    def path(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.db"

    def read(self, run_ids: list[str]) -> tuple[dict[str, RunEvents], dict[str, str]]:
        """By run id, what each run's events say; and by run id, why a run's events could not
        be read this time (its last known state is kept and used)."""
        found: dict[str, RunEvents] = {}
        errors: dict[str, str] = {}
        for run_id in run_ids:
            known = self._known.get(run_id) or RunEvents()
            try:
                found[run_id] = self._read_one(run_id, known)
            except SourceError as exc:
                errors[run_id] = str(exc)
                found[run_id] = known
        self._known = found
        return found, errors

    def again(self, run_ids: list[str]) -> dict[str, RunEvents]:
        """What some runs' events say now (what their run workers wrote before they went);
        what was known of a run whose file cannot be read."""
        found: dict[str, RunEvents] = {}
        for run_id in run_ids:
            known = self._known.get(run_id) or RunEvents()
            try:
                found[run_id] = self._known[run_id] = self._read_one(run_id, known)
            except SourceError:
                found[run_id] = known
        return found

    def _read_one(self, run_id: str, known: RunEvents) -> RunEvents:
        path = self.path(run_id)
        if "/" in run_id or run_id in ("", ".", ".."):
            raise SourceError(f"source {self.name}: run id {run_id!r} names no event log file")
        for _ in range(READ_TRIES):
            try:
                before = mark(path)
            except FileNotFoundError:
                return known  # no event yet: Dagster makes the file with the first one
            except OSError as exc:
                raise SourceError(f"source {self.name}: cannot read {path} ({exc})") from None
            now = _file_key(path, before)
            if known.file is not None and known.file[0] != now[0]:
                known = RunEvents()  # another file at the path: read it from its start
            if known.file == now:
                return known
            uri, immutable = read_only_uri(path, self.name)
            rows = self._rows(uri, path, known.last_id)
            if not immutable or mark(path) == before:
                for row in rows:
                    known.take(row)
                known.file = now
                return known
        raise SourceError(
            f"source {self.name}: {path} changed as it was read, {READ_TRIES} times; "
            "it is read again at the next poll"
        )

    def _rows(self, uri: str, path: Path, after: int) -> list[Any]:
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise SourceError(
                f"source {self.name}: cannot open {path} read-only ({exc}); "
                f"{readable_hint(path, str(exc))}"
            ) from None
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.row_factory = sqlite3.Row
            return list(conn.execute(self._query, (after,)))
        except sqlite3.Error as exc:
            raise SourceError(
                f"source {self.name}: cannot read {path} ({exc}); {readable_hint(path, str(exc))}"
            ) from None
        finally:
            conn.close()


class PostgresEvents:
    """The events of a Dagster instance's runs in its PostgreSQL table ``event_logs``, read as
    they are written: each read asks for the events after the last one read of each run."""

    def __init__(self, query: str) -> None:
        self._query = query
        self._known: dict[str, RunEvents] = {}

    async def read(self, conn: Any, run_ids: list[str]) -> dict[str, RunEvents]:
        """By run id, what each run's events say, on the asyncpg connection ``conn``."""
        found = {run_id: self._known.get(run_id) or RunEvents() for run_id in run_ids}
        await self._take(conn, found)
        self._known = found
        return found

    async def again(self, conn: Any, run_ids: list[str]) -> dict[str, RunEvents]:
        """What some runs' events say now (what their run workers wrote before they went)."""
        found = {run_id: self._known.get(run_id) or RunEvents() for run_id in run_ids}
        await self._take(conn, found)
        self._known.update(found)
        return found

    async def _take(self, conn: Any, runs: dict[str, RunEvents]) -> None:
        if not runs:
            return
        asked = json.dumps([[run_id, known.last_id] for run_id, known in runs.items()])
        for row in await conn.fetch(self._query, asked):
            runs[row["run_id"]].take(row)


def _file_key(path: Path, before: FileMark) -> tuple[Any, ...]:
    """The file's identity and state: its inode first (a new inode is a new file), then the
    main file's and its log's sizes and times (a log rewritten from its start keeps its size)."""
    try:
        wal = Path(f"{path}-wal").stat()
    except FileNotFoundError:
        log = None
    else:
        log = (wal.st_ino, wal.st_size, wal.st_mtime_ns)
    return (before.main[1], before.main, log)
