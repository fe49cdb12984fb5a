"""The wall's worst offenders: the most urgent tasks that fit, then how many more."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.tui.healths import GLYPHS
from zombietop.tui.testing import NOW, sample_config, sample_snapshot, synthetic_records
from zombietop.tui.widgets.offenders import ALL_CLEAR, offender_lines
from zombietop.watch.failed_runs import failure_line, open_failures

CONSOLE = Console(width=200)


def _said(snapshot_now: float, views: object) -> list[str]:
    return [f"{GLYPHS[v.health]} {v.verdict.context(snapshot_now)}" for v in views]  # type: ignore[attr-defined]


def _offending(snapshot: Snapshot) -> list[str]:
    """What the wall lists: the stuck tasks as their pages say them, then the open failed runs
    (the sample's backup-0731) as theirs do."""
    stuck = [view for view in snapshot.tasks if view.health.needs_attention]
    failed = [f"{GLYPHS[v.health]} {failure_line(v, None, NOW)}" for v in open_failures(snapshot)]
    return [*_said(NOW, stuck), *failed]


def test_the_most_urgent_that_fit_come_first_and_the_last_line_counts_the_rest() -> None:
    snapshot = sample_snapshot()
    said = _offending(snapshot)
    assert len(said) == 7
    lines = offender_lines(snapshot, CONSOLE, 60, 8)
    assert len(lines) <= 8
    assert all(line.cell_len <= 60 for line in lines)
    firsts = [line.plain for line in lines[:-1] if line.plain[:1] in GLYPHS.values()]
    assert 0 < len(firsts) < 7
    # Each one whole, wrapped, in urgency order, as its page would say it.
    text = " ".join(line.plain.strip() for line in lines[:-1])
    assert text == " ".join(said[: len(firsts)])
    assert lines[-1].plain == f"… and {7 - len(firsts)} more"


def test_every_offender_that_fits_is_listed_without_a_count() -> None:
    snapshot = sample_snapshot()
    lines = offender_lines(snapshot, CONSOLE, 200, 40)
    assert [line.plain for line in lines] == _offending(snapshot)
    assert lines[-1].plain.startswith("✗ backup-0731 failed: exit 3 after 35m00s")


def test_open_failed_runs_alone_are_offenders() -> None:
    """The reported fault: five open failures showed only as a small 'failed 5'."""
    snapshot = sample_snapshot()
    failed = [v for v in snapshot.tasks if v.task_id == "backup-0731"]
    only = replace(snapshot, tasks=tuple(failed))
    lines = offender_lines(only, CONSOLE, 200, 12)
    assert [line.plain for line in lines] == _offending(only)
    assert len(lines) == 1 and lines[0].plain != ALL_CLEAR


def test_a_fleet_with_no_offender_says_so() -> None:
    snapshot = build_snapshot(NOW, synthetic_records(50), sample_config(), {})
    assert not any(view.health.needs_attention for view in snapshot.tasks)
    lines = offender_lines(snapshot, CONSOLE, 200, 12)
    assert [line.plain for line in lines] == [ALL_CLEAR]
