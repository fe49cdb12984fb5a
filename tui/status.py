"""``zombietop status``: one snapshot as a readable table or as one JSON object."""

from __future__ import annotations

import shutil
from typing import Any

from core.classify import format_progress
from core.durations import format_age
from core.heartbeat_line import format_timestamp
from core.monitor import Snapshot, TaskView


def snapshot_to_json(snapshot: Snapshot) -> dict[str, Any]:
    """The documented ``status --json`` object."""
    return {
        "generated_at": None if snapshot.taken_at is None else format_timestamp(snapshot.taken_at),
        "counts": {str(health): n for health, n in snapshot.counts.items()},
        "tasks": [_task_json(view) for view in snapshot.tasks],
    }


def _task_json(view: TaskView) -> dict[str, Any]:
    task, verdict, beat = view.task, view.verdict, view.heartbeat
    budgets = verdict.budgets
    return {
        "task_id": task.task_id,
        "run_id": task.run_id,
        "step": task.step,
        "step_type": task.step_type,
        "state": str(task.state),
        "health": str(verdict.health),
        "reasons": [
            {"code": r.code, "message": r.message, "age_s": r.age_s, "limit_s": r.limit_s}
            for r in verdict.reasons
        ],
        "flags": [str(flag) for flag in verdict.flags],
        "stage": beat.stage if beat else None,
        "progress": beat.progress if beat else None,
        "counters": dict(beat.counters) if beat else {},
        "checkpoint": task.checkpoint,
        "heartbeat_age_s": _round(verdict.heartbeat_age_s),
        "lease_expires_in_s": _round(verdict.lease_expires_in_s),
        "owner": view.lease.owner if view.lease else None,
        "token": view.token,
        "pid": task.pid,
        "host": task.host,
        "attempt": task.attempt,
        "quarantined": task.quarantined,
        "budgets": {
            name: {"used_s": _round(b.used_s), "limit_s": b.limit_s, "source": b.source}
            for name, b in (("request", budgets.request), ("stage", budgets.stage), ("task", budgets.task))
        },
        "context": verdict.context,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _lease_words(view: TaskView) -> str:
    left = view.verdict.lease_expires_in_s
    if left is None:
        return "-"
    return f"in {format_age(left)}" if left >= 0 else f"{format_age(left)} ago"


def render_table(snapshot: Snapshot, width: int | None = None) -> str:
    """Render the snapshot as plain text: counts, one row per task, then what to act on."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    counts = "  ".join(f"{health} {n}" for health, n in snapshot.counts.items() if n)
    lines = [counts or "no tasks in the store"]
    if not snapshot.tasks:
        return "\n".join(lines)
    header = ("HEALTH", "TASK", "STAGE", "PROGRESS", "HEARTBEAT", "LEASE", "ATTEMPT", "FLAGS")
    rows = [
        (
            str(view.health),
            view.task_id,
            (view.heartbeat.stage if view.heartbeat and view.heartbeat.stage else "-"),
            format_progress(view.heartbeat.progress) if view.heartbeat else "-",
            format_age(view.verdict.heartbeat_age_s) if view.verdict.heartbeat_age_s is not None else "-",
            _lease_words(view),
            str(view.task.attempt),
            ",".join(str(f) for f in view.verdict.flags) or "-",
        )
        for view in snapshot.tasks
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines.append("")
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()[:width])
    urgent = [view for view in snapshot.tasks if view.health.pages]
    if urgent:
        lines.append("")
        lines.extend(view.verdict.context for view in urgent)
    return "\n".join(lines)
