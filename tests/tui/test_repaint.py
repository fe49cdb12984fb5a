"""A poll repaints what changed on screen, not the screen: the header's clock digits (the
table's cells and rows: tests/tui/test_task_list.py)."""

from __future__ import annotations

from textual.geometry import Region

from tests.tui.helpers import make_app, settle
from zombietop.tui.widgets.header import StatusHeader


def spy_refresh(widget: object) -> list[tuple[tuple[Region, ...], dict[str, object]]]:
    calls: list[tuple[tuple[Region, ...], dict[str, object]]] = []
    original = widget.refresh  # type: ignore[attr-defined]

    def spy(*regions: Region, **kwargs: object) -> object:
        calls.append((regions, kwargs))
        return original(*regions, **kwargs)

    widget.refresh = spy  # type: ignore[attr-defined]
    return calls


async def test_a_clock_tick_repaints_the_changed_digits_and_not_the_screen() -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        header = app.main.query_one(StatusHeader)
        header.now = header.now // 60 * 60 + 28  # HH:MM:28
        await pilot.pause()
        header_calls = spy_refresh(header)
        screen_calls = spy_refresh(app.main)
        header.now = header.now + 1
        app.snapshot = app.snapshot
        await pilot.pause()
        seconds = header.render().split("\n")[0].plain.index(" UTC") - 1  # the seconds' last digit
        assert header_calls == [((Region(seconds, 0, 1, 1),), {})]
        assert screen_calls == []
