"""The PROGRESS cell says what is true of a task that reports no progress: a queued task has
none yet, a finished one has none to come, and a succeeded one is done. Only a task that runs
without saying how far it is reads ``?``."""

from __future__ import annotations

from dataclasses import replace

from zombietop.model import TaskState
from zombietop.tui.cells import COLUMNS
from zombietop.tui.testing import NOW
from zombietop.tui.testing.engines import engines_snapshot

PUBLISH = "nightly_etl/publish/scheduled__2026-11-29T04:00:00+00:00"
"""An Airflow task instance in ``queued``: no heartbeat, no progress."""


def _progress(state: TaskState) -> str:
    view = engines_snapshot().by_id()[PUBLISH]
    view = replace(view, task=replace(view.task, state=state))
    column = next(c for c in COLUMNS if c.key == "progress")
    return column.render(view, NOW, None).plain.strip()


def test_a_task_without_progress_reads_what_is_true_of_it() -> None:
    assert _progress(TaskState.QUEUED) == "-"
    assert _progress(TaskState.SUCCEEDED) == "done"
    assert _progress(TaskState.FAILED) == "-"
    assert _progress(TaskState.DISCARDED) == "-"
    assert _progress(TaskState.RUNNING).endswith("?")
