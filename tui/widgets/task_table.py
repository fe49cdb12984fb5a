"""The task table: diffed by task id, fixed-width columns, cursor pinned to its task."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.widgets import DataTable

from tui.cells import CELL_PADDING, Cells, Column


@dataclass(frozen=True, slots=True)
class Row:
    """One task's row: its id (the row key) and the text of each visible cell."""

    task_id: str
    cells: Cells


class TaskTable(DataTable[object]):
    """A DataTable that is only ever updated by ``apply``: add, remove, update changed cells, re-order."""

    DEFAULT_CSS = """
    TaskTable {
        height: 1fr;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id, cursor_type="row", zebra_stripes=False, cell_padding=CELL_PADDING
        )
        self._columns: tuple[Column, ...] = ()
        self._shown: dict[str, Cells] = {}
        self._order: list[str] = []
        self.cells_touched = 0
        """How many cells the last ``apply`` wrote (added rows count every cell)."""

    @property
    def shown_columns(self) -> tuple[Column, ...]:
        return self._columns

    @property
    def selected_task_id(self) -> str | None:
        """The task under the cursor, or None when the table is empty."""
        if not self._order or self.row_count == 0:
            return None
        row = min(self.cursor_row, self.row_count - 1)
        key = self.coordinate_to_cell_key((row, 0)).row_key
        return None if key.value is None else str(key.value)

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Switch the set of columns; this rebuilds the table, so it happens only on resize."""
        columns = tuple(columns)
        if columns == self._columns:
            return
        self._columns = columns
        self.clear(columns=True)
        for column in columns:
            self.add_column(column.label, width=column.width, key=column.key)
        self._shown.clear()
        self._order = []

    def apply(self, rows: Sequence[Row]) -> None:
        """Make the table show ``rows`` in this order, touching only what changed."""
        selected = self.selected_task_id
        touched = 0
        keys = [column.key for column in self._columns]
        wanted = {row.task_id for row in rows}
        with self.app.batch_update():
            for task_id in [t for t in self._shown if t not in wanted]:
                self.remove_row(task_id)
                del self._shown[task_id]
            # The table's own order now: survivors as they were, then rows added below.
            current = [task_id for task_id in self._order if task_id in wanted]
            for row in rows:
                old = self._shown.get(row.task_id)
                if old is None:
                    self.add_row(*row.cells, key=row.task_id)
                    current.append(row.task_id)
                    touched += len(row.cells)
                elif old != row.cells:
                    for key, before, after in zip(keys, old, row.cells, strict=True):
                        if before != after:
                            self.update_cell(row.task_id, key, after)
                            touched += 1
                self._shown[row.task_id] = row.cells
            order = [row.task_id for row in rows]
            if order != current:
                position = {task_id: index for index, task_id in enumerate(order)}
                self.sort("task", key=lambda cell: position[cell.plain])
            self._order = order
            if selected is not None and selected in wanted:
                index = self.get_row_index(selected)
                if index != self.cursor_row:
                    self.move_cursor(row=index, animate=False)
        self.cells_touched = touched
