"""A first glance at start-up: the few active tasks silent longest, and how many are active,
read and judged before the whole first poll of a big store (``Store.glance``,
``Monitor.glance``). On SQLite and PostgreSQL alike."""

from __future__ import annotations

from dataclasses import replace

from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.model import TaskState
from zombietop.store import Store


async def fleet(store: Store, clock: FakeClock, names: list[str]) -> dict[str, int]:
    """One running task a name, each beating a minute after the one before it."""
    tokens = {}
    for name in names:
        await store.create_task(task_id=name, run_id="r", step="s", step_type="d", actor="t")
        lease = await store.acquire_lease(name, owner="w", ttl=3600)
        await store.record_heartbeat(name, parse_line("p=5"), owner="w", token=lease.token)
        tokens[name] = lease.token
        clock.advance(60)
    return tokens


async def test_a_glance_reads_the_active_tasks_silent_longest(
    store: Store, clock: FakeClock
) -> None:
    tokens = await fleet(store, clock, ["a", "b", "c", "d", "e"])
    await store.record_heartbeat("a", parse_line("p=50"), owner="w", token=tokens["a"])
    await store.finish_task("b", owner="w", token=tokens["b"], state=TaskState.SUCCEEDED)
    active, records = await store.glance(2)
    assert active == 4  # b finished
    assert [r.task.task_id for r in records] == ["c", "d"]  # a beat again just now
    assert records[0].heartbeat is not None and records[0].lease is not None


async def test_a_glance_leaves_the_poll_it_comes_before_whole(
    store: Store, clock: FakeClock
) -> None:
    await fleet(store, clock, ["a", "b", "c"])
    monitor = Monitor(store, default_config(), clock=clock, reuse_verdicts=True)
    glance = await monitor.glance(2)
    assert glance is not None and glance.glance_of == 3
    assert [view.task_id for view in glance.tasks] == ["a", "b"]
    assert sum(glance.counts.values()) == 2  # of the two it read: no count of the rest
    whole = await monitor.poll()
    assert whole.glance_of is None and len(whole.tasks) == 3
    clock.advance(1)
    assert len((await monitor.poll()).tasks) == 3


async def test_no_glance_where_the_poll_shows_as_much(store: Store, clock: FakeClock) -> None:
    await fleet(store, clock, ["a", "b"])
    monitor = Monitor(store, default_config(), clock=clock)
    assert await monitor.glance(2) is None
    assert await monitor.glance(1) is not None
    # Sources are read in full by the poll: a glance of the store alone would leave them out.
    assert await replace_sources(monitor).glance(1) is None


def replace_sources(monitor: Monitor) -> Monitor:
    """The monitor as if it read a source too."""
    monitor.sources = [object()]  # type: ignore[list-item]
    return monitor


async def test_a_glance_of_a_store_it_cannot_read_is_none(store: Store, clock: FakeClock) -> None:
    await fleet(store, clock, ["a", "b", "c"])
    monitor = Monitor(store, replace(default_config()), clock=clock)
    await store.close()
    assert await monitor.glance(1) is None
    assert (await monitor.poll()).error is not None  # the poll says why
