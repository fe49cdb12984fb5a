"""``zombietop status``: one snapshot as a readable table, one JSON object, or a Nagios plugin
line, with the plugin API's exit status."""

from __future__ import annotations

import shutil
from enum import IntEnum
from typing import Any

from zombietop.classify import format_progress
from zombietop.durations import format_age
from zombietop.heartbeat_line import format_timestamp
from zombietop.model import AgentPresence, Health, WatchdogLease
from zombietop.monitor import Snapshot, TaskView
from zombietop.printable import printable


class Level(IntEnum):
    """How ``status`` exits: the Nagios plugin API, which every monitoring system reads."""

    OK = 0
    """Nothing needs a human."""
    WARNING = 1
    """A task is spinning or over one of its budgets: look soon."""
    CRITICAL = 2
    """A task is dead, stalled or reclaimable: act now."""
    UNKNOWN = 3
    """The store or the config could not be read: zombietop cannot say."""


def level(snapshot: Snapshot) -> Level:
    """The worst of the snapshot's tasks, as a plugin state."""
    if snapshot.paging:
        return Level.CRITICAL
    if any(_warns(view) for view in snapshot.tasks):
        return Level.WARNING
    return Level.OK


def _warns(view: TaskView) -> bool:
    return view.health is Health.SPINNING or bool(view.verdict.flags)


def nagios_output(snapshot: Snapshot) -> str:
    """The plugin output: a summary line with performance data, then one line per task to act on.

    ``ZOMBIETOP CRITICAL - 1 dead, 2 stalled | dead=1 reclaimable=0 stalled=2 ... over_budget=0``
    """
    state = level(snapshot)
    urgent = [view for view in snapshot.tasks if view.health.pages]
    warned = [view for view in snapshot.tasks if _warns(view) and not view.health.pages]
    over = sum(1 for view in snapshot.tasks if view.verdict.flags)
    found = [f"{snapshot.counts[h]} {h}" for h in Health if h.pages and snapshot.counts[h]]
    if snapshot.counts[Health.SPINNING]:
        found.append(f"{snapshot.counts[Health.SPINNING]} spinning")
    if over:
        found.append(f"{over} over budget")
    summary = ", ".join(found) or f"{len(snapshot.tasks)} tasks, none stuck"
    perfdata = " ".join(
        [*(f"{health}={snapshot.counts[health]}" for health in Health), f"over_budget={over}"]
    )
    lines = [f"ZOMBIETOP {state.name} - {summary} | {perfdata}"]
    lines.extend(view.verdict.context for view in [*urgent, *warned])
    return shown(lines)


def nagios_unknown(reason: str) -> str:
    """The plugin output when zombietop cannot look: the reason, and no performance data."""
    return printable(f"ZOMBIETOP UNKNOWN - {reason}")


def snapshot_to_json(snapshot: Snapshot, watchdog: WatchdogLease | None = None) -> dict[str, Any]:
    """The documented ``status --json`` object."""
    return {
        "generated_at": None if snapshot.taken_at is None else format_timestamp(snapshot.taken_at),
        "counts": {str(health): n for health, n in snapshot.counts.items()},
        "host": snapshot.host,
        "watchdog": _watchdog_json(watchdog, snapshot.taken_at),
        "agents": [_agent_json(agent, snapshot.taken_at) for agent in snapshot.agents],
        "tasks": [_task_json(view) for view in snapshot.tasks],
    }


def _watchdog_json(lease: WatchdogLease | None, now: float | None) -> dict[str, Any] | None:
    """The watchdog holding the store's watchdog lease (``active`` false once it lapsed)."""
    if lease is None:
        return None
    return {
        "owner": lease.owner,
        "host": lease.host,
        "pid": lease.pid,
        "token": lease.token,
        "active": now is not None and lease.active(now),
        "renewed_s_ago": None if now is None else _round(now - lease.renewed_at),
    }


def watchdog_words(lease: WatchdogLease | None, now: float | None) -> str:
    """``watchdog: watchdog@db1 pid 4121 active (renewed 3s ago)``, or that none is."""
    if lease is None or now is None:
        return "watchdog: none has run on this store"
    ago = format_age(max(now - lease.renewed_at, 0.0))
    if lease.active(now):
        return f"watchdog: {lease.owner} active (renewed {ago} ago)"
    return f"watchdog: none active; {lease.owner} last renewed its lease {ago} ago"


