"""The task table: diffed by task id, fixed-width columns, cursor pinned to its task.

Like ``top``, it only formats what you can see: a poll compares the rows in the viewport with
what they show (a row is stale when its view or note changed, or when ``row_changes`` says its
ages may read differently by now); a row that scrolls into view is compared then. A cell is
written only when it reads or looks different, and a row's changed cells are repainted as one
span; where a re-sort puts another task's row in view, only the cells that read differently
from the row drawn there are repainted. Nor does a poll that brings the tasks already shown
read every view: the monitor keeps the view of every task it did not re-judge, so views are
told apart by identity (in C), and only the places where they differ are read, to re-order the
rows whose task moved.

Drawing leaves DataTable's general path where this table's shape allows: each place keeps its
drawn cell while the cell's text is the same, a one-line cell is drawn straight from its text
with styles worked out once per place, and a body line is its cells side by side, without
DataTable's per-line lookups, crops and measuring. tests/tui/test_table_render.py holds all of
it to DataTable's own drawing.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence, Set
from itertools import compress
from operator import attrgetter, is_not
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, Row, RowKey

from zombietop.monitor import TaskView
from zombietop.tui.cells import CELL_PADDING, Cells, Column, row_cells, row_changes, same_cell
from zombietop.tui.widgets.row_order import LineOffsets, OrderedRows, RowOrder

SegmentLines = list[list[Segment]]

CELLS_KEPT = 4096
"""Places (row, column) whose drawn lines and styles are kept: a few screens' worth."""

_task_id = attrgetter("task_id")


