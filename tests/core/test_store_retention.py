"""Retention: finished tasks older than ``[store] keep_finished`` leave the store, with what is
kept of them, in small batches; what something still needs stays.

Both backends, on the shared fake clock. The last tests run real processes: a ``zombietop
watch`` and a ``zombietop agent`` that prune, and a job beating beside a prune.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, wait_for_file, zombietop
from tests.stores import count_rows, open_kill_for_test
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import ConfigError
from zombietop.heartbeat_line import parse_line
from zombietop.model import EventKind, ProcessSample, TaskState
from zombietop.store import Store, open_store
from zombietop.store.pruner import prune

DAY = 86400.0
KEEP = 30 * DAY


async def finished(
    store: Store,
    task_id: str,
    *,
    state: TaskState = TaskState.SUCCEEDED,
    upstream: tuple[str, ...] = (),
) -> int:
    """A task that ran, beat three times and finished now (store time); return its token."""
    await store.create_task(
        task_id=task_id,
        run_id="r",
        step=task_id.split("-")[0],
        step_type="default",
        actor="t",
        upstream=upstream,
    )
    lease = await store.acquire_lease(task_id, owner="w", ttl=600)
    for percent in (10, 50, 90):
        await store.record_heartbeat(
            task_id, parse_line(f"stage=s p={percent}"), owner="w", token=lease.token
        )
    await store.finish_task(
        task_id,
        owner="w",
        token=lease.token,
        state=state,
        exit_code=0 if state is TaskState.SUCCEEDED else 1,
    )
    return lease.token


async def kept_of(store: Store, task_id: str) -> dict[str, int]:
    """Rows that still name ``task_id``, table by table (zero everywhere once it is pruned)."""
    counts = {}
    for table in (
        "tasks",
        "events",
        "heartbeats",
        "heartbeat_history",
        "leases",
        "acks",
        "pending_kills",
        "host_requests",
        "process_samples",
    ):
        counts[table] = await _count(store, table, task_id)
    return counts


async def _count(store: Store, table: str, task_id: str) -> int:
    from zombietop.store.postgres import PostgresStore
    from zombietop.store.sqlite import SQLiteStore

    sql = f"SELECT count(*) FROM {table} WHERE task_id = "
    if isinstance(store, PostgresStore):
        assert store._conn is not None
        return int(await store._conn.fetchval(sql + "$1", task_id))
    assert isinstance(store, SQLiteStore)
    rows = await store._db.execute_fetchall(sql + "?", (task_id,))
    return int(next(iter(rows))[0])


async def test_old_finished_tasks_leave_with_everything_kept_of_them(
    store: Store, clock: FakeClock
) -> None:
    old = await finished(store, "old-1")
    await store.ack_task("old-1", by="ana", reason="looking", duration=3600)
    await store.record_process_samples(
        "h1", {"old-1": ProcessSample(pid=4121, alive=False, sampled_at=clock.now())}
    )
    await open_kill_for_test(store, "old-1")
    await store.close_kill("old-1", outcome="exited", actor="t", message="gone")
    request = await store.request_host_action(
        task_id="old-1", host="h1", kind="kill", expected_token=old, actor="t"
    )
    await store.finish_host_request(request.request_id, outcome="done", message="", actor="t")
    await store.record_event(kind=EventKind.NOTE, actor="ana", message="n", task_id="old-1")
    before = await kept_of(store, "old-1")
    assert all(before[table] for table in ("events", "heartbeat_history", "host_requests"))
    clock.advance(KEEP - DAY)
    await finished(store, "recent-1")
    await store.create_task(task_id="live-1", run_id="r", step="live", step_type="d", actor="t")
    clock.advance(2 * DAY)

    run = await prune(store, KEEP)

    assert (run.tasks, run.finished) == (1, True)
    assert set((await kept_of(store, "old-1")).values()) == {0}
    assert (await kept_of(store, "recent-1"))["tasks"] == 1
    assert (await store.get_task("live-1")).state is TaskState.QUEUED
    assert (await prune(store, KEEP)).tasks == 0  # nothing left to do


AIRFLOW = "airflow+sqlite:////srv/airflow/airflow.db"


async def source_event(store: Store, task_id: str, kind: EventKind, **data: object) -> None:
    """An event about an Airflow task instance, which the tasks table never holds."""
    await store.record_event(
        kind=kind,
        actor="watchdog",
        message=str(kind),
        task_id=task_id,
        data={**data, "source": AIRFLOW},
    )


async def test_a_source_tasks_events_go_once_quiet_and_nothing_of_it_is_open(
    store: Store, clock: FakeClock
) -> None:
    """The store never learns when a source's task finished: its events go once the newest is
    older than keep_finished, unless an incident of it is open, it is held, or acked."""
    ids = {
        name: f"etl/{name}/manual__1" for name in ("closed", "open", "held", "released", "acked")
    }
    await source_event(store, ids["closed"], EventKind.PAGE, page="incident")
    await source_event(store, ids["closed"], EventKind.PAGE, page="all_clear")
    await source_event(store, ids["open"], EventKind.PAGE, page="incident")
    await source_event(store, ids["held"], EventKind.QUARANTINED, reason="bad data")
    await source_event(store, ids["released"], EventKind.QUARANTINED, reason="bad data")
    await source_event(store, ids["released"], EventKind.UNQUARANTINED)
    await source_event(store, ids["acked"], EventKind.TRANSITION)
    await store.ack_task(
        ids["acked"], by="ana", reason="mine", duration=KEEP + 2 * DAY, source=AIRFLOW
    )
    own = await finished(store, "own-1")  # one of the store's own, finished as long ago
    assert own
    clock.advance(KEEP - DAY)
    recent = "etl/recent/manual__1"
    await source_event(store, recent, EventKind.PAGE, page="incident")
    await source_event(store, recent, EventKind.PAGE, page="all_clear")
    clock.advance(2 * DAY)

    run = await prune(store, KEEP, batch=2)  # batches of two: the cursor moves across them

    assert (run.tasks, run.source_tasks, run.finished) == (1, 2, True)
    assert "and the events of 2 source tasks quiet as long" in run.words(KEEP)
    left = {task_id: await _count(store, "events", task_id) for task_id in [*ids.values(), recent]}
    assert left == {
        ids["closed"]: 0,
        ids["open"]: 1,
        ids["held"]: 1,
        ids["released"]: 0,
        ids["acked"]: 2,  # the transition and the ack's own event
        recent: 2,
    }
    # The hold and the open incident are still what the store remembers of them.
    holds = await store.events(kind=EventKind.QUARANTINED, limit=10)
    assert [e.task_id for e in holds] == [ids["held"]]
    assert (await prune(store, KEEP)).source_tasks == 0  # nothing left to do


async def test_what_something_still_needs_stays(store: Store, clock: FakeClock) -> None:
    for task_id in ("plain-1", "closed-1", "open-1", "held-1", "upstream-1", "kill-1"):
        await finished(store, task_id, state=TaskState.FAILED)
    token = await finished(store, "request-1")
    await finished(store, "acked-1")

    async def page(
        task_id: str, what: str, kind: EventKind = EventKind.PAGE, **data: object
    ) -> None:
        await store.record_event(
            kind=kind, actor="watchdog", message=what, task_id=task_id, data={"page": what, **data}
        )

    # A closed incident lets its task go; an open one (paged, or held by a silence) keeps it.
    await page("closed-1", "incident", health="stalled")
    await page("closed-1", "all_clear")
    await page("open-1", "incident", health="stalled")
    await page("open-1", "stage_overrun")  # a later page that is not an all-clear
    await page("held-1", "incident", EventKind.WATCHDOG, held=3)
    await store.create_task(
        task_id="waits-1", run_id="r", step="w", step_type="d", actor="t", upstream=("upstream-1",)
    )
    await open_kill_for_test(store, "kill-1")
    await store.request_host_action(
        task_id="request-1", host="h2", kind="resume", expected_token=token, actor="t"
    )
    clock.advance(KEEP + DAY)
    await store.ack_task("acked-1", by="ana", reason="after the fact", duration=3600)

    run = await prune(store, KEEP)

    kept = {"open-1", "held-1", "upstream-1", "kill-1", "request-1", "acked-1", "waits-1"}
    remaining = {record.task.task_id for record in await store.poll(None)}
    assert remaining == kept
    assert run.tasks == 2
    assert (await kept_of(store, "open-1"))["events"] >= 2  # the open incident's events stay


async def test_batches_are_small_and_go_on_past_what_stays(store: Store, clock: FakeClock) -> None:
    for n in range(25):
        await finished(store, f"job-{n:02d}")
        clock.advance(1)
    await store.create_task(
        task_id="waits-1", run_id="r", step="w", step_type="d", actor="t", upstream=("job-03",)
    )
    clock.advance(KEEP + DAY)
    seen: list[int] = []
    after = None
    before = await store.now() - KEEP
    while batch := await store.prune_finished(before, limit=10, after=after):
        if not batch.task_ids:
            break
        seen.append(len(batch.task_ids))
        after = batch.last
    assert seen == [10, 10, 4]
    assert {r.task.task_id for r in await store.poll(None)} == {"job-03", "waits-1"}


async def test_silences_and_the_store_wide_events_stay(store: Store, clock: FakeClock) -> None:
    await finished(store, "old-1")
    silence = await store.add_silence(
        matcher="step_type", pattern="flaky", by="ana", reason="known", duration=KEEP * 2
    )
    events = await count_rows(store, "events")
    clock.advance(KEEP + DAY)
    assert (await prune(store, KEEP)).tasks == 1
    assert [s.silence_id for s in await store.silences()] == [silence.silence_id]
    left = await store.events(limit=10)
    assert [e.kind for e in left] == [EventKind.SILENCE]
    assert events > len(left)


async def test_a_poll_after_a_prune_reads_what_remains(store: Store, clock: FakeClock) -> None:
    """A dashboard following the store's changes sees pruned tasks leave (none were in its
    window) and keeps every live one."""
    await finished(store, "old-1")
    await store.create_task(task_id="live-1", run_id="r", step="l", step_type="d", actor="t")
    clock.advance(KEEP + DAY)
    window = await store.now() - 3600
    assert {r.task.task_id for r in await store.poll(window)} == {"live-1"}
    await prune(store, KEEP)
    await store.create_task(task_id="live-2", run_id="r", step="l", step_type="d", actor="t")
    assert {r.task.task_id for r in await store.poll(window)} == {"live-1", "live-2"}
    assert {r.task.task_id for r in await store.poll(None)} == {"live-1", "live-2"}


async def test_status_all_reads_the_older_tasks_a_page_at_a_time(
    store: Store, clock: FakeClock
) -> None:
    """Every finished task, newest first, in pages that pick up where the last one ended."""
    for n in range(7):
        await finished(store, f"job-{n}")
        clock.advance(60)
    await store.create_task(task_id="live-1", run_id="r", step="l", step_type="d", actor="t")
    now = await store.now()
    counts = await store.finished_counts(now)
    assert counts == {TaskState.SUCCEEDED: 7}
    read: list[str] = []
    after: tuple[float, str] = (now, "")
    while page := await store.finished_page(after, limit=3):
        read.extend(record.task.task_id for record in page)
        last = page[-1].task
        assert last.finished_at is not None
        after = (last.finished_at, last.task_id)
    assert read == [f"job-{n}" for n in reversed(range(7))]


# Configuration ----------------------------------------------------------------------------


def test_keep_finished_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    assert load_config(None).keep_finished == KEEP
    path.write_text('[store]\nkeep_finished = "7d"\n')
    assert load_config(path).keep_finished == 7 * DAY
    path.write_text('[store]\nkeep_finished = "0s"\n')
    assert load_config(path).keep_finished == 0  # keep every task
    path.write_text('[store]\nkeep_finished = "10m"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(refused.value) == (
        f"{path} [store]: keep_finished = '10m' must be at least [monitor] finished_window = "
        '"1h" (or "0s": keep every task), so that no finished task leaves the store while '
        "dashboards still show it"
    )
    path.write_text('[store]\nkeep = "7d"\n')
    with pytest.raises(ConfigError, match="did you mean 'keep_finished'"):
        load_config(path)


# Real processes ---------------------------------------------------------------------------


def _old_store(db: Path, task_ids: list[str]) -> None:
    """Tasks that finished 40 days ago, written by the real store API on a clock set back."""

    async def build() -> None:
        clock = FakeClock(time.time() - 40 * DAY)
        async with await open_store(db, create=True, clock=clock) as store:
            for task_id in task_ids:
                await finished(store, task_id)
            clock.set(time.time() - 60)
            await store.create_task(
                task_id="live-1", run_id="r", step="l", step_type="d", actor="t"
            )

    asyncio.run(build())


def _task_ids(db: Path) -> set[str]:
    async def read() -> set[str]:
        async with await open_store(db, read_only=True) as store:
            return {record.task.task_id for record in await store.poll(None)}

    return asyncio.run(read())


def _wait_until(check: object, proc: subprocess.Popen[bytes], log: Path) -> None:
    assert callable(check)
    deadline = time.monotonic() + 60
    while not check():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


@pytest.mark.parametrize("pruner", ["watch", "agent"])
def test_a_running_watchdog_or_agent_prunes(
    tmp_path: Path, children: Children, pruner: str
) -> None:
    db, config, log = tmp_path / "z.db", tmp_path / "c.toml", tmp_path / "out.log"
    config.write_text(FAST_CONFIG + '\n[store]\nkeep_finished = "30d"\n')
    _old_store(db, [f"old-{n}" for n in range(450)])  # more than two batches
    with log.open("wb") as out:
        proc = children.start(
            zombietop(db, config, pruner, "--interval", "0.3"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _wait_until(lambda: _task_ids(db) == {"live-1"}, proc, log)
    _wait_until(lambda: "pruned 450 tasks finished over 30d ago" in log.read_text(), proc, log)


def test_a_watch_once_from_cron_prunes_too(tmp_path: Path) -> None:
    db, config = tmp_path / "z.db", tmp_path / "c.toml"
    config.write_text(FAST_CONFIG)
    _old_store(db, [f"old-{n}" for n in range(60)])
    done = subprocess.run(
        zombietop(db, config, "watch", "--once"), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "pruned 60 tasks finished over 30d ago" in done.stdout + done.stderr
    assert _task_ids(db) == {"live-1"}


def test_an_agent_leaves_pruning_to_the_active_watchdog(tmp_path: Path) -> None:
    async def check() -> None:
        from zombietop.agent import Agent

        clock = FakeClock(time.time())
        async with await open_store(tmp_path / "z.db", create=True, clock=clock) as store:
            agent = Agent(store, load_config(None))
            assert await agent._may_prune()
            await store.hold_watchdog_lease(owner="w", host="h", pid=1, ttl=60)
            assert not await agent._may_prune()
            clock.advance(61)
            assert await agent._may_prune()

    asyncio.run(check())


BEATER = """
import asyncio, sys
from zombietop.heartbeat_line import parse_line
from zombietop.store import open_store

