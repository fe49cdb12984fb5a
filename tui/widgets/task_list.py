"""The task table: a ``ScrollView`` drawn line by line, like Textual's ``Log``.

It holds the views in the order the engine sorted them, a cursor, and what each row in view
last read (``row_cells``), keyed by task id. A poll compares, for the rows in view only, each
row's view with the one it was drawn from (by identity: the monitor keeps the view of every task
it did not re-judge) and refreshes the lines that read differently. A line is drawn from its
cells once per content and width and kept in an LRU cache, so a row that moves keeps its strip.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from zombietop.judge.monitor import TaskView
from zombietop.tui.cells import (
    CELL_PADDING,
    NO_NOTES,
    Cells,
    Column,
    RowNote,
    RowNotes,
    cell_widths,
    row_cells,
    row_changes,
)
from zombietop.tui.keys import MOVE_KEYS, bindings

ROWS_KEPT = 4096
"""Rows (task ids) whose cells are kept: a few screens' worth, and every row in view."""
STRIPS_KEPT = 1024
"""Drawn lines kept, keyed by what they read."""
CELLS_KEPT = 4096
"""Drawn cells kept, keyed by what they read."""

MARKED_GLYPH = "◆"
"""Drawn at the left edge of a marked row (``space``, ``*``), over its first cell's padding:
a marked row reads as marked without colour."""

CellKey = tuple[str, object, tuple[object, ...]]


def _cell_key(cell: Text) -> CellKey:
    """What a cell reads and looks like, hashable: its words, its own style and its spans."""
    return (cell.plain, cell.style, tuple(cell.spans))


RowKey = tuple[tuple[CellKey, int], ...]


def _row_key(cells: Cells, widths: tuple[int, ...]) -> RowKey:
    """What each column of a row shows, and how wide: its cell, or the cell that runs on over
    it (so a change to that cell refreshes every column it covers)."""
    keys: list[tuple[CellKey, int]] = []
    for cell, width in zip(cells, widths, strict=True):
        keys.append((_cell_key(cell), width) if width else (keys[-1][0], 0))
    return tuple(keys)


@dataclass(frozen=True, slots=True)
class _Row:
    """A row's cells, and what they were computed from: the view and note, at ``at``; they
    read the same until ``until`` (``row_changes``)."""

    view: TaskView
    note: RowNote | None
    at: float
    until: float
    cells: Cells
    widths: tuple[int, ...]
    """How wide each cell is drawn (``cell_widths``): 0 for one another cell runs on over."""
    key: RowKey


