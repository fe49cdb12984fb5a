"""An agent's round in bulk: its samples land in one statement (PostgreSQL) or one executemany
(SQLite), exactly as the same samples written one row at a time."""

from __future__ import annotations

from zombietop.clock import FakeClock
from zombietop.model import ProcessSample, TaskState
from zombietop.store import Store
from zombietop.store.beats import sample_params
from zombietop.store.sql_store import SQLStore


async def _tasks_on(store: Store, host: str, count: int) -> list[str]:
    ids = [f"{host}-t{n:02d}" for n in range(count)]
    for task_id in ids:
        await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="t")
        lease = await store.acquire_lease(task_id, owner=f"w@{host}", ttl=300)
        await store.set_process(
            task_id, owner=f"w@{host}", token=lease.token, pid=1000, pid_start_time=1.0, host=host
        )
    return ids


def _samples(ids: list[str], *, base: int) -> dict[str, ProcessSample]:
    """Samples with every column set on the even tasks and the optional ones empty on the odd,
    so NULLs, booleans and large numbers all cross the arrays."""
    made = {}
    for n, task_id in enumerate(ids):
        full = n % 2 == 0
        made[task_id] = ProcessSample(
            pid=base + n,
            alive=full,
            identity_ok=n % 3 != 0,
            status="sleeping" if full else None,
            cpu_percent=12.5 if full else None,
            rss_bytes=(5 << 33) + n if full else None,
            threads=4 if full else None,
            io_idle_s=3.25 if full else None,
            idle_s=7.5 if full else None,
            children=n,
            create_time=1_700_000_000.5 + n if full else None,
            sampled_at=1_700_000_100.0 + n,
        )
    return made


async def test_a_round_in_bulk_stores_what_one_row_at_a_time_stored(
    store: Store, clock: FakeClock
) -> None:
    """The same 30 samples written one statement per row, then in bulk over a fresh table, read
    back equal; a second round updates every row, and drops the task it no longer names."""
    assert isinstance(store, SQLStore)
    ids = await _tasks_on(store, "host-b", 30)
    first = _samples(ids, base=2000)
    finished = {ids[1], ids[4]}

    async with store._write() as db:
        now = await store._now_in(db)
        params = [
            sample_params(task_id, "host-b", sample, now, after_finish=task_id in finished)
            for task_id, sample in first.items()
        ]
        for each in params:  # one statement per row, on both backends
            await store._run_bulk(db, "upsert_process_sample", [each])
    one_by_one = await store.process_samples()
    assert len(one_by_one) == 30

    async with store._write() as db:
        await db.execute("DELETE FROM process_samples")
    await store.record_process_samples("host-b", first, finished=finished)
    assert await store.process_samples() == one_by_one

    clock.advance(2.0)
    second = _samples(ids[:-1], base=3000)
    await store.record_process_samples("host-b", second)
    stored = await store.process_samples()
    assert sorted(stored) == sorted(ids[:-1]), "the sample not written again is dropped"
    assert {task_id: each.sample for task_id, each in stored.items()} == {
        task_id: ProcessSample(**_fields(sample)) for task_id, sample in second.items()
    }
    assert {each.written_at for each in stored.values()} == {clock.now()}
    assert not any(each.after_finish for each in stored.values())


def _fields(sample: ProcessSample) -> dict[str, object]:
    # What the store keeps of a sample: no I/O deltas and no idle source (see fleet.py).
    kept = {name: getattr(sample, name) for name in ProcessSample.__dataclass_fields__}
    kept.update(read_bytes_delta=None, write_bytes_delta=None, idle_source=None)
    return kept


async def test_an_empty_round_drops_the_hosts_samples_and_no_others(
    store: Store, clock: FakeClock
) -> None:
    """A round that saw no process writes no sample (an empty batch is no statement) and drops
    this host's earlier ones; another host's stay."""
    on_b = await _tasks_on(store, "host-b", 2)
    on_c = await _tasks_on(store, "host-c", 2)
    await store.record_process_samples("host-b", _samples(on_b, base=10))
    await store.record_process_samples("host-c", _samples(on_c, base=20))
    clock.advance(2.0)
    await store.record_process_samples("host-b", {})
    assert sorted(await store.process_samples()) == on_c


