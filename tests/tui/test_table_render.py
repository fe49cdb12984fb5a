"""The table's own cell and line rendering reads exactly as DataTable's would.

TaskTable keeps each place's drawn cell while its text is the same, draws one-line cells
straight from their text with styles kept per place, and lays body lines out itself. Each is
compared with DataTable's own rendering of the same cell or line, segment for segment (text,
colours and the row/column meta a click reads), before and after rows move.
"""

from __future__ import annotations

from textual.coordinate import Coordinate
from textual.widgets import DataTable

from tests.tui.helpers import TableApp
from zombietop.tui.cells import COLUMNS
from zombietop.tui.sample import NOW, sample_snapshot
from zombietop.tui.widgets.task_table import TaskTable


def assert_reads_like_datatable(table: TaskTable) -> None:
    style = table.rich_style
    for row in range(table.row_count):
        for column, spec in enumerate(table.ordered_columns):
            width = spec.get_render_width(table)
            for cursor in (False, True):
                ours = table._render_cell(row, column, style, width, cursor, False)
                theirs = DataTable._render_cell(table, row, column, style, width, cursor, False)
                assert ours == theirs, (row, column, cursor)
        key = table._row_locations.get_key(row)
        for cursor_row in (row, row + 1):
            cursor, hover = Coordinate(cursor_row, 0), Coordinate(-1, 0)
            ours_line = table._render_line_in_row(key, 0, style, cursor, hover)
            theirs_line = DataTable._render_line_in_row(table, key, 0, style, cursor, hover)
            assert ours_line == theirs_line, (row, cursor_row)
    assert_lines_read_like_datatable(table)


def assert_lines_read_like_datatable(table: TaskTable) -> None:
    """Every body line (and one past the last row) as DataTable lays it out: its line cache
    forgotten, its crop, padding and merging of segments, at the cursor and away from it."""
    style, width = table.rich_style, table.size.width
    header = table.header_height
    for cursor_row in (0, min(1, table.row_count - 1)):
        table.move_cursor(row=cursor_row, animate=False)
        for y in range(header, header + table.row_count + 1):
            table._line_cache.clear()
            ours = table._render_line(y, 0, width, style)
            theirs = DataTable._render_line(table, y, 0, width, style)
            assert ours == theirs, (y, cursor_row)
            assert ours.cell_length == width


async def test_cells_and_lines_read_like_datatable_before_and_after_rows_move() -> None:
    app = TableApp()
    async with app.run_test(size=(200, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        views = list(sample_snapshot().tasks)
        table.show(views, NOW, {})
        await pilot.pause()
        assert_reads_like_datatable(table)
        # Every row moves: each cell's lines are now held for another place.
        table.show(views[::-1], NOW, {})
        await pilot.pause()
        assert table.order == [view.task_id for view in views[::-1]]
        assert_reads_like_datatable(table)


async def test_cells_of_awkward_text_read_like_datatable() -> None:
    """Task ids wider than their column (cropped), wide characters, a tab: each is drawn the
    way DataTable draws it, by the fast path where it fits and by DataTable's own where not."""
    from dataclasses import replace

    from zombietop.monitor import build_snapshot
    from zombietop.tui.sample import sample_config, sample_records, sample_samples

    awkward = ["a-task-id-far-too-long-for-its-column", "任务-東京-0042", "tab\there", "", "x"]
    records = [
        replace(record, task=replace(record.task, task_id=task_id))
        for record, task_id in zip(sample_records(), awkward, strict=False)
    ]
    views = list(build_snapshot(NOW, records, sample_config(), sample_samples()).tasks)
    app = TableApp()
    async with app.run_test(size=(200, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(views, NOW, {})
        await pilot.pause()
        assert table.row_count == len(awkward)
        assert_reads_like_datatable(table)


async def test_lines_wider_than_the_table_or_narrower_read_like_datatable() -> None:
    """A terminal wider than every column (the row's colour fills out to the edge) and one too
    narrow for them (DataTable crops): both read as DataTable's own lines."""
    views = list(sample_snapshot().tasks)
    for size in ((240, 30), (60, 30)):
        app = TableApp()
        async with app.run_test(size=size) as pilot:
            table = app.query_one(TaskTable)
            table.set_columns(COLUMNS)
            table.show(views, NOW, {})
            await pilot.pause()
            table_width = sum(c.get_render_width(table) for c in table.ordered_columns)
            assert (table_width < table.size.width) == (size[0] == 240)
            assert_lines_read_like_datatable(table)
