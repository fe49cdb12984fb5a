"""The detail view says what is true of a task in its state: the process of a finished task has
exited, as it should, and a released lease says when it was released."""

from __future__ import annotations

from dataclasses import replace

import pytest
from rich.console import Console

from zombietop.judge.monitor import TaskView, build_snapshot
from zombietop.model import (
    Event,
    EventKind,
    IdleSource,
    Lease,
    ProcessSample,
    TaskRecord,
    TaskState,
)
from zombietop.tui.screens.detail import facts_table, notes_text
from zombietop.tui.testing import NOW, sample_config, sample_records


def _row(view: TaskView, label: str) -> str:
    """The detail view's row ``label``, as it reads."""
    console = Console(width=200, record=True)
    console.print(facts_table(view, NOW))
    for line in console.export_text().splitlines():
        name, _, value = line.strip().partition("  ")
        if name == label:
            return value.strip()
    raise AssertionError(f"no {label!r} row")


def process_words(view: TaskView) -> str:
    return _row(view, "process")


def lease_words(view: TaskView, now: float) -> str:
    return _row(view, "lease")


def _view(task_id: str, process: ProcessSample | None, **task: object) -> TaskView:
    records: list[TaskRecord] = []
    for record in sample_records():
        if record.task.task_id == task_id:
            record = replace(record, task=replace(record.task, **task))  # type: ignore[arg-type]
        records.append(record)
    samples = {task_id: process} if process is not None else {}
    return build_snapshot(NOW, records, sample_config(), samples).by_id()[task_id]


GONE = ProcessSample(pid=7041, alive=False, sampled_at=NOW)


def test_a_finished_tasks_process_exited_as_expected() -> None:
    view = _view("backup-0730", GONE, pid=7041, host="batch-01")
    assert view.task.state is TaskState.SUCCEEDED
    assert process_words(view) == "pid 7041 exited, as expected: the task succeeded"


def test_a_running_tasks_process_that_is_gone_is_said_loudly() -> None:
    view = _view("etl-0417", ProcessSample(pid=3907, alive=False, sampled_at=NOW))
    assert process_words(view).startswith("pid 3907 GONE, started 2026-11-30 00:03:20 UTC")


def test_a_finished_tasks_process_still_alive_is_said() -> None:
    alive = ProcessSample(pid=7041, alive=True, status="sleeping", sampled_at=NOW)
    view = _view("backup-0731", alive, pid=7041, host="batch-01")
    assert "pid 7041 still alive, though the task failed" in process_words(view)


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (IdleSource.KERNEL, "idle 35m00s (no CPU, no I/O, by the kernel's record)"),
        (IdleSource.SAMPLES, "idle 35m00s (no CPU, no I/O, seen between samples)"),
        (None, "idle 35m00s (no CPU, no I/O)"),
    ],
)
def test_the_process_row_says_how_long_it_idled_and_who_says_so(
    source: IdleSource | None, said: str
) -> None:
    idle = ProcessSample(
        pid=4121, alive=True, status="sleeping", idle_s=2100.0, idle_source=source, sampled_at=NOW
    )
    assert f"cpu -, {said}, rss" in process_words(_view("export-2031", idle))


@pytest.mark.parametrize(
    ("lease", "words"),
    [
        (
            Lease(task_id="backup-0730", owner=None, token=1, renewed_at=NOW - 600),
            "released at 2026-11-30 00:43:20 UTC, token 1",
        ),
        (Lease(task_id="backup-0730", owner=None, token=1), "released, token 1"),
        (None, "none"),
    ],
)
def test_a_released_lease_says_when_and_no_dashes(lease: Lease | None, words: str) -> None:
    view = replace(_view("backup-0730", None), lease=lease)
    assert lease_words(view, NOW) == words


def test_a_held_lease_says_its_owner_token_and_expiry() -> None:
    view = _view("thumbs-7781", None)
    assert lease_words(view, NOW) == (
        "owner run-5230@batch-01, token 2, expires in 3m20s (2026-11-30 00:56:40 UTC)"
    )


def test_notes_show_newest_first_with_who_and_how_long_ago() -> None:
    def note(event_id: int, at: float, by: str, text: str) -> Event:
        data = {"action": "note", "by": by, "text": text}
        return Event(
            event_id=event_id,
            at=at,
            task_id="t",
            kind=EventKind.INCIDENT_NOTE,
            actor=by,
            message=f"note by {by}: {text}",
            data=data,
        )

    other = Event(event_id=1, at=NOW - 900, task_id="t", kind="page", actor="w", message="x")
    events = [
        note(3, NOW - 300, "bob", "waiting on\x1b[2J partner API"),
        other,
        note(2, NOW - 600, "ana", "looking"),
    ]
    assert notes_text(events, NOW).plain.splitlines() == [
        "notes, newest first",
        "✎ note by bob 5m00s ago: waiting on\\x1b[2J partner API",
        "✎ note by ana 10m00s ago: looking",
        "",
    ]
    assert notes_text([other], NOW).plain == ""