async def test_an_agents_beat_returns_its_own_row(store: Store, clock: FakeClock) -> None:
    """The beat reads back only its own row (not every agent's), the same as ``agents()``."""
    for host in ("host-a", "host-b", "host-c"):
        await store.record_agent_beat(
            host, agent_id=f"agent-{host}", pid=7, interval=2.0, reported_at=clock.now() + 1.0
        )
    clock.advance(1.0)
    presence = await store.record_agent_beat(
        "host-b", agent_id="agent-host-b", pid=8, interval=3.0, reported_at=clock.now()
    )
    assert presence.host == "host-b" and presence.pid == 8 and presence.interval_s == 3.0
    assert presence.started_at == clock.now() - 1.0, "the same agent keeps its start"
    assert [each for each in await store.agents() if each.host == "host-b"] == [presence]


async def test_an_agents_round_is_its_beat_and_its_samples(store: Store, clock: FakeClock) -> None:
    """``record_agent_round`` stores what ``record_agent_beat`` then ``record_process_samples``
    store: the same presence, the same samples (with their finish marks), and the host's own
    samples it does not name again dropped, while a source's samples of the host stay."""
    ids = await _tasks_on(store, "host-b", 30)
    kept_by_source = ProcessSample(pid=99, alive=True, sampled_at=1.0)
    await store.record_process_samples("host-b", {"engine-1": kept_by_source}, source="airflow")
    first, finished = _samples(ids, base=2000), {ids[1], ids[4]}
    await store.record_agent_beat(
        "host-b", agent_id="agent-b", pid=7, interval=2.0, reported_at=clock.now() + 1.0
    )
    await store.record_process_samples("host-b", first, finished=finished)
    one_by_one = (await store.agents(), await store.process_samples())

    clock.advance(2.0)
    presence = await store.record_agent_round(
        "host-b",
        agent_id="agent-b",
        pid=7,
        interval=2.0,
        reported_at=clock.now() + 1.0,
        samples=first,
        finished=finished,
    )
    agents, stored = await store.agents(), await store.process_samples()
    assert agents == [presence]
    assert presence.seen_at == clock.now() and presence.started_at == clock.now() - 2.0
    assert presence.clock_skew_s == 1.0
    assert {task_id: (each.sample, each.after_finish) for task_id, each in stored.items()} == {
        task_id: (each.sample, each.after_finish) for task_id, each in one_by_one[1].items()
    }
    assert stored["engine-1"].written_at == one_by_one[1]["engine-1"].written_at
    assert {stored[task_id].written_at for task_id in ids} == {clock.now()}

    clock.advance(2.0)
    await store.record_agent_round(
        "host-b",
        agent_id="agent-b",
        pid=7,
        interval=2.0,
        reported_at=clock.now(),
        samples=_samples(ids[:2], base=3000),
    )
    assert sorted(await store.process_samples()) == ["engine-1", *ids[:2]]
    clock.advance(2.0)
    await store.record_agent_round(
        "host-b", agent_id="agent-b", pid=7, interval=2.0, reported_at=clock.now(), samples={}
    )
    assert sorted(await store.process_samples()) == ["engine-1"]


async def test_the_samples_of_some_tasks_are_theirs_and_every_sources(
    store: Store, clock: FakeClock
) -> None:
    """A poll of a large store reads the samples of the tasks it read (``process_samples``
    with ids): a named active task's, a named finished task's only when taken after its
    finish, never an unnamed task's; and every source's sample, named or not."""
    ids = ["active", "unnamed", "ended-before", "ended-after"]
    for task_id in ids:
        await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="t")
        lease = await store.acquire_lease(task_id, owner="w@host-b", ttl=300)
        await store.set_process(
            task_id,
            owner="w@host-b",
            token=lease.token,
            pid=1000,
            pid_start_time=1.0,
            host="host-b",
        )
        if task_id.startswith("ended"):
            await store.finish_task(
                task_id, owner="w@host-b", token=lease.token, state=TaskState.SUCCEEDED
            )
    active, _, ended_before, ended_after = ids
    await store.record_process_samples("host-b", _samples(ids, base=100), finished={ended_after})
    await store.record_process_samples(
        "host-b", _samples(["celery:abc"], base=200), source="celery"
    )

    named = await store.process_samples([active, ended_before, ended_after])

    assert sorted(named) == sorted([active, ended_after, "celery:abc"])
    assert named[active] == (await store.process_samples())[active]
