"""The task table (TaskList): diffed by task id, only what changed in view refreshed, the cursor on
its task, drawn lines kept by what they read, keys and the mouse."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

import pytest
from rich.text import Text
from textual import events
from textual.geometry import Region
from textual.pilot import Pilot

from tests.tui.helpers import TableApp
from zombietop.judge.monitor import TaskView, build_snapshot
from zombietop.tui.cells import BAR_STYLE, COLUMNS, RowNotes, columns_for_width, row_cells
from zombietop.tui.testing import NOW, sample_config, synthetic_records
from zombietop.tui.widgets.task_list import TaskList


class Recording(TableApp):
    """The table alone, keeping every message it posts."""

    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[str] = []
        self.selected: list[str] = []

    def on_task_list_highlighted(self, message: TaskList.Highlighted) -> None:
        self.highlighted.append(message.task_id)

    def on_task_list_selected(self, message: TaskList.Selected) -> None:
        self.selected.append(message.task_id)


@contextlib.asynccontextmanager
async def showing(
    views: Sequence[TaskView], size: tuple[int, int], app: TableApp | None = None
) -> AsyncIterator[tuple[TaskList, Pilot[None]]]:
    """The table alone at ``size``, every column, showing ``views`` at NOW."""
    app = app or TableApp()
    async with app.run_test(size=size) as pilot:
        table = app.query_one(TaskList)
        table.set_columns(COLUMNS)
        table.show(views, NOW)
        await pilot.pause()
        yield table, pilot


def views_of(count: int, now: float = NOW) -> list[TaskView]:
    return list(build_snapshot(now, synthetic_records(count), sample_config(), {}).tasks)


def spy_refresh(widget: TaskList) -> list[Region]:
    """Every region refreshed from now on (a whole-widget refresh shows as its size)."""
    regions: list[Region] = []
    original = widget.refresh

    def spy(*found: Region, **kwargs: object) -> object:
        regions.extend(found or [widget.size.region])
        return original(*found, **kwargs)

    widget.refresh = spy  # type: ignore[method-assign]
    return regions


def lines(table: TaskList) -> list[str]:
    """The body lines as drawn now, top to bottom, under the header."""
    return [table.render_line(y).text for y in range(1, table.size.height)]


def bar_styles(cell: Text) -> set[object]:
    """The styles of a progress cell: its bar's only."""
    return {cell.style, *(span.style for span in cell.spans)} - {""}


def rejudged(view: TaskView, progress: float) -> TaskView:
    assert view.heartbeat is not None
    return replace(view, heartbeat=replace(view.heartbeat, progress=progress))


async def test_ten_changed_of_ten_thousand_compute_and_refresh_only_those_in_view() -> None:
    views = views_of(10_000)
    changed = set(range(0, 10_000, 1_000)) | {3, 7}
    after = [rejudged(v, 99.5) if i in changed else v for i, v in enumerate(views)]
    async with showing(views, (200, 50)) as (table, pilot):
        assert table.row_count == 10_000
        regions = spy_refresh(table)
        table.show(after, NOW)
        # Rows 0, 3 and 7 are in view: their progress cell alone; the others when they scroll in.
        assert table.cells_touched == 3
        progress = [c.key for c in COLUMNS].index("progress")
        x = sum(c.width + 2 for c in COLUMNS[:progress])
        assert sorted((r.y, r.x, r.width) for r in regions) == [
            (1 + 0, x, COLUMNS[progress].width + 2),
            (1 + 3, x, COLUMNS[progress].width + 2),
            (1 + 7, x, COLUMNS[progress].width + 2),
        ]
        await pilot.pause()
        assert "99.5%" in lines(table)[3]
        assert table.cells_of(after[5000].task_id) == row_cells(after[5000], NOW, COLUMNS)


async def test_rows_moved_by_polls_are_where_the_order_says() -> None:
    """Through re-sorts, arrivals and departures, every row, index and drawn line follows."""
    views = views_of(300)
    rng = random.Random(7)
    app = TableApp()
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.query_one(TaskList)
        table.set_columns(COLUMNS)
        for step in range(16):
            if step % 4 == 3:
                views = views[5:] + views[:2]  # some gone, some reordered
            elif step % 4 == 2:
                new = replace(views[0].task, task_id=f"new-{step:03d}")
                views.insert(rng.randrange(20), replace(views[0], task=new))
            else:
                lo = rng.randrange(len(views) - 40)
                span = views[lo : lo + 40]
                rng.shuffle(span)
                views[lo : lo + 40] = span
            if step % 5 == 4:
                table.scroll_to(y=rng.randrange(0, 200), animate=False)
                await pilot.pause()
            table.show(tuple(views), NOW + step)
            await pilot.pause()
            order = [view.task_id for view in views]
            assert table.order == order, f"step {step}"
            assert all(table.index_of(t) == i for i, t in enumerate(order)), f"step {step}"
            top = round(table.scroll_y)
            for y, line in enumerate(lines(table)):
                if top + y < len(order):
                    assert line.split()[2] == order[top + y], f"step {step} line {y}"
                else:
                    assert not line.strip(), f"step {step} line {y}"


