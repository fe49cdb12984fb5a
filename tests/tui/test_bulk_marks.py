"""Marks and bulk actions with Pilot: space marks a row, * every row the filter shows, esc
clears; the marks follow their tasks through a re-sort and a poll; a A n r d K act on every
marked task with one dialog, each task on its own, and one notification with the counts."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.widgets import Button, Input, RadioButton, Static

from tests.tui.helpers import make_app, notified, settle
from zombietop.actions import ActionKind, ActionRequest
from zombietop.model import Matcher
from zombietop.tui.app import ZombietopApp
from zombietop.tui.screens.bulk import (
    BulkAckScreen,
    BulkConfirmScreen,
    BulkNoteScreen,
    BulkSilenceScreen,
)
from zombietop.tui.screens.detail import DetailScreen
from zombietop.tui.screens.oncall import NoteScreen
from zombietop.tui.testing import RecordingDesk, RecordingExecutor, SampleSource, sample_snapshot
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.task_list import MARKED_GLYPH, TaskList

# The sample fleet's first rows, most urgent first, and their lease tokens.
FIRST_THREE = ["etl-0417", "export-2031", "thumbs-7781"]


def header_line(app: ZombietopApp) -> str:
    return app.main.query_one(StatusHeader).render_line(0).text


def row_text(table: TaskList, task_id: str) -> str:
    index = table.index_of(task_id)
    assert index is not None
    return table.render_line(index + 1 - round(table.scroll_y)).text


async def test_space_marks_and_unmarks_the_row_and_the_header_counts() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.main.query_one(TaskList)
        await pilot.press("space", "down", "space")
        await settle(pilot)
        assert table.marked == {"etl-0417", "export-2031"}
        assert "2 marked" in header_line(app)
        assert row_text(table, "export-2031").startswith(MARKED_GLYPH)
        assert not row_text(table, "thumbs-7781").startswith(MARKED_GLYPH)
        await pilot.press("space")
        await settle(pilot)
        assert table.marked == {"etl-0417"}
        assert "1 marked" in header_line(app)
        assert not row_text(table, "export-2031").startswith(MARKED_GLYPH)


async def test_star_marks_every_row_the_filter_shows_and_esc_clears_then_the_filter() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"export", "enter")
        await settle(pilot)
        shown = {view.task_id for view in app.rows.views}
        assert shown == {"export-2031", "export-2029"}
        await pilot.press("asterisk")
        await settle(pilot)
        assert app.bulk.marked == shown
        assert "2 marked" in header_line(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.bulk.marked == frozenset()
        assert app.filter_text == "export"  # the first esc clears the marks only
        await pilot.press("escape")
        await settle(pilot)
        assert app.filter_text == ""


async def test_marks_follow_their_tasks_across_a_re_sort() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.main.query_one(TaskList)
        await pilot.press("down", "down", "space")  # thumbs-7781, third by urgency
        before = table.index_of("thumbs-7781")
        await pilot.press("s", "s", "s")  # by task id: thumbs-7781 moves near the end
        await settle(pilot)
        assert table.index_of("thumbs-7781") != before
        assert table.marked == {"thumbs-7781"}
        assert row_text(table, "thumbs-7781").startswith(MARKED_GLYPH)
        marked_rows = [
            task_id for task_id in table.order if row_text(table, task_id).startswith(MARKED_GLYPH)
        ]
        assert marked_rows == ["thumbs-7781"]


async def test_a_marked_task_that_leaves_loses_its_mark_and_the_count_says_so() -> None:
    first = sample_snapshot()
    second = replace(first, tasks=tuple(v for v in first.tasks if v.task_id != "thumbs-7781"))
    app = make_app(SampleSource([first, second]))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        said = notified(app)
        await pilot.press("space", "down", "down", "space")
        assert app.bulk.marked == {"etl-0417", "thumbs-7781"}
        app.poll()
        await settle(pilot)
        assert app.bulk.marked == {"etl-0417"}
        assert "1 marked" in header_line(app)
        assert any("1 marked task left the dashboard" in line for line in said)


@pytest.mark.parametrize(
    ("key", "kind"), [("r", ActionKind.RESUME), ("d", ActionKind.DISCARD), ("K", ActionKind.KILL)]
)
async def test_one_confirm_then_each_marked_task_through_the_executor(
    key: str, kind: ActionKind
) -> None:
    executor = RecordingExecutor()
    app = make_app(executor=executor)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        said = notified(app)
        await pilot.press("space", "down", "space", "down", "space", key)
        await settle(pilot)
        assert isinstance(app.screen, BulkConfirmScreen)
        assert app.screen.focused is app.screen.query_one("#cancel", Button)
        summary = str(app.screen.query_one("#summary", Static).render())
        assert "3 tasks: 1 ✖ dead, 1 ◌ reclaimable, 1 ■ stalled" in summary
        assert "etl-0417, export-2031, thumbs-7781" in summary
        assert executor.requests == []
        await pilot.press("y")
        await settle(pilot)
        assert app.bulk.marked == frozenset()
    tokens = {view.task_id: view.token for view in sample_snapshot().tasks}
    assert executor.requests == [
        ActionRequest(kind=kind, task_id=t, expected_token=tokens[t], actor="alice@laptop")
        for t in FIRST_THREE
    ]
    word = RecordingExecutor.OUTCOMES[kind][0].replace("_", " ")
    (line,) = [line for line in said if line.startswith(f"{kind} of")]
    assert line == f"{kind} of 3 tasks: 3 {word}"


async def test_the_confirm_names_what_will_not_be_done_and_why() -> None:
    """A discard of every row: the succeeded and the discarded task are not asked, each with
    the store's own reason."""
    executor = RecordingExecutor()
    app = make_app(executor=executor)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await pilot.press("asterisk", "d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BulkConfirmScreen)
        summary = str(screen.query_one("#summary", Static).render())
        assert "14 tasks:" in summary and "and 9 more" in summary
        skipped = "\n".join(str(s.render()) for s in screen.query("#skipped Static"))
        assert "2 tasks will not be discarded:" in skipped
        assert "backup-0730 is succeeded; there is nothing to discard" in skipped
        assert "export-2029 is discarded; there is nothing to discard" in skipped
        assert str(screen.query_one("#confirm", Button).label) == "Discard 12 (y)"
        await pilot.press("y")
        await settle(pilot)
    asked = {request.task_id for request in executor.requests}
    assert len(asked) == 12 and not asked & {"backup-0730", "export-2029"}


async def test_cancel_asks_nothing_and_keeps_the_marks() -> None:
    executor = RecordingExecutor()
    app = make_app(executor=executor)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("space", "K", "n")
        await settle(pilot)
        assert app.bulk.marked == {"etl-0417"}
    assert executor.requests == []


async def test_a_acks_every_marked_task_with_one_reason() -> None:
    desk = RecordingDesk()
    app = make_app(desk=desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        said = notified(app)
        await pilot.press("space", "down", "down", "space", "a")
        await settle(pilot)
        assert isinstance(app.screen, BulkAckScreen)
        await pilot.press(*"warehouse down", "enter")
        await settle(pilot)
    assert [(a.task_id, a.reason) for a in desk.acks] == [
        ("etl-0417", "warehouse down"),
        ("thumbs-7781", "warehouse down"),
    ]
    assert "ack of 2 tasks: 2 acked" in said


async def test_shift_a_silences_each_step_type_of_the_marked_tasks_once() -> None:
    desk = RecordingDesk()
    app = make_app(desk=desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("space", "down", "space", "down", "space", "A")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BulkSilenceScreen)
        screen.query_one("#step_type", RadioButton).value = True
        screen.query_one("#reason", Input).focus()
        await pilot.press(*"db failover", "enter")
        await settle(pilot)
    types = list(dict.fromkeys(v.task.step_type for v in sample_snapshot().tasks[:3]))
    assert [(s.matcher, s.pattern) for s in desk.silences] == [
        (Matcher.STEP_TYPE, step_type) for step_type in types
    ]


async def test_n_notes_every_marked_task_and_without_marks_the_row() -> None:
    desk = RecordingDesk()
    app = make_app(desk=desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("space", "down", "space", "n")
        await settle(pilot)
        assert isinstance(app.screen, BulkNoteScreen)
        await pilot.press(*"restarted the db", "enter")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, NoteScreen)  # no marks left: the row under the cursor
        assert not isinstance(app.screen, BulkNoteScreen)
        await pilot.press(*"and this one", "enter")
        await settle(pilot)
    assert [(n.task_id, n.text) for n in desk.notes] == [
        ("etl-0417", "restarted the db"),
        ("export-2031", "restarted the db"),
        ("export-2031", "and this one"),
    ]


async def test_a_detail_screen_acts_on_its_own_task_whatever_is_marked() -> None:
    executor = RecordingExecutor()
    app = make_app(executor=executor)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("space", "down", "space", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("K")
        await settle(pilot)
        assert not isinstance(app.screen, BulkConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
    assert [r.task_id for r in executor.requests] == ["export-2031"]


async def test_read_only_marks_but_acts_on_nothing() -> None:
    app = make_app(read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("space", "K", "a", "n")
        await settle(pilot)
        assert app.bulk.marked == {"etl-0417"}
        assert app.screen is app.main


async def test_a_click_selects_a_row_and_a_double_click_opens_it() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.main.query_one(TaskList)
        # Line 0 is the table's header: line 3 is the third row.
        await pilot.click(TaskList, offset=(20, 3))
        await settle(pilot)
        assert table.selected_task_id == "thumbs-7781"
        assert app.screen is app.main
        await pilot.click(TaskList, offset=(20, 2))
        await settle(pilot)
        assert (table.selected_task_id, app.screen) == ("export-2031", app.main)
        await pilot.double_click(TaskList, offset=(20, 3))
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.task_id == "thumbs-7781"
