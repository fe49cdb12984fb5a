"""Building apps over the sample fleet, for snapshot and Pilot tests."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input

from zombietop.clock import FakeClock
from zombietop.tui.app import ZombietopApp
from zombietop.tui.testing import NOW, RecordingDesk, RecordingExecutor, SampleSource
from zombietop.tui.textual_compat import install_cropped_updates
from zombietop.tui.widgets.task_list import TaskList


def make_app(
    source: SampleSource | None = None,
    *,
    executor: RecordingExecutor | None = None,
    read_only: bool = False,
    wall: bool = False,
    clock: FakeClock | None = None,
    desk: RecordingDesk | None = None,
) -> ZombietopApp:
    # As `zombietop` runs it (tui/launch.py): the snapshots and repaint tests see its updates.
    install_cropped_updates()
    source = source or SampleSource(read_only=read_only)
    if executor is None and not read_only:
        executor = RecordingExecutor()
    if desk is None and not read_only:
        desk = RecordingDesk()
    return ZombietopApp(
        source,
        executor=executor,
        clock=clock or FakeClock(NOW),
        refresh=3600,  # tests poll by hand; the timer never fires during a test
        wall=wall,
        store_label="/var/lib/zombietop/zombietop.db",
        actor="alice@laptop",
        desk=desk,
    )


async def settle(pilot: Pilot[None]) -> None:
    """Wait for every worker (polls, loads) and for the screen to catch up."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def steady_cursor(pilot: Pilot[None]) -> None:
    """Stop every Input's cursor from blinking, and show the focused one's.

    A blinking cursor is drawn or not by how long the machine took to reach the snapshot: on a
    busy machine half a second passes and the picture changes. Focusing the box again shows its
    cursor, as it was the moment the box got the focus.
    """
    focused = pilot.app.focused
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
    if isinstance(focused, Input):
        focused.blur()
        await pilot.pause()
        focused.focus()
    await pilot.pause()


class TableApp(App[None]):
    """The task table alone, for tests of how it updates and draws."""

    def compose(self) -> ComposeResult:
        yield TaskList()


def notified(app: ZombietopApp) -> list[str]:
    """Every notification's message the app shows from now on."""
    messages: list[str] = []
    original = app.notify

    def spy(message: str, **kwargs: Any) -> None:
        messages.append(message)
        original(message, **kwargs)

    app.notify = spy  # type: ignore[method-assign]
    return messages


def help_text(screen: Screen[None]) -> str:
    """Every line the help screen draws, scrolled into view or not."""
    return "\n".join(
        static.render_line(y).text
        for static in screen.query("Static")
        for y in range(static.size.height)
    )
