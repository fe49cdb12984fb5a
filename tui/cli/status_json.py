"""``zombietop status --json``: one snapshot as the documented JSON object."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from zombietop.fleet import AgentPresence, WatchdogLease
from zombietop.heartbeat_line import format_timestamp
from zombietop.job_summary import JobSummary
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.judge.quiet import Counted
from zombietop.judge.schedules import ScheduleView
from zombietop.model import Ack, Note, Silence
from zombietop.output import LastOutput
from zombietop.paging.runbooks import runbook_for
from zombietop.sources import Origin
from zombietop.trace_context import trace_of
from zombietop.tui.cli.oncall import silence_json


def snapshot_to_json(
    snapshot: Snapshot,
    outputs: Mapping[str, LastOutput] | None = None,
    watchdog: WatchdogLease | None = None,
    pings: list[dict[str, Any]] | None = None,
    notes: Mapping[str, Sequence[Note]] | None = None,
    *,
    tasks: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The documented ``status --json`` object; ``outputs`` are the tasks' kept output,
    ``pings`` each job's latest ping over HTTP (``zombietop.serve.pings.last_pings``), and
    ``notes`` the notes on their incidents (newest first). ``tasks`` stands in for the
    snapshot's task objects (``JsonStream`` writes them one at a time)."""
    return {
        "generated_at": None if snapshot.taken_at is None else format_timestamp(snapshot.taken_at),
        "counts": {str(health): n for health, n in snapshot.counts.items()},
        "host": snapshot.host,
        "watchdog": _watchdog_json(watchdog, snapshot.taken_at),
        "agents": [_agent_json(agent, snapshot.taken_at) for agent in snapshot.agents],
        "tasks": list(tasks_json(snapshot, outputs, notes)) if tasks is None else tasks,
        "schedules": [_schedule_json(view) for view in snapshot.schedules],
        "silences": [silence_json(silence, created=False) for silence in snapshot.oncall.silences],
        "source_errors": [
            {"source": name, "error": error}
            for name, error in sorted(snapshot.source_errors.items())
        ],
        "source_notes": [
            {"source": name, "note": note} for name, note in sorted(snapshot.source_notes.items())
        ],
        "pings": pings or [],
        "counted": _counted_json(snapshot.counted),
    }


def _counted_json(counted: Counted | None) -> dict[str, Any] | None:
    """What a poll past ``[monitor] read_at_most`` counted instead of reading (null: none)."""
    if counted is None:
        return None
    return {
        "quiet": {str(health): n for health, n in counted.quiet.items()},
        "unread": counted.unread,
        "read_at_most": counted.read_at_most,
    }


def tasks_json(
    snapshot: Snapshot,
    outputs: Mapping[str, LastOutput] | None = None,
    notes: Mapping[str, Sequence[Note]] | None = None,
) -> Iterator[dict[str, Any]]:
    """The snapshot's task objects, each built when asked for."""
    outputs, notes = outputs or {}, notes or {}
    now = snapshot.read_at
    for view in snapshot.tasks:
        yield task_json(view, snapshot, outputs.get(view.task_id), now, notes.get(view.task_id, ()))


class JsonStream:
    """Write a ``status --json`` object as ``json.dumps(obj, indent=2)`` lays it out, its
    ``tasks`` written one object at a time as they are built: at 100,000 tasks the whole text
    (and every task's object) is never held at once beside the snapshot."""

    def __init__(self, obj: Mapping[str, Any], write: Callable[[str], object]) -> None:
        """``obj``: the object with an empty ``tasks``; its head is written at once."""
        # A random marker where the tasks go: no text from the store can be it.
        marker = secrets.token_hex(16)
        text = json.dumps({**obj, "tasks": [marker]}, indent=2)
        head, self._rest = text.split(json.dumps(marker), 1)
        self._write = write
        self._more = False
        write(head.rstrip())

    def task(self, item: Mapping[str, Any]) -> None:
        text = json.dumps(item, indent=2).replace("\n", "\n    ")
        self._write(("," if self._more else "") + "\n    " + text)
        self._more = True

    def close(self) -> None:
        """Write the rest; with no task written, the list is ``[]`` as ``json.dumps`` has it."""
        self._write((self._rest if self._more else self._rest.lstrip()) + "\n")


