"""Every field that comes from the store or a job, through every text interface: shown
escaped, never raw; ``status --json`` (and the events the store keeps) stay exact.

One row per field: a fleet where only that field holds an OSC sequence (which retitles a
terminal), a CSI ``2J`` (which wipes it), a C1 CSI, DEL and a bidi override. Each interface
renders it; the output must hold no character ``printable`` would escape, and the interfaces
that show that field must show its escaped form.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import replace

import pytest
from rich.console import Console, RenderableType

from zombietop.act.bulk import BulkPlan, Skipped, plan_all
from zombietop.actions import ActionKind, finished_refusal
from zombietop.fleet import AgentPresence
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.model import Event, EventKind, TaskRecord, TaskState
from zombietop.page import PageKind
from zombietop.paging.notify import Page
from zombietop.printable import UNSAFE, printable
from zombietop.tui.cells import COLUMNS, row_cells, task_column
from zombietop.tui.cli.status import nagios_output, render_table
from zombietop.tui.cli.status_json import snapshot_to_json
from zombietop.tui.screens.bulk import plan_text, skipped_text
from zombietop.tui.screens.confirm import consequence, facts
from zombietop.tui.screens.detail import facts_table
from zombietop.tui.testing import NOW, alive_process, hostile_records, sample_config
from zombietop.tui.widgets.events_pane import event_line
from zombietop.tui.widgets.offenders import offender_lines

EVIL = "\x1b]2;owned\x07\x1b[2J\x9b1m\x7f\u202e"
SHOWN = printable(EVIL)  # \x1b]2;owned\x07\x1b[2J\x9b1m\x7f\u202e, spelled out


def _clean_record(value: str = "") -> TaskRecord:
    """The hostile sample made harmless, then ``value`` put where each test says."""
    (record,) = hostile_records()
    task = replace(
        record.task, task_id="t1", run_id="run-1", step="step", host="batch-01", checkpoint=None
    )
    assert record.lease is not None and record.heartbeat is not None
    lease = replace(record.lease, task_id="t1", owner="run-6666@batch-01")
    beat = replace(
        record.heartbeat,
        task_id="t1",
        stage="load",
        counters={"rows": 5},
        request_name=None,
        trace_id=None,
    )
    return TaskRecord(task=task, lease=lease, heartbeat=beat)


def _with(field: str, value: str) -> TaskRecord:
    record = _clean_record()
    task, lease, beat = record.task, record.lease, record.heartbeat
    assert lease is not None and beat is not None
    if field == "task_id":
        task, lease, beat = (
            replace(task, task_id=value),
            replace(lease, task_id=value),
            replace(beat, task_id=value),
        )
    elif field in ("run_id", "step", "host", "checkpoint"):
        task = replace(task, **{field: value})
    elif field == "owner":
        lease = replace(lease, owner=value)
    elif field == "stage":
        beat = replace(beat, stage=value)
    elif field == "counter":
        beat = replace(beat, counters={value: 5})
    elif field == "request":
        beat = replace(beat, request_name=value, request_started_at=NOW - 1)
    return TaskRecord(task=task, lease=lease, heartbeat=beat)


def _snapshot(field: str, value: str) -> Snapshot:
    from zombietop.judge.monitor import build_snapshot

    record = _with(field, value)
    samples = {record.task.task_id: alive_process(6666, 0.0, started_ago=2400)}
    snapshot = build_snapshot(NOW, [record], sample_config(), samples)
    if field == "agent":
        agent = AgentPresence(
            host=value, agent_id=f"agent@{value}", pid=1, interval_s=2, started_at=NOW, seen_at=NOW
        )
        snapshot = replace(snapshot, agents=(agent,))
    return snapshot


def _event(field: str, value: str, view: TaskView) -> Event:
    return Event(
        event_id=1,
        at=NOW,
        task_id=view.task_id,
        kind=EventKind.ACTION,
        actor=value if field == "actor" else "alice@laptop",
        message=f"kill refused (reason: {value})" if field == "reason" else "kill term_sent",
    )


def _plain(renderable: RenderableType) -> str:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None, legacy_windows=False).print(renderable)
    return out.getvalue()


Interface = Callable[[Snapshot, Event], str]


def _view(snapshot: Snapshot) -> TaskView:
    return snapshot.tasks[0]


INTERFACES: dict[str, Interface] = {
    "status table": lambda s, e: render_table(s, width=400),
    "status --nagios": lambda s, e: nagios_output(s),
    "page line": lambda s, e: (
        Page(kind=PageKind.INCIDENT, line=_view(s).verdict.context(NOW), at=NOW).shown
    ),
    # The task column as wide as the longest escaped id here: a narrower one cuts the id in
    # the middle (tests/tui/test_cells_task_id.py), which is no escape to check.
    "dashboard cells": lambda s, e: " ".join(
        c.plain for c in row_cells(_view(s), NOW, [COLUMNS[0], task_column(60), *COLUMNS[2:]])
    ),
    "detail": lambda s, e: _plain(facts_table(_view(s), NOW)),
    "events pane": lambda s, e: event_line(e).plain,
    "kill dialog": lambda s, e: (
        consequence(ActionKind.KILL, _view(s)).plain + "\n" + facts(_view(s), NOW).plain
    ),
    # A bulk action's dialog: the marked ids, and a skipped task's reason, which names it.
    "bulk dialog": lambda s, e: (
        plan_text(plan_all("kill", [_view(s)])).plain
        + "\n"
        + skipped_text(
            BulkPlan(
                verb="resume",
                asked=(),
                skipped=(
                    Skipped(
                        view=_view(s),
                        why=str(finished_refusal(_view(s).task_id, TaskState.SUCCEEDED, "resume")),
                    ),
                ),
            ),
            "resumed",
        ).plain
    ),
    "offenders": lambda s, e: "\n".join(
        line.plain for line in offender_lines(s, Console(width=400), 400, 20)
    ),
}

SHOWN_BY: dict[str, set[str]] = {
    "task_id": set(INTERFACES),
    "run_id": {"detail"},
    "step": {"detail"},
    "host": {"kill dialog"},
    "owner": {"dashboard cells", "detail", "kill dialog"},
    "stage": {"status table", "status --nagios", "page line", "dashboard cells", "detail"}
    | {"kill dialog", "offenders"},
    "counter": {"detail"},
    "checkpoint": {"detail"},
    "request": {"detail"},
    "agent": {"status table"},
    "actor": {"events pane"},
    "reason": {"events pane"},
}
"""Which interfaces show each field (every other one must still show nothing raw)."""


@pytest.mark.parametrize("interface", list(INTERFACES))
@pytest.mark.parametrize("field", list(SHOWN_BY))
def test_every_field_is_shown_escaped_by_every_interface(field: str, interface: str) -> None:
    value = f"x{EVIL}y"
    snapshot = _snapshot(field, value)
    text = INTERFACES[interface](snapshot, _event(field, value, _view(snapshot)))
    raw = [ch for ch in UNSAFE.findall(text) if ch != "\n"]
    assert not raw, f"{interface} shows {field} raw: {text!r}"
    if interface in SHOWN_BY[field]:
        assert f"x{SHOWN}y" in text, f"{interface} does not show {field}: {text!r}"


@pytest.mark.parametrize("field", ["task_id", "stage", "counter", "host", "owner", "checkpoint"])
def test_status_json_stays_exact(field: str) -> None:
    value = f"x{EVIL}y"
    record = _with(field, value)
    snapshot = _snapshot(field, value)
    dumped = json.dumps(snapshot_to_json(snapshot))
    assert not UNSAFE.search(dumped)  # JSON escapes control characters itself
    (task,) = json.loads(dumped)["tasks"]
    exact = {
        "task_id": task["task_id"],
        "stage": task["stage"],
        "counter": next(iter(task["counters"])),
        "host": task["host"],
        "owner": task["owner"],
        "checkpoint": task["checkpoint"],
    }
    assert exact[field] == value
    assert record.task.task_id == task["task_id"]


def test_the_page_is_exact_in_the_store_and_printable_on_the_phone() -> None:
    line = f"t{EVIL} stalled: stage=load"
    page = Page(kind=PageKind.INCIDENT, line=line, at=NOW)
    assert page.line == line and page.shown == printable(line)


def test_the_watch_log_is_printable(capsys: pytest.CaptureFixture[str]) -> None:
    from zombietop.tui.cli.watch import _log

    _log(f"PAGE (incident) t{EVIL} stalled")
    out = capsys.readouterr().out
    assert out.endswith(f"PAGE (incident) t{SHOWN} stalled\n")
    assert not [ch for ch in UNSAFE.findall(out) if ch != "\n"]
