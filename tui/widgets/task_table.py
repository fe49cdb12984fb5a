"""The task table: diffed by task id, fixed-width columns, cursor pinned to its task.

Like ``top``, it only formats what you can see: each poll marks every row stale, and only
the rows in (or near) the viewport are formatted and compared; a row that scrolls into view
is brought up to date then. A cell is written only when its text differs from what is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from core.monitor import TaskView
from tui.cells import CELL_PADDING, Cells, Column, row_cells

SegmentLines = list[list[Segment]]

MARGIN = 10
"""Rows above and below the viewport kept current, so a short scroll shows fresh rows at once."""


class TaskTable(DataTable[object]):
    """A DataTable updated only by ``show``: add, remove, update changed cells, re-order."""

    # Enter opens the detail view (the screen handles RowSelected); say so in the footer.
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select_cursor", "Open")]

    DEFAULT_CSS = """
    TaskTable {
        height: 1fr;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, cell_padding=CELL_PADDING)
        self._columns: tuple[Column, ...] = ()
        self._shown: dict[str, Cells] = {}
        """What each row's cells say now."""
        self._views: dict[str, TaskView] = {}
        self._stale: set[str] = set()
        """Rows whose view or clock moved since their cells were last compared."""
        self._order: list[str] = []
        self._now = 0.0
        self._notes: Mapping[str, str] = {}
        self._last_now = 0.0
        self._lines_cache: dict[
            tuple[RowKey, ColumnKey], tuple[object, tuple[object, ...], SegmentLines]
        ] = {}
        self.cells_touched = 0
        """Cells written since the last ``show`` (added rows count every cell)."""

    @property
    def shown_columns(self) -> tuple[Column, ...]:
        return self._columns

    @property
    def order(self) -> list[str]:
        return list(self._order)

    @property
    def selected_task_id(self) -> str | None:
        """The task under the cursor, or None when the table is empty."""
        if self.row_count == 0:
            return None
        row = min(self.cursor_row, self.row_count - 1)
        key = self.coordinate_to_cell_key(Coordinate(row, 0)).row_key
        return None if key.value is None else str(key.value)

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Switch the set of columns; this rebuilds the table, so it happens only on resize."""
        columns = tuple(columns)
        if columns == self._columns:
            return
        selected = self.selected_task_id
        self._columns = columns
        self.clear(columns=True)
        self._lines_cache.clear()
        for column in columns:
            self.add_column(column.label, width=column.width, key=column.key)
        self._shown.clear()
        views, self._views, self._order = [self._views[t] for t in self._order], {}, []
        self.show(views, self._now, self._notes, select=selected)

    def show(
        self,
        views: Sequence[TaskView],
        now: float,
        notes: Mapping[str, str],
        *,
        select: str | None = None,
    ) -> None:
        """Make the table show ``views`` in this order, touching only what changed."""
        selected = select or self.selected_task_id
        self.cells_touched = 0
        notes_changed = {
            task_id
            for task_id in self._notes.keys() | notes.keys()
            if self._notes.get(task_id) != notes.get(task_id)
        }
        self._now, self._notes = now, dict(notes)
        previous = self._views
        self._views = {view.task_id: view for view in views}
        with self.app.batch_update():
            for task_id in [t for t in self._shown if t not in self._views]:
                self.remove_row(task_id)
                del self._shown[task_id]
                for column in self._columns:
                    self._lines_cache.pop((RowKey(task_id), ColumnKey(column.key)), None)
            self._stale.intersection_update(self._views)
            # The table's own order now: survivors as they were, then rows added below.
            current = [task_id for task_id in self._order if task_id in self._views]
            for view in views:
                task_id = view.task_id
                if task_id not in self._shown:
                    cells = row_cells(view, now, self._columns, notes)
                    self.add_row(*cells, key=task_id)
                    self._shown[task_id] = cells
                    current.append(task_id)
                    self.cells_touched += len(cells)
                elif (
                    previous.get(task_id) is not view
                    or now != self._last_now
                    or task_id in notes_changed
                ):
                    self._stale.add(task_id)
            order = [view.task_id for view in views]
            if order != current:
                position = {task_id: index for index, task_id in enumerate(order)}
                self.sort("task", key=lambda cell: position[cell.plain])
            self._order = order
            if selected is not None and selected in self._views:
                index = self.get_row_index(selected)
                if index != self.cursor_row:
                    self.move_cursor(row=index, animate=False)
            self._last_now = now
            self.bring_visible_up_to_date()

    def visible_task_ids(self) -> list[str]:
        top = max(int(self.scroll_y) - MARGIN, 0)
        bottom = int(self.scroll_y) + self.size.height + MARGIN
        return self._order[top:bottom]

    def bring_visible_up_to_date(self) -> None:
        """Compare and update the stale rows in and near the viewport."""
        self._refresh_rows(self.visible_task_ids())

    def bring_all_up_to_date(self) -> None:
        """Compare and update every stale row (tests, and before anything reads every row)."""
        self._refresh_rows(list(self._order))

    def _refresh_rows(self, task_ids: Sequence[str]) -> None:
        keys = [column.key for column in self._columns]
        for task_id in task_ids:
            if task_id not in self._stale:
                continue
            self._stale.discard(task_id)
            cells = row_cells(self._views[task_id], self._now, self._columns, self._notes)
            old = self._shown[task_id]
            if cells == old:
                continue
            for key, before, after in zip(keys, old, cells, strict=True):
                if before != after:
                    self.update_cell(task_id, key, after)
                    self.cells_touched += 1
            self._shown[task_id] = cells

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> SegmentLines:
        # DataTable keys its cell cache on a table-wide update counter, so one update_cell
        # re-renders every visible cell. Keep each cell's lines until that cell's value (or
        # its position and look) changes: a poll then renders only the cells that ticked.
        if row_index < 0 or column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value = self.get_cell(row_key, column_key)
        look = (
            row_index,
            base_style,
            width,
            cursor,
            hover,
            self._show_hover_cursor,
            self._pseudo_class_state,
        )
        cached = self._lines_cache.get((row_key, column_key))
        if cached is not None and cached[0] is value and cached[1] == look:
            return cached[2]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._lines_cache[(row_key, column_key)] = (value, look, lines)
        return lines

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._stale:
            self.bring_visible_up_to_date()
