"""A row reads the same until ``row_changes`` says it may not: the table skips it until then.

The table recomputes a row in view only when its view or note changed or the moment
``row_changes`` gave has come, so that moment must never be late: at any instant before it, every
cell reads exactly as it did. Checked over the sample fleet (every health, budgets, kills, ages
in seconds, minutes, hours and days) at random moments.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from zombietop.judge.monitor import build_snapshot
from zombietop.tui.cells import (
    COLUMNS,
    glance_age,
    glance_changes,
    row_cells,
    row_changes,
    same_cell,
)
from zombietop.tui.testing import NOW, sample_config, sample_records, sample_samples

RECORDS = sample_records(kill_pending={"thumbs-7781"})
FAR = 3 * 86400.0
"""How far past ``now`` to look when a row never changes."""


@settings(max_examples=300, deadline=None)
@given(
    offset=st.floats(min_value=-600, max_value=200_000),
    fraction=st.floats(min_value=0, max_value=1, exclude_max=True),
)
def test_a_row_reads_the_same_until_its_change(offset: float, fraction: float) -> None:
    now = NOW + offset
    snapshot = build_snapshot(now, RECORDS, sample_config(), sample_samples())
    for view in snapshot.tasks:
        until = row_changes(view, now, COLUMNS)
        assert until > now - 1e-3, view.task_id  # never in the past by more than rounding
        if until <= now:
            continue  # it changes at once: the table redoes it at every poll
        later = now + fraction * (min(until, now + FAR) - now)
        at_later, at_now = row_cells(view, later, COLUMNS), row_cells(view, now, COLUMNS)
        assert all(map(same_cell, at_later, at_now)), (view.task_id, later - now)


def test_rows_of_minutes_are_left_alone_for_most_of_a_minute() -> None:
    """The point of it: a stalled fleet reads in minutes, so its rows are not redone each poll."""
    snapshot = build_snapshot(NOW, RECORDS, sample_config(), sample_samples())
    waits = {view.task_id: row_changes(view, NOW, COLUMNS) - NOW for view in snapshot.tasks}
    assert max(waits.values()) > 20
    assert min(waits.values()) >= 0 or math.isclose(min(waits.values()), 0, abs_tol=1e-3)


@given(
    seconds=st.floats(min_value=-200_000, max_value=200_000),
    rising=st.booleans(),
    fraction=st.floats(min_value=0, max_value=1, exclude_max=True),
)
def test_glance_changes_is_never_late(seconds: float, rising: bool, fraction: float) -> None:
    until = glance_changes(0.0, seconds, rising)
    elapsed = fraction * until if until > 0 else 0.0
    moved = seconds + elapsed if rising else seconds - elapsed
    assert glance_age(moved) == glance_age(seconds)