def _agent_json(agent: AgentPresence, now: float | None) -> dict[str, Any]:
    return {
        "host": agent.host,
        "present": now is not None and agent.present(now),
        "last_seen_s": None if now is None else _round(now - agent.seen_at),
        "stopped": agent.stopped_at is not None,
        "pid": agent.pid,
        "interval_s": agent.interval_s,
        "clock_skew_s": _round(agent.clock_skew_s),
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
        "remote": view.remote,
        "process": _process_json(view),
        "clock_skew_s": _round(view.clock_skew_s),
        "agent_note": view.agent_note,
        "host_request": _request_json(view),
        "attempt": task.attempt,
        "exit_code": task.exit_code,
        "quarantined": task.quarantined,
        "budgets": {
            name: {"used_s": _round(b.used_s), "limit_s": b.limit_s, "source": b.source}
            for name, b in (
                ("request", budgets.request),
                ("stage", budgets.stage),
                ("task", budgets.task),
            )
        },
        "context": verdict.context,
    }


def _process_json(view: TaskView) -> dict[str, Any] | None:
    sample = view.process
    if sample is None:
        return None
    return {
        "pid": sample.pid,
        "alive": sample.alive and not sample.gone,
        "status": sample.status,
        "cpu_percent": _round(sample.cpu_percent),
        "rss_bytes": sample.rss_bytes,
        "seen_by": view.task.host if view.remote else "this host",
    }


def _request_json(view: TaskView) -> dict[str, Any] | None:
    asked = view.host_request
    if asked is None:
        return None
    return {
        "kind": asked.kind,
        "host": asked.host,
        "actor": asked.actor,
        "requested_at": format_timestamp(asked.requested_at),
        "claimed_by": asked.claimed_by,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _lease_words(view: TaskView) -> str:
    left = view.verdict.lease_expires_in_s
    if left is None:
        return "-"
    return f"in {format_age(left)}" if left >= 0 else f"{format_age(left)} ago"


def render_table(
    snapshot: Snapshot, width: int | None = None, *, watchdog: str | None = None
) -> str:
    """Render the snapshot as plain text: counts (and the ``watchdog`` line when given, from
    ``watchdog_words``), one row per task, then what to act on."""
    lines = _table_lines(snapshot, width)
    if watchdog is not None:
        lines.insert(1, watchdog)
    return shown(lines)


def _table_lines(snapshot: Snapshot, width: int | None) -> list[str]:
    width = width or shutil.get_terminal_size((100, 24)).columns
    counts = "  ".join(f"{health} {n}" for health, n in snapshot.counts.items() if n)
    lines = [counts or "no tasks in the store"]
    if not snapshot.tasks:
        return lines
    header = ("HEALTH", "TASK", "STAGE", "PROGRESS", "HEARTBEAT", "LEASE", "ATTEMPT", "FLAGS")
    rows = [
        tuple(
            printable(cell)
            for cell in (
                str(view.health),
                view.task_id,
                (view.heartbeat.stage if view.heartbeat and view.heartbeat.stage else "-"),
                format_progress(view.heartbeat.progress) if view.heartbeat else "-",
                format_age(view.verdict.heartbeat_age_s)
                if view.verdict.heartbeat_age_s is not None
                else "-",
                _lease_words(view),
                str(view.task.attempt),
                ",".join(str(f) for f in view.verdict.flags) or "-",
            )
        )
        for view in snapshot.tasks
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines.append("")
    for row in [header, *rows]:
        lines.append(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()[:width]
        )
    urgent = [view for view in snapshot.tasks if view.health.pages]
    if urgent:
        lines.append("")
        lines.extend(view.verdict.context for view in urgent)
    notes = [f"{view.task_id}: {view.agent_note}" for view in snapshot.tasks if view.agent_note]
    if notes:
        lines.append("")
        lines.extend(notes)
    if snapshot.agents and snapshot.taken_at is not None:
        lines.append("")
        now = snapshot.taken_at
        lines.append("agents: " + ", ".join(_agent_words(a, now) for a in snapshot.agents))
    return lines


def shown(lines: list[str]) -> str:
    """Join ``lines`` for a terminal, each made printable: the text comes from the store."""
    return "\n".join(printable(line) for line in lines)


def _agent_words(agent: AgentPresence, now: float) -> str:
    if not agent.present(now):
        return f"{agent.host} no agent (last seen {format_age(max(now - agent.seen_at, 0))} ago)"
    skew = agent.clock_skew_s
    return f"{agent.host} ok" + ("" if skew is None else f" (clock {skew:+.1f}s)")
