"""The keys, for people who already use htop and k9s: j/k move, K kills, ctrl+c quits, the
footer puts on-call's keys first, help says how to move and close, the palette is zombietop's."""

from __future__ import annotations

from dataclasses import replace

from tests.tui.helpers import help_text, make_app, settle
from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.tui.keys import DETAIL_KEYS, KEYS
from zombietop.tui.messages import TaskAction
from zombietop.tui.screens.confirm import ConfirmScreen
from zombietop.tui.screens.detail import DetailScreen
from zombietop.tui.screens.help import HelpScreen
from zombietop.tui.screens.wall import WallScreen
from zombietop.tui.testing import NOW, SampleSource, sample_config, sample_records, sample_samples
from zombietop.tui.widgets.task_list import TaskList


async def test_j_and_k_move_and_capital_k_kills() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.main.query_one(TaskList)
        await pilot.press("j", "j", "down")
        assert table.cursor == 3
        await pilot.press("k", "up")
        assert table.cursor == 1
        assert not isinstance(app.screen, ConfirmScreen)  # k moved; it asked for no kill
        await pilot.press("K")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.request.task_id == "export-2031"


async def test_ctrl_c_quits_from_the_table_a_dialog_and_the_filter_box() -> None:
    for keys in ((), ("K",), ("slash", "x")):
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press(*keys)
            await settle(pilot)
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert not app.is_running, keys
        assert app.return_code == 0


def _footer_keys(app) -> list[str]:  # type: ignore[no-untyped-def]
    """The keys the footer shows, in its order."""
    return [
        key
        for key, active in app.screen.active_bindings.items()
        if active.binding.show and active.enabled
    ]


async def test_the_footer_leads_with_what_on_call_needs_first() -> None:
    """DESIGN.md: open, ack, resume, discard, kill, help; then the rest."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = _footer_keys(app)
        assert keys[:6] == ["enter", "a", "r", "d", "K", "question_mark"]
        assert keys[-1] == "q"


async def test_help_lists_the_movement_keys_and_how_to_close_it() -> None:
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        text = help_text(screen)
        for words in ("j ↓", "k ↑", "PgDn", "Home", "Close this help", "ctrl+c", "⚑acked"):
            assert words in text, words
        assert "Esc" in str(screen.query_one("VerticalScroll").border_subtitle)
        for close in ("escape", "q", "question_mark"):
            await pilot.press(close)
            await settle(pilot)
            assert not isinstance(app.screen, HelpScreen), close
            await pilot.press("question_mark")
            await settle(pilot)


async def test_the_palette_offers_zombietops_commands_and_not_textuals() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        titles = app.palette_titles()
        assert {"Ack", "Kill", "Wall", "Help", "Quit", "Theme"} <= set(titles)
        assert not {"Keys", "Maximize", "Minimize", "Screenshot"} & set(titles)
        descriptions = [command.help for command in app.get_system_commands(app.main)]
        assert "Quit the application as soon as possible" not in descriptions


async def test_the_wall_view_and_back() -> None:
    """w shows the wall over the dashboard; its palette and w or Esc come back."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for back in ("w", "escape"):
            await pilot.press("w")
            await settle(pilot)
            wall = app.screen
            assert isinstance(wall, WallScreen)
            assert app.palette_titles(wall) == ["Theme", "Table", "Quit"]
            await pilot.press(back)
            await settle(pilot)
            assert app.screen is app.main


def _two_spinning(beat_ages: tuple[float, float]) -> Snapshot:
    """crawl-0042, flat for 45 minutes, and crawl-0043, flat for 40; each beat as told."""
    records = []
    for record in sample_records():
        if record.task.task_id == "crawl-0042":
            for task_id, flat, age in zip(
                ("crawl-0042", "crawl-0043"), (45 * 60, 40 * 60), beat_ages, strict=True
            ):
                assert record.heartbeat is not None
                beat = replace(
                    record.heartbeat,
                    task_id=task_id,
                    written_at=NOW - age,
                    progress_changed_at=NOW - flat,
                )
                task = replace(record.task, task_id=task_id)
                records.append(replace(record, task=task, heartbeat=beat))
        else:
            records.append(record)
    return build_snapshot(NOW, records, sample_config(), sample_samples())


async def test_spinning_rows_keep_their_place_as_they_beat() -> None:
    """Two spinning tasks beat in turn: the one flat longest stays first, so the same keys
    (Home, then down to the first spinning row) open the same task poll after poll."""
    snapshots = [_two_spinning((1, 3)), _two_spinning((3, 1)), _two_spinning((1, 3))]
    app = make_app(SampleSource(snapshots))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        opened = []
        for poll in range(3):
            if poll:
                app.poll()
                await settle(pilot)
            await pilot.press("home", "j", "j", "j", "enter")
            await settle(pilot)
            assert isinstance(app.screen, DetailScreen)
            opened.append(app.screen.task_id)
            await pilot.press("escape")
            await settle(pilot)
        assert opened == ["crawl-0042"] * 3


def test_every_task_action_is_a_key_and_each_action_key_is_a_task_action() -> None:
    """A key that acts on a task asks the app by ``TaskAction``: the key table and the enum
    name the same actions, so a new action key cannot be forgotten in the app. The detail
    view's own keys count too (``n``, a note)."""
    keys = (*KEYS, *DETAIL_KEYS)
    actions = {key.action for key in keys}
    assert {str(action) for action in TaskAction} <= actions
    assert all(key.action in set(TaskAction) for key in keys if key.read_only_hides)
