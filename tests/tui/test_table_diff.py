"""The table is diffed by task id: an update touches only the rows that changed."""

from __future__ import annotations

import time
from dataclasses import replace

from rich.text import Text

from core.monitor import build_snapshot
from tests.tui.helpers import TableApp
from tui.cells import COLUMNS
from tui.sample import NOW, sample_config, synthetic_records
from tui.widgets.task_table import TaskTable

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
    import pytest
    from textual.widgets.data_table import RowKey

    from tui.widgets.row_order import LineOffsets, RowOrder

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