async def main(path, ready):
    store = await open_store(path)
    lease = await store.acquire_lease("live-1", owner="beater", ttl=600)
    open(ready, "w").close()
    beats = 0
    while True:  # a StoreBusy ("stayed locked") ends it, with its traceback
        await store.record_heartbeat(
            "live-1", parse_line(f"stage=s p={beats % 100}"), owner="beater", token=lease.token
        )
        beats += 1
        await asyncio.sleep(0.01)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_a_job_beats_through_a_prune_without_a_locked_error(tmp_path: Path) -> None:
    """A real second process beats every 10 ms while a prune runs: every beat is written
    (the store's busy timeout covers any one batch; bench/retention.py measures them)."""
    db, ready = tmp_path / "z.db", tmp_path / "ready"
    _old_store(db, [f"old-{n}" for n in range(600)])
    beater = subprocess.Popen(
        [sys.executable, "-c", BEATER, str(db), str(ready)], stderr=subprocess.PIPE
    )
    try:
        wait_for_file(ready, timeout=60)

        async def run() -> tuple[int, int]:
            async with await open_store(db) as store:
                first = await store.get_record("live-1")
                pruned = (await prune(store, KEEP)).tasks
                last = await store.get_record("live-1")
            assert first.heartbeat is not None and last.heartbeat is not None
            return pruned, last.heartbeat.seq - first.heartbeat.seq

        pruned, beats = asyncio.run(run())
        assert pruned == 600 and beats > 0
        assert beater.poll() is None
    finally:
        beater.terminate()
        _, err = beater.communicate(timeout=60)
    assert err == b"", err.decode()


