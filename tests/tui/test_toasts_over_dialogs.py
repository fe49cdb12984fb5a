"""Notifications never sit over a dialog or the filter box: at 80x24, right after an ack's
notification, every dialog's buttons and inputs are where a click reaches them, and the filter
box is clear; a notification raised while a dialog is open waits for it to close."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input

from tests.tui.helpers import make_app, settle
from zombietop.tui.app import ZombietopApp

DIALOGS = {
    "kill": ("K",),
    "ack": ("a",),
    "silence": ("A",),
    "note": ("n",),
    "bulk kill": ("space", "down", "space", "K"),
    "bulk ack": ("space", "down", "space", "a"),
    "bulk silence": ("space", "down", "space", "A"),
    "bulk note": ("space", "down", "space", "n"),
}


async def ack_first_row(pilot: Pilot[None]) -> None:
    """Ack the first row; its notification ("etl-0417 acked for 2h") is then on screen."""
    await settle(pilot)
    await pilot.press("a", *"on it", "enter")
    await settle(pilot)
    assert pilot.app.screen.query("Toast"), "the ack's notification should show"


def reachable(app: ZombietopApp, widget: Widget) -> bool:
    """True when the whole widget is on screen and a click at its middle reaches it."""
    region = widget.region
    if not Region(0, 0, *app.size).contains_region(region) or not region.area:
        return False
    found, _ = app.screen.get_widget_at(*region.center)
    return found is widget or widget in found.ancestors


@pytest.mark.parametrize("keys", list(DIALOGS.values()), ids=list(DIALOGS))
async def test_every_dialog_keeps_its_buttons_and_inputs_in_reach_after_a_notification(
    keys: tuple[str, ...],
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await ack_first_row(pilot)
        await pilot.press(*keys)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ModalScreen)
        controls = [*screen.query(Button), *screen.query(Input)]
        assert controls
        hidden = [str(w) for w in controls if not reachable(app, w)]
        assert hidden == []


async def test_a_notification_raised_under_a_dialog_waits_for_it_to_close() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("K")
        await settle(pilot)
        app.notify("kill of export-2031: escalated")
        await settle(pilot)
        assert [w.message for w in app.waiting] == ["kill of export-2031: escalated"]
        assert not app.screen.query("Toast")
        await pilot.press("n")  # cancel: its own notification waits its turn too
        await settle(pilot)
        assert app.waiting == []
        shown = " ".join(str(toast.render()) for toast in app.screen.query("Toast"))
        assert "kill of export-2031: escalated" in shown


async def test_the_filter_box_stays_clear_of_notifications() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await ack_first_row(pilot)
        await pilot.press("slash")
        await settle(pilot)
        box = app.main.query_one("#filter", Input)
        assert reachable(app, box)
        toasts = list(app.main.query("Toast"))
        assert toasts
        assert not any(toast.region.overlaps(box.region) for toast in toasts)
        await pilot.press(*"exp", "enter")  # the box stays open while it holds a filter
        await settle(pilot)
        app.notify("sorted by task id")
        await settle(pilot)
        assert not any(t.region.overlaps(box.region) for t in app.main.query("Toast"))