class TaskList(ScrollView, can_focus=True):
    """The tasks, one on each line, under a header row, with a cursor.

    ``show`` puts in the views of one poll.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # Enter opens the detail view (the screen handles Selected); say so in the footer.
        Binding("enter", "select_cursor", "Open"),
        *bindings(MOVE_KEYS),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "task-list--header",
        "task-list--cursor",
        "task-list--marked",
        "task-list--note",
    }

    # DataTable's look, which the table had before it was a line widget.
    DEFAULT_CSS = """
    TaskList {
        height: 1fr;
        background: $surface;
        color: $foreground;
        scrollbar-size-vertical: 1;
        & > .task-list--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .task-list--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .task-list--note {
            text-style: italic;
        }
        & > .task-list--marked {
            background: $accent 25%;
            text-style: bold;
        }
        & > .task-list--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .task-list--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .task-list--header {
                background-tint: $foreground 5%;
            }
        }
    }
    """

    cursor: reactive[int] = reactive(0, init=False, repaint=False)
    """The row under the cursor (0 when there are no rows)."""

    class TaskMessage(Message):
        """A message about one task of the table."""

        def __init__(self, task_list: TaskList, task_id: str) -> None:
            super().__init__()
            self.task_list = task_list
            self.task_id = task_id

        @property
        def control(self) -> TaskList:
            return self.task_list

    class Highlighted(TaskMessage):
        """The cursor moved onto another task."""

    class Selected(TaskMessage):
        """Enter, or a double click on a row: open this task."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._columns: tuple[Column, ...] = ()
        self._views: tuple[TaskView, ...] = ()
        self._index: dict[str, int] | None = None
        """Task id -> row, built when something asks where a task is."""
        self._now = 0.0
        self._notes = NO_NOTES
        self._rows: LRUCache[str, _Row] = LRUCache(ROWS_KEPT)
        self._strips: LRUCache[Hashable, Strip] = LRUCache(STRIPS_KEPT)
        self._cells: LRUCache[Hashable, list[Segment]] = LRUCache(CELLS_KEPT)
        self._marked: frozenset[str] = frozenset()
        self._drawn: dict[int, tuple[RowKey, tuple[bool, bool]]] = {}
        """Row -> the key of the line last drawn there (its content, and whether it was under
        the cursor and marked)."""
        self.cells_touched = 0
        """Cells that read differently since the last ``show`` (a new row counts every cell)."""
        self._notes_under: tuple[Text, ...] = ()
        """Lines of words under the last row (``show_under``): about the table, not tasks."""
        self._wrapped: tuple[int, list[Text]] = (0, [])
        """``_notes_under`` wrapped, with the width they were wrapped to."""

    # What the table shows -------------------------------------------------------------------

    @property
    def shown_columns(self) -> tuple[Column, ...]:
        return self._columns

    @property
    def row_count(self) -> int:
        return len(self._views)

    @property
    def order(self) -> list[str]:
        return [view.task_id for view in self._views]

    @property
    def selected_task_id(self) -> str | None:
        """The task under the cursor, or None when the table is empty."""
        if not self._views:
            return None
        return self._views[min(self.cursor, len(self._views) - 1)].task_id

    def index_of(self, task_id: str) -> int | None:
        """The row of ``task_id``, or None when it is not shown."""
        if self._index is None:
            self._index = {view.task_id: i for i, view in enumerate(self._views)}
        return self._index.get(task_id)

    def cells_of(self, task_id: str) -> Cells:
        """What the row of ``task_id`` reads now (computed if it was not in view)."""
        index = self.index_of(task_id)
        if index is None:
            raise KeyError(f"{task_id!r} is not in the table")
        return self._row(index).cells

    def visible_rows(self) -> range:
        """The rows in view, under the header."""
        top = round(self.scroll_y)
        return range(top, min(top + max(self.size.height - 1, 0), len(self._views)))

    def visible_task_ids(self) -> list[str]:
        return [self._views[i].task_id for i in self.visible_rows()]

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Show these columns (the screen drops some at narrow widths): every line is redrawn."""
        columns = tuple(columns)
        if columns == self._columns:
            return
        self._columns = columns
        self._rows.clear()
        self._strips.clear()
        self._cells.clear()
        self._drawn.clear()
        self._resize()
        self.refresh()

    def show(
        self,
        views: Sequence[TaskView],
        now: float,
        notes: RowNotes = NO_NOTES,
        *,
        select: str | None = None,
    ) -> None:
        """Show ``views`` in this order, refreshing the lines in view that read differently.

        The cursor stays with its task when rows re-sort, except on the first row: that row
        means "the most urgent task", whichever it is now, so an untouched dashboard keeps
        showing the top of the list instead of scrolling after a task. ``select`` puts the
        cursor on that task wherever it is.
        """
        views = tuple(views)  # a snapshot's own tuple is kept as it is, not copied
        selected = select
        if selected is None and self.cursor > 0:
            selected = self.selected_task_id
        self.cells_touched = 0
        self._now, self._notes = now, notes
        if views is not self._views:
            count = len(self._views)
            self._views, self._index = views, None
            if len(views) != count:
                self._resize()
                if self._notes_under:
                    self.refresh()  # the lines under the rows moved with them
        place = None if selected is None else self.index_of(selected)
        self.cursor = place if place is not None else min(self.cursor, max(len(views) - 1, 0))
        self.refresh_changed()

    def show_under(self, lines: Sequence[Text]) -> None:
        """Show these lines under the last row, wrapped to the widget's width: words about the
        table (what it does not list), which no cursor, click or mark reaches."""
        lines = tuple(lines)
        if [(t.plain, t.style) for t in lines] == [(t.plain, t.style) for t in self._notes_under]:
            return
        self._notes_under, self._wrapped = lines, (0, [])
        self._resize()
        self.refresh()

    def _under(self) -> list[Text]:
        """The lines under the rows, wrapped to the width left of the scrollbar (always kept
        free, so a scrollbar that comes or goes does not wrap them again)."""
        width = max(self.region.width - 1, 20)
        if self._wrapped[0] != width:
            wrapped: list[Text] = []
            for line in self._notes_under:
                wrapped.extend(line.wrap(self.app.console, width))
            self._wrapped = (width, wrapped)
        return self._wrapped[1]

    def on_resize(self) -> None:
        if self._notes_under:
            self._resize()

    @property
    def marked(self) -> frozenset[str]:
        return self._marked

    def set_marked(self, marked: frozenset[str]) -> None:
        """Draw these tasks' rows as marked; the lines in view that changed are redrawn."""
        if marked != self._marked:
            self._marked = marked
            self.refresh_changed()

    def _line_state(self, index: int) -> tuple[bool, bool]:
        """Whether row ``index`` is under the cursor, and whether it is marked."""
        return index == self.cursor, self._views[index].task_id in self._marked

    def refresh_changed(self) -> None:
        """Bring the rows in view up to date and refresh what reads differently: the span of a
        line from its first to its last changed cell (a terminal keeps the cells that read
        alike), a whole line where the cursor came or went."""
        rows = self.visible_rows()
        for index in rows:
            line = (self._row(index).key, self._line_state(index))
            drawn = self._drawn.get(index)
            if drawn == line:
                continue
            if drawn is None or drawn[1] != line[1] or len(drawn[0]) != len(line[0]):
                self.refresh_lines(index + 1)  # line 0 is the header
                continue
            changed = [i for i, (a, b) in enumerate(zip(drawn[0], line[0], strict=True)) if a != b]
            self._refresh_cells(index, changed[0], changed[-1])
        for index in [i for i in self._drawn if i not in rows]:
            if index >= len(self._views) and index < rows.start + self.size.height:
                self.refresh_lines(index + 1)  # the rows shrank: blank it
            del self._drawn[index]

    def _refresh_cells(self, index: int, first: int, last: int) -> None:
        """Refresh the cells of row ``index`` from column ``first`` to ``last``."""
        step = 2 * CELL_PADDING
        x = sum(column.width + step for column in self._columns[:first])
        width = sum(column.width + step for column in self._columns[first : last + 1])
        scroll_x, scroll_y = self.scroll_offset
        self.refresh(Region(x - scroll_x, index + 1 - scroll_y, width, 1))

    def _row(self, index: int) -> _Row:
        """Row ``index``'s cells, computed again when its view or note changed or its cells
        may read differently by now."""
        view = self._views[index]
        note = self._notes.of(view)
        now = self._now
        kept = self._rows.get(view.task_id)
        if (
            kept is not None
            and kept.view is view
            and kept.note == note
            and kept.at <= now < kept.until
        ):
            return kept
        cells = row_cells(view, now, self._columns, note)
        widths = cell_widths(cells, self._columns)
        key = _row_key(cells, widths)
        if kept is None or len(kept.key) != len(key):
            self.cells_touched += len(key)
        else:
            self.cells_touched += sum(a != b for a, b in zip(kept.key, key, strict=True))
        row = _Row(view, note, now, row_changes(view, now, self._columns), cells, widths, key)
        self._rows.discard(view.task_id)  # set() keeps a key's first value
        self._rows.set(view.task_id, row)
        return row

    def _resize(self) -> None:
        width = sum(column.width + 2 * CELL_PADDING for column in self._columns)
        under = len(self._under()) if self._notes_under else 0
        self.virtual_size = Size(width, len(self._views) + 1 + under)

    # Cursor ---------------------------------------------------------------------------------

    def validate_cursor(self, cursor: int) -> int:
        return max(0, min(cursor, len(self._views) - 1))

    def watch_cursor(self, old: int, new: int) -> None:
        for index in (old, new):
            if index in self._drawn:
                self.refresh_lines(index + 1)
        self._scroll_to_cursor()
        if self._views:
            self.post_message(self.Highlighted(self, self._views[new].task_id))

    def _scroll_to_cursor(self) -> None:
        body = max(self.size.height - 1, 1)
        top = round(self.scroll_y)
        # On the last row, the lines under it come into view too (as many as fit with it).
        bottom = self.cursor
        if self._notes_under and self.cursor == len(self._views) - 1:
            bottom += min(len(self._under()), body - 1)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif bottom >= top + body:
            self.scroll_to(y=bottom - body + 1, animate=False, immediate=True)

    def _page(self) -> int:
        return max(self.size.height - 2, 1)

    def action_cursor_up(self) -> None:
        self.cursor -= 1

    def action_cursor_down(self) -> None:
        self.cursor += 1

    def action_page_up(self) -> None:
        self.cursor -= self._page()

    def action_page_down(self) -> None:
        self.cursor += self._page()

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = len(self._views) - 1

    def action_select_cursor(self) -> None:
        task_id = self.selected_task_id
        if task_id is not None:
            self.post_message(self.Selected(self, task_id))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return  # the header
        index = round(self.scroll_y) + offset.y - 1
        if index >= len(self._views):
            return
        # A click selects its row; a double click opens it (the first click selected it).
        self.cursor = index
        if event.chain >= 2:
            self.action_select_cursor()

    # Drawing --------------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        # A new theme or focus changes the colours under the same words.
        super().notify_style_update()
        self._strips.clear()
        self._cells.clear()
        self._drawn.clear()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)  # refreshes every line
        self._drawn.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        if y == 0:
            header = self.get_component_rich_style("task-list--header")
            strip = self._strip(("header", self._columns), base + header, None, width)
        else:
            index = scroll_y + y - 1
            if index >= len(self._views):
                return self._note_line(index - len(self._views), base, width)
            row = self._row(index)
            state = self._line_state(index)
            under_cursor, marked = state
            cursor = self.get_component_rich_style("task-list--cursor") if under_cursor else None
            if marked:
                base = base + self.get_component_rich_style("task-list--marked")
            strip = self._strip(row.key, base, cursor, width, row.cells, row.widths)
            if marked:
                glyph = Segment(MARKED_GLYPH, base + cursor if cursor else base)
                strip = Strip.join([Strip([glyph], 1), strip.crop(1, strip.cell_length)])
            self._drawn[index] = (row.key, state)
        if scroll_x or strip.cell_length != width:
            strip = strip.crop_extend(scroll_x, scroll_x + width, base)
        return strip

    def _note_line(self, index: int, base: Style, width: int) -> Strip:
        """Line ``index`` under the rows (blank past them); it does not scroll sideways."""
        under = self._under() if self._notes_under else []
        if index >= len(under):
            return Strip.blank(width, base)
        style = base + self.get_component_rich_style("task-list--note")
        key = ("note", under[index].plain, under[index].style, index)
        return self._strip(key, style, None, width, note=under[index])

    def _strip(
        self,
        key: Hashable,
        base: Style,
        cursor: Style | None,
        width: int,
        cells: Cells | None = None,
        widths: tuple[int, ...] = (),
        note: Text | None = None,
    ) -> Strip:
        """One line, from the cache when it reads the same at this width and in these styles."""
        cache_key = (key, base, cursor, width)
        strip = self._strips.get(cache_key)
        if strip is None:
            if note is None:
                strip = self._draw(cells, widths, base, cursor, width)
            else:
                text = Text(end="")
                text.append_text(note)  # its style as a span: render() drops a Text's own
                segments = Segment.apply_style(text.render(self.app.console), base)
                strip = Strip(segments).extend_cell_length(width, base).crop(0, width)
            self._strips.set(cache_key, strip)
        return strip

    def _draw(
        self,
        cells: Cells | None,
        widths: tuple[int, ...],
        base: Style,
        cursor: Style | None,
        width: int,
    ) -> Strip:
        """The header (no cells) or a row: its cells side by side (a cell that runs on takes
        the place of the ones it covers), then the row's style out to the widget's edge."""
        segments: list[Segment] = []
        for index, column in enumerate(self._columns):
            if cells is None:
                segments.extend(self._cell(Text(column.label), column.width, base, cursor))
            elif widths[index]:
                segments.extend(self._cell(cells[index], widths[index], base, cursor))
        used = sum(column.width + 2 * CELL_PADDING for column in self._columns)
        if width > used:
            segments.append(Segment(" " * (width - used), base + cursor if cursor else base))
        return Strip(segments, max(width, used))

    def _cell(self, cell: Text, width: int, base: Style, cursor: Style | None) -> list[Segment]:
        """One cell padded to its column, the cursor's style over its own, over the row's.

        Kept by what the cell reads: where one cell of a row ticks (an age), the line is drawn
        from the other cells' segments as they were."""
        cache_key = (_cell_key(cell), width, base, cursor)
        segments = self._cells.get(cache_key)
        if segments is None:
            if cell.cell_len > width:
                cell = cell.copy()
                cell.truncate(width, overflow="ellipsis")
            pad = " " * CELL_PADDING
            text = Text(pad, end="")
            text.append_text(cell)
            text.append(" " * (width - cell.cell_len) + pad)
            segments = list(Segment.apply_style(text.render(self.app.console), base, cursor))
            self._cells.set(cache_key, segments)
        return segments
