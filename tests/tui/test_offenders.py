"""The wall's worst offenders: the most urgent tasks that fit, then how many more."""

from __future__ import annotations

from rich.console import Console

from zombietop.monitor import build_snapshot
from zombietop.tui.healths import GLYPHS
from zombietop.tui.testing import NOW, sample_config, sample_snapshot, synthetic_records
from zombietop.tui.widgets.offenders import ALL_CLEAR, offender_lines

CONSOLE = Console(width=200)


def _said(snapshot_now: float, views: object) -> list[str]:
    return [f"{GLYPHS[v.health]} {v.verdict.context(snapshot_now)}" for v in views]  # type: ignore[attr-defined]


def test_the_most_urgent_that_fit_come_first_and_the_last_line_counts_the_rest() -> None:
    snapshot = sample_snapshot()
    offending = [view for view in snapshot.tasks if view.health.needs_attention]
    assert len(offending) == 6
    lines = offender_lines(snapshot, CONSOLE, 60, 8)
    assert len(lines) <= 8
    assert all(line.cell_len <= 60 for line in lines)
    firsts = [line.plain for line in lines[:-1] if line.plain[:1] in GLYPHS.values()]
    said = _said(NOW, offending)
    assert 0 < len(firsts) < 6
    # Each one whole, wrapped, in urgency order, as its page would say it.
    text = " ".join(line.plain.strip() for line in lines[:-1])
    assert text == " ".join(said[: len(firsts)])
    assert lines[-1].plain == f"… and {6 - len(firsts)} more"


def test_every_offender_that_fits_is_listed_without_a_count() -> None:
    snapshot = sample_snapshot()
    offending = [view for view in snapshot.tasks if view.health.needs_attention]
    lines = offender_lines(snapshot, CONSOLE, 200, 40)
    assert [line.plain for line in lines] == _said(NOW, offending)


def test_a_fleet_with_no_offender_says_so() -> None:
    snapshot = build_snapshot(NOW, synthetic_records(50), sample_config(), {})
    assert not any(view.health.needs_attention for view in snapshot.tasks)
    lines = offender_lines(snapshot, CONSOLE, 200, 12)
    assert [line.plain for line in lines] == [ALL_CLEAR]
