"""The workers screen (W): what the tasks run on, a worker gone with tasks on it first."""

from __future__ import annotations

from dataclasses import replace

from textual.pilot import Pilot
from textual.widgets import Static

from tests.tui.helpers import make_app, settle
from zombietop.sources import EngineWorker
from zombietop.tui.screens.dashboard import DashboardScreen
from zombietop.tui.screens.workers import WorkersScreen
from zombietop.tui.testing import NOW, OSC, SampleSource
from zombietop.tui.testing.workers import workers_snapshot


def source(snapshot=None) -> SampleSource:
    return SampleSource([snapshot or workers_snapshot()])


def shown(screen: WorkersScreen) -> str:
    return "\n".join(
        static.render_line(y).text
        for static in screen.query(Static)
        for y in range(static.size.height)
    )


async def open_workers(pilot: Pilot[None]) -> WorkersScreen:
    await settle(pilot)
    await pilot.press("W")
    await settle(pilot)
    assert isinstance(pilot.app.screen, WorkersScreen)
    return pilot.app.screen


async def test_shift_w_lists_the_workers_a_gone_one_with_tasks_first() -> None:
    app = make_app(source())
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_workers(pilot)
        assert [w.name for w in screen.listed][:2] == ["agent@batch-01", "celery@batch-04"]
        text = shown(screen)
        assert "6 workers: 2 GONE holding 10 tasks, 3 live, 1 gone" in text
        assert "✖ GONE" in text and "● live" in text and "○ gone" in text  # words, not colour
        assert "no beat for 5m00s" in text
        assert "3121" in text and "12s ago" in text


async def test_escape_and_shift_w_go_back() -> None:
    app = make_app(source())
    async with app.run_test(size=(120, 30)) as pilot:
        await open_workers(pilot)
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)
        await open_workers(pilot)
        await pilot.press("W")
        assert isinstance(app.screen, DashboardScreen)


async def test_the_list_follows_each_poll() -> None:
    later = replace(workers_snapshot(), workers=(), agents=())
    app = make_app(SampleSource([workers_snapshot(), later]))
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_workers(pilot)  # opening it polls: the second snapshot
        assert screen.listed == ()
        assert "No worker is known" in shown(screen)


async def test_read_only_has_it_too_and_the_palette_names_it() -> None:
    app = make_app(source(), read_only=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "Workers" in app.palette_titles()
        await open_workers(pilot)


async def test_a_workers_names_are_shown_escaped() -> None:
    evil = EngineWorker(
        name=f"w{OSC}1",
        kind="rq",
        source="rq+redis://x/0",
        host=f"host\u202e{OSC}",
        pid=7,
        last_beat=NOW - 1,
        holds=1,
        gone=True,
        why=f"gone{OSC}",
    )
    app = make_app(source(replace(workers_snapshot(), workers=(evil,), agents=())))
    async with app.run_test(size=(120, 30)) as pilot:
        text = shown(await open_workers(pilot))
        assert "w\\x1b]2;owned\\x071" in text and "host\\u202e\\x1b]2;owned\\x07" in text
        assert "\x1b" not in text and "\u202e" not in text


async def test_a_source_that_cannot_be_read_is_named() -> None:
    snapshot = replace(workers_snapshot(), source_errors={"rq": "source rq: cannot read Redis"})
    app = make_app(source(snapshot))
    async with app.run_test(size=(120, 30)) as pilot:
        text = shown(await open_workers(pilot))
        assert "source rq: cannot read Redis (its workers are not listed)" in text


async def test_a_source_read_without_its_workers_says_so() -> None:
    """Airflow's tasks were read, its job table not: the note says why no scheduler shows."""
    note = "source airflow: its workers are not listed: cannot read its jobs (no such table: job)"
    snapshot = replace(workers_snapshot(), source_notes={"airflow": note})
    app = make_app(source(snapshot))
    async with app.run_test(size=(120, 30)) as pilot:
        text = shown(await open_workers(pilot))
        assert "its workers are not listed: cannot read its jobs" in " ".join(text.split())


async def _open(pilot: Pilot[None]) -> None:
    await open_workers(pilot)


def test_workers_80x24(snap_compare):
    """W on the sample fleet: '6 workers: 2 GONE holding 10 tasks, 3 live, 1 gone' in bold red
    then plain; first agent@batch-01 '✖ GONE' with 'no beat for 5m00s' under it, pid 812, 8
    tasks; then celery@batch-04 '✖ GONE' (no answer ... for 11m00s), 2 tasks; then the live ones
    '● live', busiest first (celery@batch-03 3, rq-worker-a1 1 pid 3121, agent@batch-02 0);
    last rq-worker-b7 '○ gone' (its hash expired), no host, no pid, no beat."""
    assert snap_compare(make_app(source()), terminal_size=(80, 24), run_before=_open)


def test_workers_160x48(snap_compare):
    """The same list at 160x48, each row on one line, the reason a worker is gone under its
    name; the footer reads 'esc Back'."""
    assert snap_compare(make_app(source()), terminal_size=(160, 48), run_before=_open)
