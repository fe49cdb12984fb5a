"""A SQLite store opened ``inline`` runs its statements on the caller's thread: it must read,
write, fail and follow the store exactly as one on aiosqlite's thread does."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from tests.core.test_monitor_reuse import judged, shown
from tests.core.test_poll_follow import WINDOW, random_change
from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.errors import ReadOnlyStore, StoreError
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.model import ProcessSample
from zombietop.store import open_store
from zombietop.store.sqlite import SQLiteStore


def aiosqlite_threads() -> int:
    return sum("_connection_worker_thread" in t.name for t in threading.enumerate())


@pytest.mark.parametrize("seed", range(3))
async def test_an_inline_reader_sees_what_an_aiosqlite_reader_sees(
    db_path: Path, clock: FakeClock, seed: int
) -> None:
    """The writer is inline too: its transactions, fenced updates and inserts go through it."""
    rng = random.Random(seed)
    config = default_config()
    async with (
        await SQLiteStore.open(db_path, create=True, clock=clock, inline=True) as writer,
        await SQLiteStore.open(db_path, read_only=True, clock=clock) as threaded,
        await SQLiteStore.open(db_path, read_only=True, clock=clock, inline=True) as inline,
    ):
        ours = Monitor(inline, config, clock=clock, reuse_verdicts=True)
        theirs = Monitor(threaded, config, clock=clock, reuse_verdicts=True)
        for step in range(120):
            await random_change(writer, rng, clock)
            if step % 2:
                continue
            since = clock.now() - WINDOW
            assert await inline.poll(since) == await threaded.poll(since), f"step {step}"
            assert inline.poll_changes() == threaded.poll_changes(), f"step {step}"
            mine, other = await ours.poll(), await theirs.poll()
            assert judged(mine) == judged(other) and shown(mine) == shown(other), f"step {step}"
        await writer.record_process_samples(
            "h", {"t0": ProcessSample(pid=1, alive=True, sampled_at=clock.now())}
        )
        assert await inline.process_samples() == await threaded.process_samples()


async def test_an_inline_store_uses_no_thread_of_aiosqlite(db_path: Path, clock: FakeClock) -> None:
    async with await open_store(db_path, create=True, clock=clock) as store:
        await store.create_task(task_id="a", run_id="r", step="s", step_type="d", actor="t")
        before = aiosqlite_threads()
        async with await open_store(db_path, read_only=True, inline=True) as inline:
            assert [r.task.task_id for r in await inline.poll(None)] == ["a"]
            assert aiosqlite_threads() == before


async def test_an_inline_store_refuses_and_fails_in_the_same_words(
    db_path: Path, tmp_path: Path, clock: FakeClock
) -> None:
    async with await open_store(db_path, create=True, clock=clock) as store:
        await store.create_task(task_id="a", run_id="r", step="s", step_type="d", actor="t")
        lease = await store.acquire_lease("a", owner="w", ttl=60)
    async with await open_store(db_path, read_only=True, inline=True) as inline:
        with pytest.raises(ReadOnlyStore):
            await inline.record_heartbeat("a", parse_line("p=1"), owner="w", token=lease.token)
    with pytest.raises(StoreError, match="is closed"):
        await inline.poll(None)
    notes = tmp_path / "notes.db"
    notes.write_text("this is not sqlite\n" * 100)
    with pytest.raises(
        StoreError, match=r"not a readable zombietop store \(file is not a database\)"
    ):
        await open_store(notes, inline=True)