def _schedule_json(view: ScheduleView) -> dict[str, Any]:
    schedule = view.schedule
    return {
        "name": schedule.name,
        "step": schedule.step,
        "cron": schedule.cron,
        "tz": schedule.tz,
        "next_due": format_timestamp(view.next_due),
        "last_due": format_timestamp(view.last_due),
        "last_started": None if view.last_started is None else format_timestamp(view.last_started),
        "first_seen": format_timestamp(view.first_seen),
        "health": str(view.health),
        "line": view.line,
    }


def _ack_json(ack: Ack | None) -> dict[str, Any] | None:
    if ack is None:
        return None
    return {"by": ack.by, "reason": ack.reason, "until": format_timestamp(ack.until)}


def note_json(note: Note) -> dict[str, Any]:
    return {"by": note.by, "at": format_timestamp(note.at), "text": note.text}


def _task_silence_json(silence: Silence | None) -> dict[str, Any] | None:
    return None if silence is None else silence_json(silence, created=False)


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


def _origin_json(origin: Origin | None) -> dict[str, Any] | None:
    """Where a task came from when not the store: the engine and its own identifiers."""
    if origin is None:
        return None
    return {
        "kind": origin.kind,
        "name": origin.source,
        "capability": str(origin.capability),
        origin.kind: dict(origin.ids),
    }


def task_json(
    view: TaskView,
    snapshot: Snapshot,
    last: LastOutput | None,
    now: float,
    notes: Sequence[Note] = (),
) -> dict[str, Any]:
    """One task's object, its ages and words composed at ``now``."""
    task, verdict, beat = view.task, view.verdict, view.heartbeat
    budgets = verdict.budgets(now)
    trace_id = trace_of(task, beat)
    return {
        "task_id": task.task_id,
        "run_id": task.run_id,
        "step": task.step,
        "step_type": task.step_type,
        "run_number": task.run_number,
        "job": _job_json(snapshot.job_of(task)),
        "state": str(task.state),
        "state_reason": task.state_reason,
        "health": str(verdict.health),
        "reasons": [
            {"code": r.code, "message": r.words(now), "age_s": r.age(now), "limit_s": r.limit}
            for r in verdict.reasons
        ],
        "flags": [str(flag) for flag in verdict.flags],
        "trace_id": trace_id,
        "trace_url": None if trace_id is None else snapshot.trace_link(trace_id),
        "waiting_on": [{"task_id": up, "health": str(health)} for up, health in view.waiting_on],
        "stage": beat.stage if beat else None,
        "progress": beat.progress if beat else None,
        "counters": dict(beat.counters) if beat else {},
        "heartbeat_source": str(beat.source) if beat else None,
        "last_output": None
        if last is None
        else {"line": last.line, "age_s": _round(last.age(now))},
        "checkpoint": task.checkpoint,
        "heartbeat_age_s": _round(verdict.heartbeat_age(now)),
        "lease_expires_in_s": _round(verdict.lease_expires_in(now)),
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
        "context": verdict.context(now),
        "runbook": runbook_for(view),
        "ack": _ack_json(snapshot.oncall.ack_for(task.task_id)),
        "notes": [note_json(note) for note in notes],
        "silence": _task_silence_json(snapshot.oncall.silence_for(task)),
        "source": _origin_json(snapshot.origins.get(task.task_id)),
    }


def _job_json(summary: JobSummary) -> dict[str, Any]:
    """The summary of a task's job: its runs and how long the successful ones take."""
    return {
        **summary.as_json(),
        "median_s": _round(summary.median_s),
        "p95_s": _round(summary.p95_s),
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
        "idle_s": _round(sample.idle_s),
        "idle_source": sample.idle_source,
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
