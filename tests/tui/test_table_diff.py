"""The table is diffed by task id: an update touches only the rows that changed."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from rich.text import Text

from tests.tui.helpers import TableApp
from zombietop.monitor import TaskView, build_snapshot
from zombietop.tui.cells import COLUMNS
from zombietop.tui.sample import NOW, sample_config, synthetic_records
from zombietop.tui.widgets.task_table import TaskTable

N = 10_000


def task_of(row_key: object) -> str:
    """The task id of a row key as update_cell received it (a RowKey or its text)."""
    return str(getattr(row_key, "value", row_key))


async def test_ten_changed_of_ten_thousand_touch_only_those_rows() -> None:
    config = sample_config()
    records = synthetic_records(N)
    before = build_snapshot(NOW, records, config, {})
    changed = {f"job-{i:05d}" for i in range(0, N, N // 10)}
    after_records = [
        replace(r, heartbeat=replace(r.heartbeat, progress=99.5, written_at=NOW - 1))
        if r.task.task_id in changed and r.heartbeat is not None
        else r
        for r in records
    ]
    after = build_snapshot(NOW, after_records, config, {})

    app = TableApp()
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(before.tasks, NOW, {})
        await pilot.pause()
        assert table.row_count == N
        table.move_cursor(row=table.get_row_index("job-05000"))
        selected = table.selected_task_id

        calls: dict[str, list[object]] = {
            "update_cell": [],
            "add_row": [],
            "remove_row": [],
            "clear": [],
        }
        for name, log in calls.items():
            original = getattr(table, name)

            def spy(*args, _original=original, _log=log, **kwargs):  # type: ignore[no-untyped-def]
                _log.append(args)
                return _original(*args, **kwargs)

            setattr(table, name, spy)

        started = time.perf_counter()
        table.show(after.tasks, NOW, {})
        elapsed = time.perf_counter() - started
        await pilot.pause()
        # Only rows in or near the viewport are formatted at once; the rest when they scroll in.
        visible = set(table.visible_task_ids())
        touched_now = {task_of(args[0]) for args in calls["update_cell"]}
        assert touched_now == changed & visible
        table.bring_all_up_to_date()

    touched_rows = {task_of(args[0]) for args in calls["update_cell"]}
    assert touched_rows == changed
    # Progress cell and heartbeat cell per changed row, nothing else.
    assert len(calls["update_cell"]) == 2 * len(changed)
    assert calls["add_row"] == calls["remove_row"] == calls["clear"] == []
    # The changed rows now beat more recently, so they moved; the cursor stayed on its task.
    assert table.selected_task_id == selected
    assert elapsed < 5.0


async def test_rows_moved_by_polls_stay_where_the_order_says() -> None:
    """Re-sorts rewrite only the span of rows that moved: the table must still map every row
    index to the right task, through moves, additions and removals."""
    import random

    from textual.coordinate import Coordinate

    config = sample_config()
    records = synthetic_records(300)
    rng = random.Random(7)
    app = TableApp()
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        for step in range(12):
            views = list(build_snapshot(NOW + step, records, config, {}).tasks)
            if step % 4 == 3:
                views = views[5:] + views[:2]  # some gone, some reordered
            else:
                lo = rng.randrange(len(views) - 20)
                span = views[lo : lo + 20]
                rng.shuffle(span)
                views[lo : lo + 20] = span
            table.show(views, NOW + step, {})
            await pilot.pause()
            order = [view.task_id for view in views]
            shown = [
                table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value
                for i in range(table.row_count)
            ]
            assert shown == order, f"step {step}"
            assert all(table.get_row_index(t) == i for i, t in enumerate(order))


def test_row_order_answers_both_ways_and_only_appends() -> None:
    from textual.widgets.data_table import RowKey

    from zombietop.tui.widgets.row_order import LineOffsets, RowOrder

    keys = {name: RowKey(name) for name in "abc"}
    order = RowOrder(["b", "a"], keys)
    assert [order.get(keys[n]) for n in "ab"] == [1, 0] and order.get(keys["c"]) is None
    assert order.get_key(0) is keys["b"] and order.get_key(2) is None and order.get_key(-1) is None
    assert keys["a"] in order and keys["c"] not in order and len(order) == 2
    order[keys["c"]] = 2  # DataTable.add_row
    assert list(order) == [keys["b"], keys["a"], keys["c"]] and order.get(keys["c"]) == 2
    with pytest.raises(ValueError, match="only appended"):
        order[keys["a"]] = 0
    assert LineOffsets(order.order, keys)[1:] == [(keys["a"], 0), (keys["c"], 0)]
    order.put([0, 2], ["c", "b"])  # a re-sort: b and c trade places, the map follows
    assert list(order) == [keys["c"], keys["a"], keys["b"]]
    assert [order.get(keys[n]) for n in "cab"] == [0, 1, 2]
    unasked = RowOrder(["a", "b"], keys)  # its map is built when first asked, from the order
    unasked.put([0, 1], ["b", "a"])
    assert [unasked.get(keys[n]) for n in "ba"] == [0, 1]


async def test_a_row_changed_below_the_fold_is_brought_up_to_date_when_it_scrolls_in() -> None:
    config = sample_config()
    records = synthetic_records(300)
    app = TableApp()
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        views = list(build_snapshot(NOW, records, config, {}).tasks)
        table.show(views, NOW, {})
        await pilot.pause()
        far = views[250]
        assert far.heartbeat is not None
        moved = replace(far, heartbeat=replace(far.heartbeat, progress=3.0))
        table.show([*views[:250], moved, *views[251:]], NOW, {})
        await pilot.pause()
        assert "3%" not in str(table.get_cell(far.task_id, "progress"))
        table.scroll_to(y=240, animate=False)
        await pilot.pause()
        assert far.task_id in table.visible_task_ids()
        assert "3%" in str(table.get_cell(far.task_id, "progress"))


async def test_a_cell_that_keeps_its_words_but_changes_colour_is_rewritten() -> None:
    """A task that stalls keeps its progress bar and percent, but the bar turns from green to
    red and the id to bold. Rich's Text equality compares words and spans, not a text's own
    style: the table compares the style too."""
    config = sample_config()
    records = synthetic_records(3)
    app = TableApp()
    async with app.run_test(size=(160, 20)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(build_snapshot(NOW, records, config, {}).tasks, NOW, {})
        await pilot.pause()
        task_id = records[1].task.task_id
        before = table.get_cell(task_id, "progress")
        assert isinstance(before, Text) and before.style == "green"
        later = NOW + 2 * config.limits_for("batch").heartbeat_timeout
        stalled = build_snapshot(later, records, config, {})
        assert stalled.by_id()[task_id].health.pages
        table.show(stalled.tasks, later, {})
        await pilot.pause()
        after = table.get_cell(task_id, "progress")
        assert isinstance(after, Text) and after.plain == before.plain
        assert after.style == "red"
        task = table.get_cell(task_id, "task")
        assert isinstance(task, Text) and task.style == "bold"


@pytest.mark.parametrize("width", [160, 80])
async def test_polls_of_the_same_tasks_are_followed_by_identity_and_read_as_they_should(
    width: int,
) -> None:
    """A poll that brings the tasks the rows show (re-judged views, re-sorts, the same tuple) is
    followed without the rebuild pass; one where a task came or went at the same count is not.
    Either way every row, its index, the visible cells, the drawn lines (the table's own way,
    and DataTable's on a terminal narrower than the table), the repaints and the cursor are
    right."""
    import random

    from textual.coordinate import Coordinate

    from tests.tui.test_repaint import spy_refresh
    from zombietop.tui.cells import row_cells, same_cell

    config = sample_config()
    views = list(build_snapshot(NOW, synthetic_records(300), config, {}).tasks)
    rng = random.Random(11)
    fresh = iter(range(10**6))

    def rejudged(view: TaskView) -> TaskView:
        assert view.heartbeat is not None
        progress = float(rng.randrange(100))
        return replace(view, heartbeat=replace(view.heartbeat, progress=progress))

    app = TableApp()
    async with app.run_test(size=(width, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(tuple(views), NOW, {})
        await pilot.pause()
        rebuilt: list[str] = []
        original = table._show_other_tasks

        def spy(*args: Any) -> None:
            rebuilt.append("rebuilt")
            original(*args)

        table._show_other_tasks = spy  # type: ignore[method-assign]
        for step in range(40):
            kind = step % 8
            before = [view.task_id for view in views]
            if kind == 0:  # re-judged in place, on screen and off it
                for i in [*rng.sample(range(len(views)), 12), 0, len(views) - 1]:
                    views[i] = rejudged(views[i])
            elif kind == 1:  # a span re-sorted, across the bottom of the screen
                lo = rng.randrange(len(views) - 40)
                span = views[lo : lo + 40]
                rng.shuffle(span)
                views[lo : lo + 40] = span
            elif kind == 2:  # a task that beat moves down, re-judged
                i, j = sorted(rng.sample(range(len(views)), 2))
                views.insert(j, rejudged(views.pop(i)))
            elif kind == 3:  # only the first and the last rows trade places
                views[0], views[-1] = views[-1], views[0]
            elif kind == 4:  # the very tuple shown again
                views = list(table._views)
            elif kind == 5:  # a task gone and another come, as many rows as before
                i = rng.randrange(len(views))
                task = replace(views[i].task, task_id=f"new-{next(fresh):05d}")
                views[i] = replace(views[i], task=task)
            elif kind == 6:  # scrolled, then a re-sort that moves rows on the new screen
                table.scroll_to(y=rng.randrange(0, 250), animate=False)
                await pilot.pause()
                views.reverse()
            else:  # the cursor on a task below the top, which must stay with it
                table.move_cursor(row=rng.randrange(1, 25), animate=False)
                await pilot.pause()
                views[0:60] = views[0:60][::-1]
            cursor_task = table.selected_task_id if table.cursor_row > 0 else None
            rebuilt.clear()
            top = int(table.scroll_y)
            on_screen = range(top, top + table.size.height - table.header_height)
            drawn = {  # what each place on screen shows before the poll
                i: tuple(table.get_cell(before[i], c.key) for c in table.shown_columns)
                for i in on_screen
                if i < len(before)
            }
            calls = spy_refresh(table)
            table.show(table._views if kind == 4 else tuple(views), NOW, {})
            # The cursor may scroll the rows after its task: a scroll repaints every line.
            scrolled, top = int(table.scroll_y) != top, int(table.scroll_y)
            on_screen = range(top, top + table.size.height - table.header_height)
            repainted: dict[int, set[int]] = {}  # row -> the x of every cell repainted in it
            for found, _ in calls:
                for region in found:  # where rows are on screen, under the header
                    row = region.y - table.header_height + top
                    repainted.setdefault(row, set()).update(range(region.x, region.right))
            del table.refresh
            assert rebuilt == (["rebuilt"] if kind == 5 else []), f"step {step}"

            order = [view.task_id for view in views]
            assert table.order == order, f"step {step}"
            assert [
                table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value
                for i in range(table.row_count)
            ] == order, f"step {step}"
            assert all(table.get_row_index(t) == i for i, t in enumerate(order)), f"step {step}"
            lines = drawn_rows(table)
            spans = table._spans()
            for i in range(top, min(top + table.size.height, len(order))):
                cells = row_cells(views[i], NOW, table.shown_columns, {})
                got = tuple(table.get_cell(order[i], c.key) for c in table.shown_columns)
                assert got == cells, f"step {step} row {i}"
                if kind != 5 and not scrolled and i in on_screen and before[i] != order[i]:
                    # Another task's row is here now: every cell that reads differently from
                    # the one drawn here is repainted (a terminal keeps the ones that read alike).
                    for column, (was, now) in enumerate(zip(drawn[i], cells, strict=True)):
                        x, cell_width = spans[column]
                        if not same_cell(was, now):
                            assert set(range(x, x + cell_width)) <= repainted.get(i, set()), (
                                f"step {step}: row {i} moved, column {column} not repainted"
                            )
                if i in on_screen:  # the screen's line reads as the row does now
                    line = lines[i - top]
                    assert all(cell.plain in line for cell in cells[:3]), f"step {step} row {i}"
            if cursor_task is not None:
                assert table.selected_task_id == cursor_task, f"step {step}"
            else:  # the first row means the most urgent task, whichever it is now
                assert table.cursor_row == 0, f"step {step}"
            await pilot.pause()
        table.bring_all_up_to_date()
        for view in views:
            cells = row_cells(view, NOW, table.shown_columns, {})
            assert tuple(table.get_cell(view.task_id, c.key) for c in table.shown_columns) == cells


async def test_tasks_that_leave_go_at_once_and_leave_the_table_as_remove_row_would() -> None:
    """Rows of tasks gone are removed together, not by DataTable.remove_row (which rebuilds its
    map of row indices for each row, 30 ms a row at 10,000), and the table is left as remove_row
    leaves a DataTable: rows in order, the cursor clamped, the scrollable height."""
    from textual.app import App, ComposeResult
    from textual.coordinate import Coordinate
    from textual.widgets import DataTable

    from zombietop.tui.cells import row_cells

    class Both(App[None]):
        def compose(self) -> ComposeResult:
            yield TaskTable()
            yield DataTable[object](id="reference", cursor_type="row")

    views = list(build_snapshot(NOW, synthetic_records(120), sample_config(), {}).tasks)
    app = Both()
    async with app.run_test(size=(160, 60)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(tuple(views), NOW, {})
        reference = app.query_one("#reference", DataTable)
        for column in COLUMNS:
            reference.add_column(column.label, width=column.width, key=column.key)
        for view in views:
            reference.add_row(*row_cells(view, NOW, COLUMNS, {}), key=view.task_id)
        await pilot.pause()
        for each in (table, reference):
            each.move_cursor(row=119, animate=False)

        gone = {views[i].task_id for i in (0, 3, 50, 118, 119)}
        table.show(tuple(view for view in views if view.task_id not in gone), NOW, {})
        for task_id in gone:
            reference.remove_row(task_id)
        await pilot.pause()

        def keys(each: DataTable[object]) -> list[object]:
            return [each.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value for i in range(115)]

        assert table.row_count == reference.row_count == 115
        assert keys(table) == keys(reference)
        assert all(table.get_row_index(str(key)) == i for i, key in enumerate(keys(table)))
        assert table.cursor_coordinate == reference.cursor_coordinate == Coordinate(114, 0)
        assert table.virtual_size.height == reference.virtual_size.height == 116
        # Nothing is held for a task gone.
        left = {view.task_id for view in views} - gone
        assert table._shown.keys() == table._compared.keys() == table._row_keys.keys() == left


def drawn_rows(table: TaskTable) -> list[str]:
    """The body lines as the screen gets them: through the widget's line cache, which only a
    refresh of the line clears."""
    from textual.geometry import Region

    strips = table.render_lines(Region(0, 0, table.size.width, table.size.height))
    return [strip.text for strip in strips[table.header_height :]]


@pytest.mark.parametrize(
    ("keep", "add"),
    [
        pytest.param(lambda ids: ids[:2] + ids[3:], 1, id="one gone on screen, one come below"),
        pytest.param(lambda ids: ids[:-3], 0, id="the last rows gone"),
        pytest.param(lambda ids: ids[4:], 4, id="the first rows gone, as many come"),
    ],
)
async def test_rows_of_tasks_gone_are_drawn_away(
    keep: Callable[[list[str]], list[str]], add: int
) -> None:
    """Every line on screen reads as the new order says, blank below the last row."""
    views = build_snapshot(NOW, synthetic_records(14), sample_config(), {}).tasks
    app = TableApp()
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(views[:10], NOW, {})
        await pilot.pause()
        by_id = {view.task_id: view for view in views}
        ids = keep([view.task_id for view in views[:10]]) + [v.task_id for v in views[10:][:add]]
        table.show(tuple(by_id[task_id] for task_id in ids), NOW, {})
        await pilot.pause()
        lines = drawn_rows(table)
        assert [line.split()[2] for line in lines[: len(ids)]] == ids
        assert all(not line.strip() for line in lines[len(ids) :])


async def test_a_task_that_comes_in_above_others_moves_them_down_on_screen() -> None:
    """No task gone, one new at the top: every row below it is another task's place now, and
    each line on screen reads as the new order says."""
    views = build_snapshot(NOW, synthetic_records(12), sample_config(), {}).tasks
    app = TableApp()
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.query_one(TaskTable)
        table.set_columns(COLUMNS)
        table.show(views[1:], NOW, {})
        await pilot.pause()
        table.show(views, NOW, {})
        await pilot.pause()
        lines = drawn_rows(table)
        assert [line.split()[2] for line in lines[: len(views)]] == [v.task_id for v in views]
