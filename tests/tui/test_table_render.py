"""The table's own cell and line rendering reads exactly as DataTable's would.

TaskTable keeps rendered cells by what they say and how they look, restamps lines drawn for
another row with the row a click reports, and assembles body lines without DataTable's
per-line style lookups. Each is compared with DataTable's own rendering of the same cell or
line, segment for segment (text, colours and the row/column meta a click reads).
"""

from __future__ import annotations

from textual.coordinate import Coordinate
from textual.widgets import DataTable

from tests.tui.helpers import TableApp
from tui.cells import COLUMNS
from tui.sample import NOW, sample_snapshot
from tui.widgets.task_table import TaskTable


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

    from core.monitor import build_snapshot
    from tui.sample import sample_config, sample_records, sample_samples

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
