"""The table is diffed by task id: an update touches only the rows that changed."""

from __future__ import annotations

import time
from dataclasses import replace

from textual.app import App, ComposeResult

from core.monitor import build_snapshot
from tui.cells import COLUMNS
from tui.sample import NOW, sample_config, synthetic_records
from tui.widgets.task_table import TaskTable

N = 10_000


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TaskTable()


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
        touched_now = {str(args[0]) for args in calls["update_cell"]}
        assert touched_now == changed & visible
        table.bring_all_up_to_date()

    touched_rows = {str(args[0]) for args in calls["update_cell"]}
    assert touched_rows == changed
    # Progress cell and heartbeat cell per changed row, nothing else.
    assert len(calls["update_cell"]) == 2 * len(changed)
    assert calls["add_row"] == calls["remove_row"] == calls["clear"] == []
    # The changed rows now beat more recently, so they moved; the cursor stayed on its task.
    assert table.selected_task_id == selected
    assert elapsed < 5.0