def _changed_columns(before: Cells, after: Cells) -> list[int]:
    """The columns whose cells read or look different, in order."""
    return [column for column, same in enumerate(map(same_cell, before, after)) if not same]


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
        # Set before DataTable's own __init__, which already reads the row order.
        self._order_version = 0
        """Bumped whenever rows are added, removed or re-ordered (never by a cell update)."""
        self._order_cache: tuple[object, list[Row[object]], list[tuple[RowKey, int]]] | None = None
        self._row_keys: dict[str, RowKey] = {}
        """One key object per row, shared with the row order."""
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, cell_padding=CELL_PADDING)
        self._columns: tuple[Column, ...] = ()
        self._shown: dict[str, Cells] = {}
        """What each row's cells say now."""
        self._views: tuple[TaskView, ...] = ()
        """The views the rows show, in the rows' order (``_order`` holds their task ids)."""
        self._compared: dict[str, tuple[TaskView, str | None, float, float]] = {}
        """What each row's cells were last computed from (view and note), at which moment, and
        until when they read the same (``row_changes``): a row whose view or note differs, or
        whose moment has passed, is stale. A poll marks nothing; only rows looked at are
        compared, and a row of ages in minutes is recomputed once a minute."""
        self._order: list[str] = []
        self._now = 0.0
        self._notes: Mapping[str, str] = {}
        self._cells_drawn: dict[tuple[int, int], tuple[Text, tuple[object, ...], SegmentLines]] = {}
        """Each place's (row, column) lines, with the text and look they were drawn from."""
        self._styles_by_place: dict[tuple[object, ...], tuple[Style, Style]] = {}
        """The styles around each place's text (``_place_styles``, ``_fill_style``)."""
        self._moved: dict[int, Cells | None] = {}
        """Places in view whose task changed since they were drawn, with the cells drawn there
        (None: not known), until ``_repaint_moved`` repaints what differs."""
        self._writing_rows = False
        """True while ``_refresh_rows`` writes cells: it repaints them, not ``update_cell``."""
        self._column_spans: tuple[object, list[tuple[int, int]]] | None = None
        """Each column's x and width, with the columns they were worked out for."""
        self._line_style: Style | None = None
        """The widget's style while a pass of render_lines runs."""
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
        self._order_version += 1
        self.clear(columns=True)
        self._forget_drawing()
        for column in columns:
            self.add_column(column.label, width=column.width, key=column.key)
        self._shown.clear()
        self._compared.clear()
        self._row_keys.clear()
        views, self._views, self._order = self._views, (), []
        self.show(views, self._now, self._notes, select=selected)

    def show(
        self,
        views: Sequence[TaskView],
        now: float,
        notes: Mapping[str, str],
        *,
        select: str | None = None,
    ) -> None:
        """Make the table show ``views`` in this order, touching only what changed.

        The cursor stays with its task when rows re-sort, except on the first row: that row
        means "the most urgent task", whichever it is now, so an untouched dashboard keeps
        showing the top of the list instead of scrolling after a task that just beat.
        ``select`` puts the cursor on that task wherever it is.
        """
        views = tuple(views)  # a snapshot's own tuple is kept as it is, not copied
        selected = select
        if selected is None and self.cursor_row > 0:
            selected = self.selected_task_id
        self.cells_touched = 0
        self._now, self._notes = now, dict(notes)
        with self.app.batch_update():
            if not self._follow(views):
                self._show_other_tasks(views, now, notes)
            if selected is not None and selected in self._row_locations:
                index = self.get_row_index(selected)
                if index != self.cursor_row:
                    self.move_cursor(row=index, animate=False)
            self.bring_visible_up_to_date()

    def _follow(self, views: tuple[TaskView, ...]) -> bool:
        """Take ``views`` if they are the tasks the rows show, maybe re-sorted; else say False.

        A poll keeps the view of every task it did not re-judge, so the views are compared
        with the rows' by identity, in C, without reading them; task ids are read only where
        the views differ, and only rows whose task moved are re-ordered.
        """
        shown, locations = self._views, self._row_locations
        if (
            len(views) != len(shown)
            or not isinstance(locations, RowOrder)
            or locations.order is not self._order
        ):
            return False
        if views is shown:
            return True
        # One byte a row (1: another view); row numbers are made only from the first 1 to the
        # last (none when every view is the one shown).
        other = bytes(map(is_not, views, shown))
        first, last = other.find(1), other.rfind(1)
        places = list(compress(range(first, last + 1), other[first : last + 1]))
        before = list(map(self._order.__getitem__, places))
        after = list(map(_task_id, map(views.__getitem__, places)))
        if before != after:
            if set(before) != set(after):
                return False  # tasks came or went (the rows' ids are distinct, so are these)
            locations.put(places, after)
            self._update_count += 1
            self._order_version += 1
            top, bottom = self._visible_rows()
            for i in range(bisect_left(places, top), bisect_left(places, bottom)):
                if before[i] != after[i]:
                    self._moved.setdefault(places[i], self._shown.get(before[i]))
        self._views = views
        return True

    def _show_other_tasks(
        self, views: tuple[TaskView, ...], now: float, notes: Mapping[str, str]
    ) -> None:
        """Remove the rows of tasks gone, add rows for new ones, and put them in order."""
        order = [view.task_id for view in views]
        task_ids, current = set(order), self._order
        if self._shown.keys() != task_ids:
            current = self._remove_and_add(views, order, task_ids, now, notes)
        # Always an order of ours, over the list ``_follow`` keeps up to date.
        self._reorder(current, order)
        self._order, self._views = order, views

    def _remove_and_add(
        self,
        views: Sequence[TaskView],
        order: Sequence[str],
        task_ids: Set[str],
        now: float,
        notes: Mapping[str, str],
    ) -> list[str]:
        """Remove the rows of tasks gone and add rows for new ones (at the end); return the
        table's order after that."""
        gone = self._shown.keys() - task_ids
        if gone:
            self._remove_rows(gone)
        current = list(filter(task_ids.__contains__, self._order))
        new = task_ids - self._shown.keys()
        for view in compress(views, map(new.__contains__, order)):
            task_id = view.task_id
            note = notes.get(task_id)
            cells = row_cells(view, now, self._columns, notes)
            self._order_version += 1
            self._row_keys[task_id] = RowKey(task_id)
            self.add_row(*cells, key=task_id)
            self._shown[task_id] = cells
            self._compared[task_id] = (view, note, now, row_changes(view, now, self._columns))
            current.append(task_id)
            self.cells_touched += len(cells)
        return current

    def _remove_rows(self, task_ids: Set[str]) -> None:
        """Remove these rows, all at once, as ``DataTable.remove_row`` removes one; the caller
        then puts the rows in order (``_reorder``).

        remove_row rebuilds its map of row indices, in Python, for every row removed: 30 ms a
        row at 10,000 rows. Here the rows left keep their order, in one pass over the ids.
        """
        for task_id in task_ids:
            row_key = self._row_keys.pop(task_id)
            del self.rows[row_key], self._data[row_key], self._shown[task_id]
            self._compared.pop(task_id, None)
        self._row_locations = RowOrder(
            list(filter(self._shown.__contains__, self._order)), self._row_keys
        )
        self._require_update_dimensions = True  # the scrollable height, on idle
        self.cursor_coordinate = self.cursor_coordinate  # clamped to the rows left
        self.refresh(layout=True)  # every line: rows below a gone one moved up

    def visible_task_ids(self) -> list[str]:
        # A row that scrolls into view is compared then (watch_scroll_y), before it is drawn.
        top, bottom = self._visible_rows()
        return self._order[top:bottom]

    def bring_visible_up_to_date(self) -> None:
        """Compare and update the rows in the viewport."""
        top, bottom = self._visible_rows()
        self._refresh_rows(range(top, min(bottom, len(self._order))))
        self._repaint_moved()

    def _repaint_moved(self) -> None:
        """Repaint the places in view where another task's row now is, over the cells that read
        differently from the row that was there: most rows that move in and out of view in a
        fleet at rest read alike ("● healthy", "in 4m"), and a terminal needs only the rest."""
        moved, self._moved = self._moved, {}
        repaint: list[Region] = []
        for index, was in moved.items():
            if index >= len(self._order):
                continue  # the rows shrank: the layout repaints it
            cells = self._shown[self._order[index]]
            if was is None or len(was) != len(cells):
                repaint.append(self._row_region(index))  # what was there is not known
            elif changed := _changed_columns(was, cells):
                repaint.append(self._cells_region(index, changed))
        self._repaint(repaint)

    def bring_all_up_to_date(self) -> None:
        """Compare and update every row (tests, and before anything reads every row)."""
        self._refresh_rows(range(len(self._order)))
        self._repaint_moved()

    def _reorder(self, before: Sequence[str], after: Sequence[str]) -> None:
        """Put the rows in ``after`` order, repainting only the visible rows that changed.

        ``DataTable.sort`` repaints the whole table; a poll re-sorts every second (heartbeat
        ages order the healthy tasks), mostly below the fold.
        """
        self._row_locations = RowOrder(after, self._row_keys)
        self._update_count += 1
        self._order_version += 1
        top, bottom = self._visible_rows()
        for index in range(top, min(bottom, len(after))):
            if index >= len(before) or before[index] != after[index]:
                shown = self._shown.get(before[index]) if index < len(before) else None
                self._moved.setdefault(index, shown)

    # DataTable keys its row order and line offsets on the update counter that every cell
    # update bumps, so one ticking cell re-walks every row. Read them through the order when
    # it is ours (tui/widgets/row_order.py); DataTable's own, after a removal, is walked once
    # per layout instead.

    def _order_now(self) -> tuple[list[Row[object]], list[tuple[RowKey, int]]]:
        key = (self._order_version, self.row_count, id(self._row_locations))
        if self._order_cache is None or self._order_cache[0] != key:
            get_key, rows = self._row_locations.get_key, self.rows
            ordered = [rows[get_key(index)] for index in range(self.row_count)]
            offsets = [(row.key, y) for row in ordered for y in range(row.height)]
            self._order_cache = (key, ordered, offsets)
        return self._order_cache[1], self._order_cache[2]

    @property
    def ordered_rows(self) -> Sequence[Row[object]]:  # type: ignore[override]
        locations = self._row_locations
        if isinstance(locations, RowOrder):
            return OrderedRows(locations.order, self._row_keys, self.rows)
        return self._order_now()[0]

    @property
    def _y_offsets(self) -> Sequence[tuple[RowKey, int]]:  # type: ignore[override]
        locations = self._row_locations
        if isinstance(locations, RowOrder):
            return LineOffsets(locations.order, self._row_keys)
        return self._order_now()[1]

    def _visible_rows(self) -> tuple[int, int]:
        top = int(self.scroll_y)
        return top, top + self.size.height

    def _row_region(self, index: int) -> Region:
        # Every row is one line high, so a row's place follows from its index alone
        # (DataTable's own region helpers walk every row above it).
        header = self.header_height if self.show_header else 0
        return Region(0, index + header, max(self.size.width, self.virtual_size.width), 1)

    def _cell_region(self, index: int, column_index: int) -> Region:
        header = self.header_height if self.show_header else 0
        x, width = self._spans()[column_index]
        return Region(x, index + header, width, 1)

    def _spans(self) -> list[tuple[int, int]]:
        """Where each column starts and how wide it is, worked out once per set of columns
        (DataTable walks every column to the left of a cell, for every cell)."""
        key = (self._columns, self._row_label_column_width, self.cell_padding)
        if self._column_spans is None or self._column_spans[0] != key:
            spans, x = [], self._row_label_column_width
            for column in self.ordered_columns:
                width = column.get_render_width(self)
                spans.append((x, width))
                x += width
            self._column_spans = (key, spans)
        return self._column_spans[1]

    def _refresh_rows(self, indices: range) -> None:
        keys = [ColumnKey(column.key) for column in self._columns]
        top, bottom = self._visible_rows()
        repaint: list[Region] = []
        for index in indices:
            task_id, view = self._order[index], self._views[index]
            note = self._notes.get(task_id)
            compared = self._compared.get(task_id)
            if (
                compared is not None
                and compared[0] is view
                and compared[1] == note
                and compared[2] <= self._now < compared[3]
            ):
                continue
            cells = row_cells(view, self._now, self._columns, self._notes)
            until = row_changes(view, self._now, self._columns)
            self._compared[task_id] = (view, note, self._now, until)
            changed = _changed_columns(self._shown[task_id], cells)
            if not changed:
                continue
            row_key = self._row_keys[task_id]
            self._writing_rows = True
            try:
                for column in changed:
                    self.update_cell(row_key, keys[column], cells[column])
            finally:
                self._writing_rows = False
            self.cells_touched += len(changed)
            self._shown[task_id] = cells
            if top <= index < bottom:  # rows out of view are written, not repainted
                repaint.append(self._cells_region(index, changed))
        self._repaint(repaint)

    def _cells_region(self, index: int, columns: Sequence[int]) -> Region:
        """The span of a row from the first to the last of ``columns`` (one repaint per row,
        not one per cell)."""
        start, stop = self._cell_region(index, columns[0]), self._cell_region(index, columns[-1])
        return Region(start.x, start.y, stop.right - start.x, 1)

    def _repaint(self, regions: Sequence[Region]) -> None:
        """Repaint these regions of the table (in rows and columns) that are in view, with one
        refresh call: each clears the widget's caches and wakes it."""
        window, scroll = self.window_region, -self.scroll_offset
        in_view = [region.translate(scroll) for region in regions if window.overlaps(region)]
        if in_view:
            self.refresh(*in_view)

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: object,
        *,
        update_width: bool = False,
    ) -> None:
        """Update one cell and repaint that cell alone (DataTable repaints the whole table)."""
        if update_width:
            super().update_cell(row_key, column_key, value, update_width=True)
            return
        row_key = RowKey(row_key) if isinstance(row_key, str) else row_key
        column_key = ColumnKey(column_key) if isinstance(column_key, str) else column_key
        index = self._row_locations.get(row_key)
        column_index = self._column_locations.get(column_key)
        if index is None or column_index is None:
            super().update_cell(row_key, column_key, value)  # raises CellDoesNotExist
            return
        self._data[row_key][column_key] = value
        self._update_count += 1
        if self._writing_rows:
            return  # _refresh_rows repaints each row's changed cells as one span
        top, bottom = self._visible_rows()
        if top <= index < bottom:
            self._refresh_region(self._cell_region(index, column_index))

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
        # re-renders every visible cell, and draws each through Rich's general layout. Keep each
        # place's lines while its text is the same object (a cell is replaced only when it reads
        # differently) and looks the same; a new text is drawn straight from its words.
        if row_index < 0 or column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value = self._data[row_key].get(column_key)
        if not isinstance(value, Text):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        place = (row_index, column_index)
        look = (base_style, width, cursor, hover, self._show_hover_cursor, self._pseudo_class_state)
        kept = self._cells_drawn.get(place)
        if kept is not None and kept[0] is value and kept[1] == look:
            return kept[2]
        lines = self._draw_cell(value, row_index, column_index, base_style, width, cursor, hover)
        if len(self._cells_drawn) >= CELLS_KEPT:
            self._cells_drawn.clear()  # places scrolled past long ago; cheap to draw again
        self._cells_drawn[place] = (value, look, lines)
        return lines

    def _place_styles(
        self, row_index: int, column_index: int, base_style: Style, cursor: bool, hover: bool
    ) -> tuple[Style, Style]:
        """A body cell's styles before and after its own (the row's, the click meta of its
        place, the cursor's), worked out once per place: composing them costs more than
        drawing the words."""
        key = (row_index, column_index, base_style, cursor, hover)
        styles = self._styles_by_place.get(key)
        if styles is None:
            component, post = self._body_styles(cursor, hover, cells=True)
            where = Style.from_meta({"row": row_index, "column": column_index})
            styles = self._keep_styles(key, (base_style + where + component, post))
        return styles

    def _fill_style(self, row_index: int, base_style: Style, cursor: bool, hover: bool) -> Style:
        """The style of a body row beyond its last column, out to the widget's edge."""
        key = (row_index, -1, base_style, cursor, hover)
        styles = self._styles_by_place.get(key)
        if styles is None:
            extend, _ = self._body_styles(cursor, hover, cells=False)
            where = Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
            styles = self._keep_styles(key, (base_style + extend + where, Style()))
        return styles[0]

    def _keep_styles(
        self, key: tuple[object, ...], styles: tuple[Style, Style]
    ) -> tuple[Style, Style]:
        if len(self._styles_by_place) >= CELLS_KEPT:
            self._styles_by_place.clear()  # places scrolled past long ago
        self._styles_by_place[key] = styles
        return styles

    def _body_styles(self, cursor: bool, hover: bool, *, cells: bool) -> tuple[Style, Style]:
        """The cursor's styles over a body row (DataTable's own lookup): for its cells, with
        the cursor's CSS priorities; for the fill out to the widget's edge, without."""
        return self._get_styles_to_render_cell(
            False,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            cells and self.cursor_foreground_priority == "css",
            cells and self.cursor_background_priority == "css",
        )

    def _draw_cell(
        self,
        value: Text,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool,
        hover: bool,
    ) -> SegmentLines:
        """Draw a body cell as DataTable does (padding, the cell's own styles between the row's
        and the cursor's), straight from the text when it is one line that fits: every cell
        here is. Anything else goes through DataTable's general layout."""
        pad = self.cell_padding
        room = width - 2 * pad
        if (
            "\n" in value.plain
            or "\t" in value.plain
            or value.justify not in (None, "default", "left")
            or value.cell_len > room
        ):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        pre, post = self._place_styles(row_index, column_index, base_style, cursor, hover)
        blank = pre + post
        line = [Segment(" " * pad, blank)] if pad else []
        # Text.render leaves a span-less text's own style to its caller (Rich's layout).
        console = self.app.console
        text = (
            value.render(console)
            if value.spans
            else [Segment(value.plain, console.get_style(value.style))]
        )
        line.extend(Segment.apply_style(text, pre, post))
        if room > value.cell_len:
            line.append(Segment(" " * (room - value.cell_len), blank))
        if pad:
            line.append(Segment(" " * pad, blank))
        return [line]

    def _forget_drawing(self) -> None:
        self._cells_drawn.clear()
        self._styles_by_place.clear()

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._forget_drawing()

    def notify_style_update(self) -> None:
        # A new theme or focus changes the cursor's colours under the same cell text.
        self._forget_drawing()
        super().notify_style_update()

    def render_lines(self, crop: Region) -> list[Strip]:
        # DataTable.render_line works out the widget's style for every line (a walk up the
        # DOM): work it out once per pass.
        self._line_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._line_style = None

    def render_line(self, y: int) -> Strip:
        if self._line_style is None or self.fixed_rows:
            return super().render_line(y)
        scroll_x, scroll_y = self.scroll_offset
        header = self.header_height if self.show_header else 0
        if y >= header:
            y += scroll_y
        return self._render_line(y, scroll_x, scroll_x + self.size.width, self._line_style)

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        # DataTable's own looks the row up by walking line offsets, keys a line cache on the
        # update counter (so a changed line always misses), and crops, pads and measures the
        # segments it just laid out. A body row here is one line of cells exactly as wide as
        # their columns: put them side by side and fill out to the edge.
        header = self.header_height if self.show_header else 0
        row_index = y - header
        width = self.size.width
        if (
            row_index < 0
            or x1 != 0
            or x2 != width
            or not self._plain_rows()
            or (spans := self._spans())[-1:] == []
        ):
            return super()._render_line(y, x1, x2, base_style)
        x, last = spans[-1]
        table_width = x + last
        if table_width > width:
            return super()._render_line(y, x1, x2, base_style)  # cropped: DataTable's way
        if row_index >= self.row_count:
            return Strip.blank(width, base_style)
        cursor = self.cursor_coordinate.row == row_index
        hover = self.hover_coordinate.row == row_index
        segments: list[Segment] = []
        for column_index, (_, column_width) in enumerate(spans):
            lines = self._render_cell(
                row_index, column_index, base_style, column_width, cursor, hover
            )
            segments.extend(lines[0])
        if table_width < width:
            fill = self._fill_style(row_index, base_style, cursor, hover)
            segments.append(Segment(" " * (width - table_width), fill))
        return Strip(segments, width).simplify()

    def _plain_rows(self) -> bool:
        """True when every body row is one line of cells and nothing else (no row labels, fixed
        rows or columns, stripes or cell cursor): the shape the fast paths draw."""
        return not (
            self.fixed_columns
            or self.fixed_rows
            or self.zebra_stripes
            or self.cursor_type != "row"
            or (self._labelled_row_exists and self.show_row_labels)
        )

    def _render_line_in_row(
        self,
        row_key: RowKey,
        line_no: int,
        base_style: Style,
        cursor_location: Coordinate,
        hover_location: Coordinate,
    ) -> tuple[SegmentLines, SegmentLines]:
        # DataTable's own looks up the header's and the widget's styles for every line (a walk
        # up the DOM each), for row labels and fixed columns this table never has. A body row
        # here is its cells side by side, then the row's colour out to the widget's edge.
        if row_key is self._header_row_key or not self._plain_rows():
            return super()._render_line_in_row(
                row_key, line_no, base_style, cursor_location, hover_location
            )
        row_index = self._row_locations.get(row_key)
        if row_index is None:
            row_index = -1
        cursor = cursor_location.row == row_index
        hover = hover_location.row == row_index
        cells: list[list[Segment]] = []
        table_width = 0
        for column_index, column in enumerate(self.ordered_columns):
            width = column.get_render_width(self)
            table_width += width
            lines = self._render_cell(row_index, column_index, base_style, width, cursor, hover)
            cells.append(lines[line_no])
        extend = self._fill_style(row_index, base_style, cursor, hover)
        cells.append([Segment(" " * max(0, self.size.width - table_width), extend)])
        return [], cells

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.bring_visible_up_to_date()
