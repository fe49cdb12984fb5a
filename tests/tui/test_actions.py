"""Keys reach the executor with the task and token seen when asked; read-only refuses them."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.command import CommandList, CommandPalette
from textual.widgets import Button

from tests.tui.helpers import help_text, make_app, notified, settle
from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.judge.monitor import build_snapshot
from zombietop.model import TaskState
from zombietop.tui.keys import KEYS, display_key
from zombietop.tui.screens.confirm import ConfirmScreen
from zombietop.tui.screens.help import HelpScreen
from zombietop.tui.testing import (
    NOW,
    RecordingExecutor,
    SampleSource,
    sample_config,
    sample_records,
    sample_samples,
    sample_snapshot,
)
from zombietop.tui.widgets.task_list import TaskList

KEY_FOR = {ActionKind.RESUME: "r", ActionKind.DISCARD: "d", ActionKind.KILL: "K"}


@pytest.mark.parametrize("kind", list(ActionKind))
async def test_action_key_reaches_executor_with_captured_task_and_token(kind: ActionKind) -> None:
    executor = RecordingExecutor()
    app = make_app(executor=executor)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down")  # export-2031, token 7
        await pilot.press(KEY_FOR[kind])
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.focused is app.screen.query_one("#cancel", Button)
        assert executor.requests == []
        await pilot.press("y")
        await settle(pilot)
    assert executor.requests == [
        ActionRequest(kind=kind, task_id="export-2031", expected_token=7, actor="alice@laptop")
    ]


async def test_cancel_is_the_default_and_sends_nothing() -> None:
    executor = RecordingExecutor()
    app = make_app(executor=executor)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("K", "enter")  # Enter presses the focused button: Cancel
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    assert executor.requests == []


async def test_every_outcome_is_a_notification() -> None:
    executor = RecordingExecutor()
    app = make_app(executor=executor)
    messages = notified(app)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("K", "y")
        await settle(pilot)
        assert any("kill etl-0417: SIGTERM sent" in m for m in messages)
        # ... and the row says so beside the id, keeping its health, until the store shows
        # the pending kill.
        table = app.main.query_one(TaskList)
        health, task = table.cells_of("etl-0417")[:2]
        assert health.plain == "✖ dead"
        assert task.plain == "etl-0417 ↯term sent"
        # A pending kill completed by a later poll is reported too.
        request = ActionRequest(
            kind=ActionKind.KILL, task_id="etl-0417", expected_token=3, actor="x"
        )
        executor.pending_outcomes = [
            ActionOutcome(
                request=request,
                outcome=Outcome.ESCALATED,
                message="still alive after 30s: SIGKILL sent",
            )
        ]
        app.poll()
        await settle(pilot)
        assert any("SIGKILL sent" in m for m in messages)
        assert executor.completions >= 2


async def test_confirmation_keeps_its_task_after_a_resort() -> None:
    """The cursor follows export-2031 when rows move, and the open dialog still targets it."""
    first = sample_snapshot()
    # Next poll: export-2031 was renewed by someone (token 8) and is healthy again, so it
    # sorts far down; the row that was second is now thumbs-7781.
    records = []
    for record in sample_records():
        if record.task.task_id == "export-2031":
            assert record.lease is not None and record.heartbeat is not None
            record = replace(
                record,
                lease=replace(record.lease, token=8, expires_at=NOW + 200),
                heartbeat=replace(
                    record.heartbeat,
                    written_at=NOW - 2,
                    progress_changed_at=NOW - 2,
                    stage_started_at=NOW - 60,
                ),
            )
        records.append(record)
    second = build_snapshot(NOW, records, sample_config(), sample_samples())
    source = SampleSource([first, second])
    executor = RecordingExecutor()
    app = make_app(source, executor=executor)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TaskList)
        await pilot.press("down")
        assert table.selected_task_id == "export-2031"
        assert table.cursor == 1
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        app.poll()  # the re-sort happens under the open dialog
        await settle(pilot)
        assert table.index_of("export-2031") > 1
        assert table.selected_task_id == "export-2031"
        await pilot.press("y")
        await settle(pilot)
    assert executor.requests == [
        ActionRequest(
            kind=ActionKind.DISCARD, task_id="export-2031", expected_token=7, actor="alice@laptop"
        )
    ]


async def test_a_cursor_on_the_first_row_stays_on_the_first_row() -> None:
    """Left on the most urgent task, the cursor keeps showing the most urgent task: when
    etl-0417 finishes and sorts last, the first row (and the view) stays at the top."""
    records = []
    for record in sample_records():
        if record.task.task_id == "etl-0417":
            finished = replace(record.task, state=TaskState.SUCCEEDED, finished_at=NOW - 1)
            record = replace(record, task=finished)
        records.append(record)
    recovered = build_snapshot(NOW, records, sample_config(), sample_samples())
    assert recovered.tasks[0].task_id != "etl-0417"
    source = SampleSource([sample_snapshot(), recovered])
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TaskList)
        assert table.selected_task_id == "etl-0417"
        app.poll()
        await settle(pilot)
        assert table.index_of("etl-0417") > 0
        assert table.cursor == 0
        assert table.selected_task_id == recovered.tasks[0].task_id
        assert table.scroll_y == 0


MUTATING = [key for key in KEYS if key.mutates is not None]


@pytest.mark.parametrize("key", MUTATING, ids=[key.action for key in MUTATING])
@pytest.mark.parametrize("how", ["read-only store", "read-only executor", "no executor"])
async def test_read_only_refuses_and_hides_every_action(key, how: str) -> None:
    executor = RecordingExecutor(read_only=how == "read-only executor")
    if how == "read-only store":
        app = make_app(SampleSource(read_only=True), executor=executor)
    elif how == "no executor":
        app = make_app(read_only=True)
        executor = RecordingExecutor()
    else:
        app = make_app(executor=executor)
    assert app.read_only
    messages = notified(app)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        # Absent from the footer (bindings the screen disables are not shown) ...
        shown = {
            binding.action for _, binding, enabled, _ in screen.active_bindings.values() if enabled
        }
        assert key.action not in shown
        assert {"filter", "cycle_sort", "toggle_pause"} <= shown  # the others are still there
        # ... from the command palette ...
        titles = app.palette_titles()
        assert key.label not in titles
        assert "Filter" in titles
        # ... and from help.
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        shown_help = help_text(app.screen)
        assert key.description not in shown_help
        assert "Filter rows by task id" in shown_help  # the others are still there
        await pilot.press("escape")
        # The key itself does nothing, and asking the app directly is refused before the executor.
        await pilot.press(display_key(key.key))
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert key.mutates is not None
        app.request_action(key.mutates, "export-2031")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("read-only" in message for message in messages)
    assert executor.requests == []


async def test_writable_palette_and_help_offer_every_action() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        titles = app.palette_titles()
        for key in KEYS:
            if key.action != "quit":
                assert key.label in titles
        assert "Quit" in titles


async def test_the_palette_shows_each_key_as_typed_and_keeps_running() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"filter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        hits = [str(option.prompt) for option in app.screen.query_one(CommandList).options]
        assert any("Filter rows by task id, stage or health [/]" in hit for hit in hits), hits
        await pilot.press("escape")
        assert app.is_running


async def test_wall_has_no_actions_no_cursor_no_palette() -> None:
    executor = RecordingExecutor()
    app = make_app(executor=executor, wall=True)
    assert app.read_only and app.executor is None
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not app.use_command_palette
        assert not app.screen.query(TaskList)
        await pilot.press("ctrl+p", "r", "d", "K", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.screen is app.main
    assert executor.requests == []


async def test_pause_stops_polling_and_says_so() -> None:
    source = SampleSource()
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        polls = source.polls
        await pilot.press("p")
        app._tick()
        await settle(pilot)
        assert source.polls == polls
        assert "PAUSED" in str(app.main.query_one("Banner").render())
        await pilot.press("p")
        await settle(pilot)
        assert source.polls == polls + 1
        assert not app.main.query_one("Banner").has_class("-shown")


async def test_sort_cycle_keeps_the_cursor_on_its_task() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.main.query_one(TaskList)
        await pilot.press("down", "down")
        assert table.selected_task_id == "thumbs-7781"
        orders = []
        for _ in range(4):  # oldest heartbeat, least progress, task id, back to urgency
            await pilot.press("s")
            await settle(pilot)
            orders.append(table.order)
            assert table.selected_task_id == "thumbs-7781"
        assert orders[0][0] == "export-2031"
        assert orders[2][0] == "backup-0730"
        assert len({tuple(order) for order in orders}) == 4
        assert table.selected_task_id == "thumbs-7781"


def test_kill_row_counts_down_then_shows_the_outcome() -> None:
    from zombietop.model import PendingKill
    from zombietop.tui.cells import BY_KEY, task_column

    health = BY_KEY["health"]
    snapshot = sample_snapshot(kill_pending={"thumbs-7781"})
    view = snapshot.by_id()["thumbs-7781"]
    assert health.render(view, NOW, None).plain == "↯ TERM 23s"
    assert health.render(view, NOW + 20, None).plain == "↯ TERM 3s"
    assert view.pending_kill is not None
    done: PendingKill = replace(view.pending_kill, outcome="exited", finished_at=NOW + 5)
    finished = replace(view, pending_kill=done)
    # The outcome goes beside the id for a minute; the health word stays.
    assert health.render(finished, NOW + 6, None).plain == "■ stalled"
    task = task_column(30)
    assert task.render(finished, NOW + 6, None).plain == "thumbs-7781 ↯exited"
    assert task.render(finished, NOW + 600, None).plain == "thumbs-7781"
    # Where the words do not fit, the glyph does; the id is never cut for a mark.
    assert task_column(18).render(finished, NOW + 6, None).plain == "thumbs-7781 ↯"


async def test_q_quits_from_the_main_screen() -> None:
    """The footer says q quits; it must, on the screen where the footer says so."""
    app = make_app(SampleSource())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0
        assert not app.is_running
