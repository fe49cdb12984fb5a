"""Which tasks the dashboard shows, in which order (tui/task_order.py)."""

from __future__ import annotations

import pytest

from zombietop.tui.task_order import SortMode, ordered
from zombietop.tui.testing import sample_snapshot


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
