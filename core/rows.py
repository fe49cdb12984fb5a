"""The columns both stores read, and the reader for one joined task row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model import Heartbeat, Lease, PendingKill, ProcessSample, Row, Task, TaskRecord

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


class _Prefixed(Mapping[str, Any]):
    """A view of one joined row's ``l_`` or ``h_`` columns under their plain names."""

    __slots__ = ("_prefix", "_row")

    def __init__(self, row: Row, prefix: str) -> None:
        self._row = row
        self._prefix = prefix

    def __getitem__(self, key: str) -> Any:
        return self._row[self._prefix + key]

    def __iter__(self) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


def record_from_row(row: Row) -> TaskRecord:
    lease = Lease.from_row(_Prefixed(row, "l_")) if row["l_task_id"] is not None else None
    beat = Heartbeat.from_row(_Prefixed(row, "h_")) if row["h_task_id"] is not None else None
    kill = PendingKill.from_row(_Prefixed(row, "k_")) if row["k_task_id"] is not None else None
    return TaskRecord(task=Task.from_row(row), lease=lease, heartbeat=beat, pending_kill=kill)


def already_requested(kind: str, task_id: str, host: str) -> str:
    """The refusal for a second request of the same action while one waits for an agent."""
    return (
        f"a {kind} of {task_id} is already waiting for the agent on {host}; "
        "wait for it (zombietop status shows it)"
    )


def sample_params(task_id: str, host: str, sample: ProcessSample, now: float) -> dict[str, Any]:
    """The named parameters of ``upsert_process_sample`` (the same on both backends)."""
    return {
        "task_id": task_id, "host": host, "pid": sample.pid, "alive": sample.alive,
        "identity_ok": sample.identity_ok, "status": sample.status,
        "cpu_percent": sample.cpu_percent, "rss_bytes": sample.rss_bytes,
        "threads": sample.threads, "io_idle_s": sample.io_idle_s, "children": sample.children,
        "create_time": sample.create_time, "sampled_at": sample.sampled_at, "now": now,
    }
