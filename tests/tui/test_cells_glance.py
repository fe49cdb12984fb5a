"""Table cells show ages at a glance: seconds only in the first minute, then once a minute."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zombietop.durations import format_age
from zombietop.tui.cells import BY_KEY, glance_age

MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.4, "0s"),
        (41, "41s"),
        (59.9, "59s"),
        (60, "1m"),
        (60.1, "1m"),
        (119.9, "1m"),
        (208, "3m"),  # format_age: 3m28s
        (3599, "59m"),
        (3599.9, "59m"),
        (3600, "1h00m"),
        (3659, "1h00m"),
        (3660, "1h01m"),
        (4 * HOUR + 12 * MINUTE + 59, "4h12m"),
        (48 * HOUR - 1, "47h59m"),
        (48 * HOUR, "2d00h"),
        (2 * DAY + 3 * HOUR + 59 * MINUTE, "2d03h"),
        (99 * DAY + 23 * HOUR, "99d23h"),
        # Lease countdowns past zero come in negative; the cell adds "ago".
        (-0.5, "0s"),
        (-59.9, "59s"),
        (-60, "1m"),
        (-3599, "59m"),
        (-3600, "1h00m"),
        (-(2 * DAY + 3 * HOUR), "2d03h"),
    ],
)
def test_glance_age(seconds: float, text: str) -> None:
    assert glance_age(seconds) == text


@given(st.floats(min_value=-200 * DAY, max_value=200 * DAY))
def test_glance_age_is_format_age_without_the_seconds(seconds: float) -> None:
    """Only the trailing seconds go: the table and the detail view never disagree."""
    assert format_age(seconds).startswith(glance_age(seconds))


WIDEST = [glance_age(s) for s in (59, 59 * MINUTE, 48 * HOUR - 1, 99 * DAY + 23 * HOUR)]


@pytest.mark.parametrize("text", WIDEST)
def test_the_widest_ages_fit_their_columns(text: str) -> None:
    assert len(text + "!") <= BY_KEY["heartbeat"].width  # late heartbeat: "47h59m!"
    assert len(f"{text} ago") <= BY_KEY["lease"].width  # expired lease: "47h59m ago"
    # Budget: a 4-cell bar, used/limit and the over-budget mark: "████ 47h59m/45m!".
    for key in ("stage_budget", "task_budget"):
        assert len(f"{'█' * 4} {text}/45m!") <= BY_KEY[key].width
