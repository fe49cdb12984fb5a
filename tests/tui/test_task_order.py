"""Which tasks the dashboard shows, in which order (tui/task_order.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from zombietop.config import default_config
from zombietop.judge.monitor import build_snapshot
from zombietop.model import TaskState
from zombietop.tui.task_order import SortMode, ordered
from zombietop.tui.testing import sample_snapshot
from zombietop.tui.testing.builders import NOW, make_task
from zombietop.tui.testing.fleet import sample_records


def test_unfiltered_urgency_is_the_snapshots_own_tuple() -> None:
    """Not a copy: the table tells unchanged views apart by identity, starting with the tuple."""
    snapshot = sample_snapshot()
    assert ordered(snapshot, SortMode.URGENCY, "") is snapshot.tasks


@pytest.mark.parametrize(
    ("sort", "filter_text", "first_ids"),
    [
        (SortMode.URGENCY, "export", ["export-2031", "export-2029"]),
        (SortMode.URGENCY, "HEALTHY", ["ingest-5119", "resize-9001", "train-0008"]),
        (SortMode.HEARTBEAT, "", ["export-2031", "export-2029", "billing-0901"]),
        (SortMode.PROGRESS, "", ["backup-0731", "export-2029", "ingest-5119"]),
        (SortMode.TASK, "", ["backup-0730", "backup-0731", "billing-0901"]),
    ],
)
def test_filters_and_sorts_give_a_tuple_in_that_order(
    sort: SortMode, filter_text: str, first_ids: list[str]
) -> None:
    views = ordered(sample_snapshot(), sort, filter_text)
    assert isinstance(views, tuple)
    assert [view.task_id for view in views[: len(first_ids)]] == first_ids


def test_a_failed_run_sorts_above_the_succeeded_ones() -> None:
    """Issue 29, item 8: one failed run among 49 succeeded ones is the row to see, so it comes
    first among the finished rows, filtered or not."""
    base = next(r for r in sample_records() if r.task.state is TaskState.SUCCEEDED)
    records = [
        replace(base, task=replace(base.task, task_id=f"a-{n:02d}"), lease=None) for n in range(49)
    ]
    failed = make_task("z-failed", TaskState.FAILED, started_ago=600, finished_at=NOW - 60)
    records.append(replace(base, task=failed, lease=None, heartbeat=None))
    snapshot = build_snapshot(NOW, records, default_config(), {}, None)
    for filter_text in ("", "-"):
        ids = [view.task_id for view in ordered(snapshot, SortMode.URGENCY, filter_text)]
        assert ids[0] == "z-failed", filter_text
