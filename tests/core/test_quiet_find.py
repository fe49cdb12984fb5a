"""The dashboard's filter on a large store: the quiet tasks a poll only counts are found by id or
stage (``Store.find_quiet``), read whole, judged and listed, and no longer counted."""

from __future__ import annotations

from dataclasses import replace

import pytest

import zombietop.judge.monitor as monitor_module
from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.health import Health
from zombietop.heartbeat_line import BeatLine
from zombietop.judge.monitor import Monitor
from zombietop.judge.quiet import quiet_bounds
from zombietop.model import TaskState
from zombietop.store import Store

HERE = "this-host"

pytestmark = pytest.mark.backends("postgresql")


async def healthy(store: Store, task_id: str, stage: str = "load") -> int:
    """A running task with a fresh reported beat: quiet. Return its lease token."""
    await store.create_task(
        task_id=task_id, run_id=task_id, step="w", step_type="batch", actor="test"
    )
    token = (await store.acquire_lease(task_id, owner="w", ttl=3600.0)).token
    await store.record_heartbeat(
        task_id, BeatLine(stage=stage, progress=1.0), owner="w", token=token
    )
    return token


async def queued(store: Store, task_id: str) -> None:
    await store.create_task(
        task_id=task_id, run_id=task_id, step="w", step_type="batch", actor="test"
    )


async def found(store: Store, text: str, limit: int = 50) -> list[str]:
    bounds = quiet_bounds(await store.now(), default_config(), HERE)
    records = await store.find_quiet(text, bounds.params(), limit)
    return [record.task.task_id for record in records]


async def test_the_store_finds_quiet_tasks_by_part_of_their_id_or_stage_in_any_case(
    store: Store, clock: FakeClock
) -> None:
    await healthy(store, "stale-alpha-04")
    token = await healthy(store, "done-alpha-05")
    await store.finish_task("done-alpha-05", owner="w", token=token, state=TaskState.SUCCEEDED)
    clock.advance(200.0)  # stale-alpha-04's beat is past the 2 m timeout: loud, read anyway
    await healthy(store, "Export-Alpha-01")
    await healthy(store, "export-beta-02", stage="Transform")
    await queued(store, "import-ALPHA-03b")

    assert await found(store, "alpha") == ["Export-Alpha-01", "import-ALPHA-03b"]
    assert await found(store, "ALPHA-0") == ["Export-Alpha-01", "import-ALPHA-03b"]
    assert await found(store, "tRANSf") == ["export-beta-02"]
    assert await found(store, "export") == ["Export-Alpha-01", "export-beta-02"]
    # Neither a finished task nor a loud one is found.
    assert await found(store, "") == ["Export-Alpha-01", "export-beta-02", "import-ALPHA-03b"]
    # A health word is not searched: no id or stage holds it.
    assert await found(store, "healthy") == []


@pytest.mark.backends("sqlite", "postgresql")  # both stores run the block as written
async def test_the_text_is_taken_literally_and_the_bound_is_kept(
    store: Store, clock: FakeClock
) -> None:
    for task_id in ("a%b", "axb", "a_b", "ayb", "a\\b", "bulk-3", "bulk-1", "bulk-2", "bulk-0"):
        await healthy(store, task_id)
    assert await found(store, "a%b") == ["a%b"]
    assert await found(store, "A_B") == ["a_b"]
    assert await found(store, "a\\b") == ["a\\b"]
    assert await found(store, "%") == ["a%b"]
    assert await found(store, "_") == ["a_b"]
    assert await found(store, "bulk", limit=3) == ["bulk-0", "bulk-1", "bulk-2"]
    assert await found(store, "nothing holds this") == []


async def fleet(store: Store, tasks: int) -> None:
    """``tasks`` quiet tasks ``t000``...: all healthy, nothing to say."""
    for n in range(tasks):
        await healthy(store, f"t{n:03d}", stage="load" if n % 2 else "Save")


async def test_a_counted_poll_lists_and_judges_the_quiet_tasks_the_filter_finds(
    store: Store, clock: FakeClock
) -> None:
    """Each found task gets a row, judged healthy; the quiet count shrinks by the tasks found,
    so the counts by health stay the same; with the text cleared the rows go."""
    await fleet(store, 120)
    monitor = Monitor(store, replace(default_config(), read_at_most=100), clock=clock, host=HERE)
    before = await monitor.poll()
    assert before.tasks == () and before.counted is not None
    assert before.counted.quiet[Health.HEALTHY] == 120

    monitor.find("T05")
    snapshot = await monitor.poll()
    assert snapshot.error is None and snapshot.counted is not None
    assert [view.task_id for view in snapshot.tasks] == [f"t05{n}" for n in range(10)]
    assert {view.verdict.health for view in snapshot.tasks} == {Health.HEALTHY}
    assert snapshot.counted.quiet[Health.HEALTHY] == 110
    assert snapshot.counted.found == 10 and not snapshot.counted.found_more
    assert snapshot.counts[Health.HEALTHY] == 120

    monitor.find("save")  # by stage: the even tasks
    snapshot = await monitor.poll()
    assert len(snapshot.tasks) == 60
    assert snapshot.counts[Health.HEALTHY] == 120

    monitor.find("")
    snapshot = await monitor.poll()
    assert snapshot.tasks == ()
    assert snapshot.counted is not None and snapshot.counted.quiet[Health.HEALTHY] == 120


async def test_more_found_than_the_bound_lists_the_first_by_id(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    await fleet(store, 110)
    monkeypatch.setattr(monitor_module, "FOUND_AT_MOST", 5)
    monitor = Monitor(store, replace(default_config(), read_at_most=100), clock=clock, host=HERE)
    monitor.find("t")
    snapshot = await monitor.poll()
    assert snapshot.counted is not None
    assert [view.task_id for view in snapshot.tasks] == [f"t00{n}" for n in range(5)]
    assert snapshot.counted.found == 5 and snapshot.counted.found_more
    assert snapshot.counted.quiet[Health.HEALTHY] == 105
    assert snapshot.counts[Health.HEALTHY] == 110


async def test_a_task_read_again_and_found_is_listed_and_counted_once(
    store: Store, clock: FakeClock
) -> None:
    """A stalled task that beats again is read once more as it recovers (``poll_loud``'s
    ``again``); found by the filter too, it is still one row, and not counted as well."""
    tokens = {}
    for n in range(110):
        tokens[f"t{n:03d}"] = await healthy(store, f"t{n:03d}")
        clock.advance(200.0 if n == 0 else 0.0)  # t000's beat is stale, the others fresh
    monitor = Monitor(store, replace(default_config(), read_at_most=100), clock=clock, host=HERE)
    first = await monitor.poll()
    assert [view.task_id for view in first.tasks] == ["t000"]
    await store.record_heartbeat(
        "t000", BeatLine(stage="load", progress=2.0), owner="w", token=tokens["t000"]
    )
    monitor.find("t00")
    recovered = await monitor.poll()
    assert [view.task_id for view in recovered.tasks] == [f"t00{n}" for n in range(10)]
    assert recovered.counted is not None
    assert recovered.counted.quiet[Health.HEALTHY] == 100
    assert recovered.counts[Health.HEALTHY] == 110
