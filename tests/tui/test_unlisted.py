"""A poll of a store past ``[monitor] read_at_most``: the table, the banner and the wall say
what it counted instead of listing, and what it left unread."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console
from textual.pilot import Pilot

from tests.tui.helpers import make_app, settle
from zombietop.judge.monitor import build_snapshot
from zombietop.tui.healths import all_clear
from zombietop.tui.testing import (
    NOW,
    SampleSource,
    counted_snapshot,
    sample_config,
    sample_snapshot,
    synthetic_records,
)
from zombietop.tui.unlisted_text import FIND_HINT, table_texts, unlisted_texts
from zombietop.tui.widgets.banner import Banner
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.offenders import Offenders, offender_lines
from zombietop.tui.widgets.task_list import TaskList

QUIET = (
    "921,635 healthy and 3,012 queued tasks counted by the store, not listed "
    "(more than 20,000 active; [monitor] read_at_most)"
)
UNREAD = "12,000 more tasks were not read and may need attention: the 20,000 silent longest"


def _table_lines(table: TaskList) -> list[str]:
    """Every line the table draws, the header first, as plain text."""
    return [table.render_line(y).text.rstrip() for y in range(table.size.height)]


def test_main_counted_80x24(snap_compare):
    """The sample fleet with 921,635 healthy and 3,012 queued tasks counted and 12,000 unread:
    the header counts read '… queued 3,013' and '● healthy 921,638' (the quiet ones in), a red
    banner '⚠ 12,000 more tasks were not read ...', and the table
    pressed End: its last row, then a dim line '921,635 healthy and 3,012 queued tasks counted
    by the store, not listed (more than 20,000 active; [monitor] read_at_most)', a dim 'A
    filter (/) searches them too, by task id or stage.' and a bold yellow '⚠ 12,000 more tasks
    were not read and may need attention: the 20,000 silent longest are listed', wrapped at 80
    columns, no cursor on them."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)

    app = make_app(SampleSource([counted_snapshot()]))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_wall_counted_80x24(snap_compare):
    """The wall of the same poll: no 'all clear', the cards with the quiet tasks counted in
    (healthy '921,638' in plain text: six big digits do not fit), the worst offenders, and under them the two lines of the table."""
    app = make_app(SampleSource([counted_snapshot()]), wall=True)
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


async def test_table_ends_with_what_was_not_listed():
    """End shows the lines under the last row; they are not rows: the cursor stays on the last
    task, a filter keeps them, and a mark of every shown row marks tasks only."""
    snapshot = counted_snapshot()
    app = make_app(SampleSource([snapshot]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TaskList)
        last = table.order[-1]
        await pilot.press("end")
        await settle(pilot)
        assert table.selected_task_id == last
        text = " ".join(" ".join(_table_lines(table)).split())
        assert QUIET in text
        assert f"⚠ {UNREAD} are listed" in text
        await pilot.press("down")  # past the last row: nothing to reach
        assert table.selected_task_id == last
        await pilot.press("asterisk")
        await settle(pilot)
        assert table.marked == frozenset(table.order)
        await pilot.press("escape", "slash", *"export", "enter")
        await settle(pilot)
        assert table.row_count == 2
        text = " ".join(" ".join(_table_lines(table)).split())
        assert QUIET in text  # the words are about the store, not about the filter


async def test_click_under_the_rows_selects_nothing():
    """A click on the lines under the rows neither moves the cursor nor opens a task."""
    snapshot = counted_snapshot(sample_snapshot(), unread=0)
    app = make_app(SampleSource([snapshot]))
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TaskList)
        under = table.row_count + 1  # the header, then the rows
        assert QUIET.split(" (")[0] in table.render_line(under).text
        await pilot.click(TaskList, offset=(5, under), times=2)
        await settle(pilot)
        assert table.cursor == 0
        assert app.screen is not None and app.screen.query(TaskList)


async def test_no_unread_no_banner_and_a_poll_that_reads_all_says_nothing():
    """Quiet tasks alone: no banner, no unread line, and 'all clear' still possible; a poll
    that read every task (``counted`` None) draws no line under the rows."""
    calm = build_snapshot(NOW, synthetic_records(3), sample_config(), {})
    assert all_clear(counted_snapshot(calm, unread=0))
    assert not all_clear(counted_snapshot(calm, unread=5))
    app = make_app(SampleSource([counted_snapshot(calm, unread=0), calm]))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one(Banner).has_class("-shown")
        table = app.screen.query_one(TaskList)
        text = " ".join(_table_lines(table))
        assert "counted by the store" in text and "not read" not in text
        header = " ".join(line.plain for line in app.screen.query_one(StatusHeader)._lines)
        assert "all clear" in header
        app.poll()  # type: ignore[attr-defined]
        await settle(pilot)
        assert "counted by the store" not in " ".join(_table_lines(table))


async def test_unread_is_never_all_clear():
    """Every read task healthy but 12,000 unread: the banner says so, the header and the wall
    do not say 'all clear'."""
    calm = build_snapshot(NOW, synthetic_records(3), sample_config(), {})
    app = make_app(SampleSource([counted_snapshot(calm)]))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        banner = app.screen.query_one(Banner)
        assert banner.has_class("-shown")
        assert UNREAD in " ".join(banner._lines)
        header = " ".join(line.plain for line in app.screen.query_one(StatusHeader)._lines)
        assert "all clear" not in header
        await pilot.press("w")
        await settle(pilot)
        offenders = " ".join(line.plain for line in app.screen.query_one(Offenders)._lines)
        assert "all clear" not in offenders
        assert UNREAD in " ".join(offenders.split())


def test_the_wall_list_gives_way_to_the_lines_under_it():
    """On a short wall the worst offenders are cut ('… and more'), never the two lines under
    them."""
    lines = offender_lines(counted_snapshot(), Console(width=80), 80, 6)
    plain = [line.plain for line in lines]
    assert len(plain) == 6
    assert plain[-5] == "… and more"
    assert plain[-4].startswith("921,635 healthy and 3,012 queued tasks")
    assert plain[-2].startswith("⚠ 12,000 more tasks were not read")


def test_the_table_says_a_filter_finds_counted_tasks_and_when_it_holds_too_many():
    """Under the quiet tasks counted, the table (not the wall) says that a filter searches
    them; when more match than are read, that the first by id are listed. Each fits 80
    columns."""
    counted = counted_snapshot().counted
    assert counted is not None
    shown = [text.plain for text in table_texts(counted)]
    assert shown[0].startswith("921,635 healthy") and shown[1] == FIND_HINT
    assert FIND_HINT not in [text.plain for text in unlisted_texts(counted)]  # the wall's
    more = [text.plain for text in table_texts(replace(counted, found=200, found_more=True))]
    assert more[1] == (
        "Over 200 of them match: the first 200 by id are listed; type more of the id."
    )
    assert max(len(FIND_HINT), len(more[1])) <= 80
    none_quiet = replace(counted, quiet={})
    assert FIND_HINT not in [text.plain for text in table_texts(none_quiet)]