async def test_a_row_changed_below_the_fold_is_up_to_date_when_it_scrolls_in() -> None:
    views = views_of(300)
    async with showing(views, (160, 30)) as (table, pilot):
        moved = rejudged(views[250], 3.0)
        table.show([*views[:250], moved, *views[251:]], NOW)
        assert table.cells_touched == 0  # not in view: not computed
        table.scroll_to(y=240, animate=False)
        await pilot.pause()
        assert moved.task_id in table.visible_task_ids()
        assert "3%" in lines(table)[250 - round(table.scroll_y)]


async def test_a_cell_that_keeps_its_words_but_changes_colour_is_redrawn() -> None:
    """A task that stalls keeps its id's words, but the id turns bold; its progress bar keeps
    its one colour (a bar says how far, not how bad)."""
    config = sample_config()
    records = synthetic_records(3)
    async with showing(build_snapshot(NOW, records, config, {}).tasks, (160, 20)) as (table, pilot):
        task_id = records[1].task.task_id
        before = table.cells_of(task_id)
        assert bar_styles(before[2]) == {BAR_STYLE} and before[1].style == ""
        later = NOW + 2 * config.limits_for("batch").heartbeat_timeout
        stalled = build_snapshot(later, records, config, {})
        assert stalled.by_id()[task_id].health.pages
        regions = spy_refresh(table)
        table.show(stalled.tasks, later)
        after = table.cells_of(task_id)
        assert after[2].plain == before[2].plain and bar_styles(after[2]) == {BAR_STYLE}
        assert after[1].plain == before[1].plain and after[1].style == "bold"
        index = table.index_of(task_id)
        assert index is not None
        assert any(region.y == index + 1 for region in regions)
        await pilot.pause()
        strip = table.render_line(index + 1)
        assert any(seg.style is not None and seg.style.bold for seg in strip if "job" in seg.text)


async def test_a_tick_refreshes_the_changed_cells_and_a_reorder_the_rows_that_moved() -> None:
    views = views_of(200)
    async with showing(views, (200, 30)) as (table, pilot):
        regions = spy_refresh(table)
        ticked = views_of(200, NOW + 1)
        table.show(ticked, NOW + 1)
        # Every row in view is compared; what reads differently is refreshed, cells not lines.
        ticking = {"health", "heartbeat", "lease", "stage_budget", "task_budget"}
        starts = {sum(c.width + 2 for c in COLUMNS[:i]): c.key for i, c in enumerate(COLUMNS)}
        assert regions and all(region.height == 1 for region in regions)
        assert {starts[region.x] for region in regions} <= ticking
        assert all(region.right <= table.virtual_size.width for region in regions)
        await pilot.pause()
        regions.clear()
        swapped = list(ticked)
        swapped[2], swapped[5] = swapped[5], swapped[2]
        swapped[150], swapped[160] = swapped[160], swapped[150]  # below the fold
        table.show(swapped, NOW + 1)
        assert sorted(region.y for region in regions) == [1 + 2, 1 + 5]
        assert table.index_of(swapped[160].task_id) == 160


async def test_a_line_is_drawn_once_for_what_it_reads_and_width() -> None:
    """A row that moves to another line keeps its drawn strip; a new width draws anew."""
    views = views_of(40)
    async with showing(views, (160, 30)) as (table, pilot):
        drawn: list[object] = []
        original = table._draw

        def spy(*args: object) -> object:
            drawn.append(args)
            return original(*args)  # type: ignore[arg-type]

        table._draw = spy  # type: ignore[method-assign]
        before = {view.task_id: table.render_line(1 + i) for i, view in enumerate(views[:20])}
        assert drawn == []
        views[3], views[9] = views[9], views[3]
        table.show(views, NOW)
        await pilot.pause()
        assert drawn == []
        assert table.render_line(1 + 3) is before[views[3].task_id]
        await pilot.resize_terminal(150, 30)
        await pilot.pause()
        assert drawn  # another width
        assert table.render_line(1 + 3).cell_length == table.size.width


