"""A poll repaints what changed on screen, not the screen: cells, table rows, header lines."""

from __future__ import annotations

from textual.geometry import Region

from tests.tui.helpers import TableApp, make_app, settle
from zombietop.monitor import build_snapshot
from zombietop.tui.cells import COLUMNS, row_cells
from zombietop.tui.sample import NOW, sample_config, synthetic_records
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.task_table import TaskTable


def spy_refresh(widget: object) -> list[tuple[tuple[Region, ...], dict[str, object]]]:
    calls: list[tuple[tuple[Region, ...], dict[str, object]]] = []
    original = widget.refresh  # type: ignore[attr-defined]

    def spy(*regions: Region, **kwargs: object) -> object:
        calls.append((regions, kwargs))
        return original(*regions, **kwargs)

    widget.refresh = spy  # type: ignore[attr-defined]
    return calls


async def test_a_tick_repaints_only_the_cells_that_changed() -> None:
    config = sample_config()
    records = synthetic_records(1000)
    app = TableApp()
    async with app.run_test(size=(200, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(build_snapshot(NOW, records, config, {}).tasks, NOW, {})
        await pilot.pause()
        calls = spy_refresh(table)
        later = build_snapshot(NOW + 1, records, config, {}).tasks
        table.show(later, NOW + 1, {})
        await pilot.pause()
        regions = [region for found, _ in calls for region in found]
        assert all(found for found, _ in calls), "a refresh of the whole table"
        # Rows just outside the viewport are brought up to date too, but not repainted.
        assert 0 < len(regions) < table.cells_touched
        lefts: dict[str, int] = {}
        x = 0
        for column in table.ordered_columns:
            lefts[str(column.key.value)] = x
            x += column.get_render_width(table)
        views = {view.task_id: view for view in later}
        for region in regions:
            assert region.height == 1
            index = region.y - table.header_height
            assert 0 <= index < table.size.height
            task_id = table.order[index]
            column = next(k for k, left in lefts.items() if left == region.x)
            shown = row_cells(views[task_id], NOW + 1, table.shown_columns, {})
            position = [c.key for c in table.shown_columns].index(column)
            assert table.get_cell(task_id, column) == shown[position]
        # Only ticking columns move when nothing but the clock did.
        ticking = {lefts["heartbeat"], lefts["lease"], lefts["stage_budget"], lefts["task_budget"]}
        assert {region.x for region in regions} <= ticking | {lefts["health"]}


async def test_a_reorder_repaints_only_the_visible_rows_that_moved() -> None:
    config = sample_config()
    views = list(build_snapshot(NOW, synthetic_records(200), config, {}).tasks)
    app = TableApp()
    async with app.run_test(size=(200, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(views, NOW, {})
        await pilot.pause()
        calls = spy_refresh(table)
        swapped = list(views)
        swapped[2], swapped[5] = swapped[5], swapped[2]
        swapped[150], swapped[160] = swapped[160], swapped[150]  # below the fold
        table.show(swapped, NOW, {})
        await pilot.pause()
        assert table.order == [view.task_id for view in swapped]
        assert table.get_row_index(swapped[2].task_id) == 2
        assert table.get_row_index(swapped[160].task_id) == 160
        rows = sorted(region.y - table.header_height for found, _ in calls for region in found)
        assert all(found for found, _ in calls), "a refresh of the whole table"
        assert rows == [2, 5]


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
