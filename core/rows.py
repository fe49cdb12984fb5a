"""The columns both stores read, and the reader for one joined task row."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.model import Heartbeat, Lease, PendingKill, ProcessSample, Task, TaskRecord

TASK_COLUMNS = (
    "task_id run_id step step_type state attempt upstream host pid pid_start_time command cwd "
    "checkpoint exit_code state_reason heartbeat_error heartbeat_error_at quarantined_at "
    "quarantined_by quarantine_reason created_at claimed_at started_at finished_at updated_at"
).split()
LEASE_COLUMNS = "task_id owner token acquired_at renewed_at expires_at".split()
HEARTBEAT_COLUMNS = (
    "task_id stage progress counters checkpoint eta_s request_name request_started_at trace_id "
    "reported_at written_at progress_changed_at stage_started_at seq"
).split()
KILL_COLUMNS = (
    "task_id pid pid_start_time pgid host requested_by term_sent_at deadline outcome finished_at"
).split()
_COLUMNS = ", ".join(
    [f"t.{c}" for c in TASK_COLUMNS]
    + [f"l.{c} AS l_{c}" for c in LEASE_COLUMNS]
    + [f"h.{c} AS h_{c}" for c in HEARTBEAT_COLUMNS]
    + [f"k.{c} AS k_{c}" for c in KILL_COLUMNS]
)
_KILL_COLUMNS = ", ".join(f"k.{c}" for c in KILL_COLUMNS)
REQUEST_COLUMNS = (
    "request_id task_id host kind expected_token actor reason requested_at claimed_by "
    "claimed_at outcome message finished_at"
).split()


_T = len(TASK_COLUMNS)
_L = _T + len(LEASE_COLUMNS)
_H = _L + len(HEARTBEAT_COLUMNS)


def record_from_row(row: Iterable[Any]) -> TaskRecord:
    """Split one joined poll row (a sqlite3.Row or an asyncpg Record) into its parts."""
    return record_from_values(tuple(row))


def record_from_values(values: tuple[Any, ...]) -> TaskRecord:
    # Slicing and zipping names run in C; this runs for every changed row of every poll.
    lease = beat = kill = None
    if values[_T] is not None:
        lease = Lease.from_row(dict(zip(LEASE_COLUMNS, values[_T:_L], strict=True)))
    if values[_L] is not None:
        beat = Heartbeat.from_row(dict(zip(HEARTBEAT_COLUMNS, values[_L:_H], strict=True)))
    if values[_H] is not None:
        kill = PendingKill.from_row(dict(zip(KILL_COLUMNS, values[_H:], strict=True)))
    task = Task.from_row(dict(zip(TASK_COLUMNS, values[:_T], strict=True)))
    return TaskRecord(task=task, lease=lease, heartbeat=beat, pending_kill=kill)


class PollCache:
    """Poll rows by task id as last read: an unchanged row reuses its records (most rows, most
    polls), so a poll costs what changed rather than what exists."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[tuple[Any, ...], TaskRecord]] = {}

    def records(self, rows: Iterable[Any]) -> list[TaskRecord]:
        cache = self._rows
        fresh: dict[str, tuple[tuple[Any, ...], TaskRecord]] = {}
        records = []
        for row in rows:
            values = tuple(row)
            seen = cache.get(values[0])
            same = seen is not None and seen[0] == values
            record = seen[1] if seen is not None and same else record_from_values(values)
            fresh[values[0]] = (values, record)
            records.append(record)
        self._rows = fresh
        return records


def already_requested(kind: str, task_id: str, host: str) -> str:
    """The refusal for a second request of the same action while one waits for an agent."""
    return (
        f"a {kind} of {task_id} is already waiting for the agent on {host}; "
        "wait for it (zombietop status shows it)"
    )


def sample_params(task_id: str, host: str, sample: ProcessSample, now: float) -> dict[str, Any]:
    """The named parameters of ``upsert_process_sample`` (the same on both backends)."""
    return {
        "task_id": task_id,
        "host": host,
        "pid": sample.pid,
        "alive": sample.alive,
        "identity_ok": sample.identity_ok,
        "status": sample.status,
        "cpu_percent": sample.cpu_percent,
        "rss_bytes": sample.rss_bytes,
        "threads": sample.threads,
        "io_idle_s": sample.io_idle_s,
        "children": sample.children,
        "create_time": sample.create_time,
        "sampled_at": sample.sampled_at,
        "now": now,
    }