async def test_the_cursor_stays_on_its_task_and_on_the_first_row_when_it_was_there() -> None:
    views = views_of(100)
    async with showing(views, (160, 20)) as (table, pilot):
        table.focus()
        await pilot.pause()
        first = views[0].task_id
        table.show(views[::-1], NOW)
        assert table.cursor == 0 and table.selected_task_id == views[-1].task_id
        await pilot.press("down", "down")
        task_id = table.selected_task_id
        assert task_id == views[-3].task_id
        table.show(views, NOW)
        assert table.selected_task_id == task_id and table.cursor == 97
        await pilot.pause()
        assert 97 in table.visible_rows()  # scrolled to it
        table.show(views, NOW, select=first)
        assert table.cursor == 0
        table.show(views[:10], NOW, select=views[50].task_id)  # gone: clamped
        assert table.cursor == 0


async def test_keys_move_the_cursor_and_keep_it_in_view() -> None:
    views = views_of(100)
    app = Recording()
    highlighted = app.highlighted
    async with showing(views, (160, 20), app) as (table, pilot):
        table.focus()
        await pilot.pause()
        highlighted.clear()
        page = table.size.height - 2
        for key, row in (
            ("down", 1),
            ("up", 0),
            ("up", 0),
            ("pagedown", page),
            ("pagedown", 2 * page),
            ("pageup", page),
            ("end", 99),
            ("home", 0),
        ):
            await pilot.press(key)
            await pilot.pause()
            assert table.cursor == row, key
            assert row in table.visible_rows(), key
        assert highlighted[:2] == [views[1].task_id, views[0].task_id]


async def test_the_mouse_selects_and_scrolls() -> None:
    views = views_of(100)
    app = Recording()
    selected = app.selected
    async with showing(views, (160, 20), app) as (table, pilot):
        await pilot.click(TaskList, offset=(20, 4))  # the fourth row under the header
        await pilot.pause()
        assert table.cursor == 3 and selected == []
        await pilot.click(TaskList, offset=(20, 4))  # a click only selects, even again
        await pilot.pause()
        assert table.cursor == 3 and selected == []
        await pilot.double_click(TaskList, offset=(20, 5))  # a double click opens its row
        await pilot.pause()
        assert table.cursor == 4 and selected == [views[4].task_id]
        await pilot.click(TaskList, offset=(20, 0))  # the header: nothing
        await pilot.pause()
        assert table.cursor == 4
        for _ in range(3):  # the wheel, as the terminal sends it over the table
            table.post_message(events.MouseScrollDown(table, 20, 5, 0, 1, 0, False, False, False))
        await pilot.pause()
        assert table.scroll_y > 0
        assert lines(table)[0].split()[2] == views[round(table.scroll_y)].task_id
        await pilot.press("enter")
        await pilot.pause()
        assert selected == [views[4].task_id] * 2


@pytest.mark.parametrize("width", [80, 100, 160])
async def test_narrow_terminals_drop_columns_by_priority_under_one_header(width: int) -> None:
    views = views_of(5)
    app = TableApp()
    async with app.run_test(size=(width, 12)) as pilot:
        table = app.query_one(TaskList)
        columns = columns_for_width(width - 1)
        table.set_columns(columns)
        table.show(views, NOW)
        await pilot.pause()
        header = table.render_line(0).text
        assert header.split() == " ".join(c.label for c in columns).split()
        assert [c.key for c in columns[:5]] == ["health", "task", "progress", "heartbeat", "lease"]
        line = lines(table)[0]
        for cell in row_cells(views[0], NOW, columns):
            assert cell.plain in line


async def test_untrusted_words_wider_than_their_column_are_cut_with_an_ellipsis() -> None:
    views = views_of(2)
    long = replace(views[0].task, task_id="x" * 40)
    app = TableApp()
    async with app.run_test(size=(160, 12)) as pilot:
        table = app.query_one(TaskList)
        table.set_columns(COLUMNS)
        table.show([replace(views[0], task=long), views[1]], NOW, RowNotes({"x" * 40: "term sent"}))
        await pilot.pause()
        line = lines(table)[0]
        # Cut in the middle: the end of an id tells one run from the next (``middle_cut``).
        assert "x" * 5 + "…" + "x" * 12 + " " in line and "x" * 19 not in line
        assert "↯" not in line  # the id is what matters most: no mark crops it
        assert table.render_line(1).cell_length == table.size.width
        assert isinstance(table.cells_of("x" * 40)[1], Text)
