"""Table cells show ages at a glance: steps of five seconds in the first minute, then minutes."""

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
        (0, "<5s"),
        (0.4, "<5s"),
        (4.99, "<5s"),
        (5, "5s"),
        (9.9, "5s"),
        (10, "10s"),
        (41, "40s"),
        (44.9, "40s"),
        (45, "45s"),
        (59.9, "55s"),
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
        (-0.5, "<5s"),
        (-7, "5s"),
        (-59.9, "55s"),
        (-60, "1m"),
        (-3599, "59m"),
        (-3600, "1h00m"),
        (-(2 * DAY + 3 * HOUR), "2d03h"),
    ],
)
def test_glance_age(seconds: float, text: str) -> None:
    assert glance_age(seconds) == text


@given(
    st.floats(min_value=60, max_value=200 * DAY) | st.floats(max_value=-60, min_value=-200 * DAY)
)
def test_glance_age_is_format_age_without_the_seconds(seconds: float) -> None:
    """Past the first minute only the trailing seconds go: the table and the detail view never
    disagree."""
    assert format_age(seconds).startswith(glance_age(seconds))


@given(st.floats(min_value=-59.999, max_value=59.999))
def test_the_first_minute_reads_the_step_reached(seconds: float) -> None:
    """Under a minute a cell reads the step of five seconds the age has reached, never more than
    the detail view's seconds, and less by under five."""
    text = glance_age(seconds)
    whole = int(format_age(seconds).removesuffix("s"))
    if text == "<5s":
        assert whole < 5
    else:
        step = int(text.removesuffix("s"))
        assert step % 5 == 0 and step <= whole < step + 5


WIDEST = [glance_age(s) for s in (59, 59 * MINUTE, 48 * HOUR - 1, 99 * DAY + 23 * HOUR)]


@pytest.mark.parametrize("text", WIDEST)
def test_the_widest_ages_fit_their_columns(text: str) -> None:
    assert len(text + "!") <= BY_KEY["heartbeat"].width  # late heartbeat: "47h59m!"
    assert len(f"{text} ago") <= BY_KEY["lease"].width  # expired lease: "47h59m ago"
    # Budget: a 4-cell bar, used/limit and the over-budget mark: "████ 47h59m/45m!".
    for key in ("stage_budget", "task_budget"):
        assert len(f"{'█' * 4} {text}/45m!") <= BY_KEY[key].width