# status --all ------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["table", "json"])
def test_status_all_prints_the_older_tasks_as_it_reads_them(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    form: str,
) -> None:
    """Never a read of every task at once: the window's snapshot, then the older finished
    tasks a page at a time, each page printed before the next is read."""
    from zombietop.store.sql_store import SQLStore
    from zombietop.tui.cli import status
    from zombietop.tui.cli.main import main

    db = tmp_path / "z.db"
    _old_store(db, [f"old-{n}" for n in range(7)])
    monkeypatch.setattr(status, "FINISHED_PAGE", 3)
    polls: list[float | None] = []
    printed: list[str] = []
    pages: list[list[str]] = []
    real_poll, real_page = SQLStore.poll, SQLStore.finished_page

    async def poll(self: SQLStore[object], finished_since: float | None) -> object:
        polls.append(finished_since)
        return await real_poll(self, finished_since)

    async def finished_page(self: SQLStore[object], after: object, *, limit: int) -> object:
        printed.append(capsys.readouterr().out)
        found = await real_page(self, after, limit=limit)  # type: ignore[arg-type]
        pages.append([record.task.task_id for record in found])
        return found

    monkeypatch.setattr(SQLStore, "poll", poll)
    monkeypatch.setattr(SQLStore, "finished_page", finished_page)
    argv = ["status", "--all", "--db", str(db)] + (["--json"] if form == "json" else [])
    main(argv)
    out = "".join(printed) + capsys.readouterr().out

    assert None not in polls  # the poll read the window only
    assert [len(page) for page in pages] == [3, 3, 1]
    for n, page in enumerate(pages[:-1], start=1):
        # printed[n] is what came out between reading page n and page n + 1.
        assert all(task_id in "".join(printed[: n + 1]) for task_id in page)
    older = [task_id for page in pages for task_id in page]
    assert sorted(older) == [f"old-{n}" for n in range(7)]
    if form == "json":
        found = json.loads(out)
        assert [t["task_id"] for t in found["tasks"]] == ["live-1", *older]
        assert found["counts"]["succeeded"] == 7 and found["counts"]["queued"] == 1
    else:
        lines = out.splitlines()
        assert lines[0] == "queued 1  succeeded 7"
        rows = [line.split()[1] for line in lines[3:] if line.strip()]
        assert rows[: 1 + len(older)] == ["live-1", *older]
