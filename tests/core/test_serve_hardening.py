"""``zombietop serve`` under attack and under load, as a real process on loopback: a ping key
cannot touch a run pings did not open, a cut-off ping changes nothing, a refused request logs
one short line and no secret, and job names and creations are bounded."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, wait_for, zombietop
from tests.core.serve_process import KEY, serve_process
from tests.core.test_serve_pings import curl
from zombietop.model import TaskState
from zombietop.store.sqlite import SQLiteStore

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")


@pytest.fixture
def fast_config(tmp_path: Path) -> Path:
    path = tmp_path / "fast.toml"
    path.write_text(FAST_CONFIG + "\n[serve]\nrate_limit = 100\n")
    return path


async def _state_and_owner(db: Path, task_id: str) -> tuple[TaskState, str | None]:
    store = await SQLiteStore.open(db)
    try:
        lease = await store.get_lease(task_id)
        return (await store.get_task(task_id)).state, None if lease is None else lease.owner
    finally:
        await store.close()


async def test_a_ping_cannot_touch_a_local_run_of_the_job(
    tmp_path: Path, fast_config: Path, children: Children
) -> None:
    db = tmp_path / "store.db"
    wrapper = children.start(
        zombietop(db, fast_config, "run", "--job", "nightly", "--run", "r1", "--", "sleep", "60"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    async def running() -> bool:
        try:
            return (await _state_and_owner(db, "nightly/r1"))[0].executing
        except Exception:
            return False

    await wait_for(running, what="the local run to start", while_running=wrapper)
    async with serve_process(db, "--config", str(fast_config)) as served:
        for action in ("fail", "beat", "log", "start", "3", ""):
            path = f"nightly/{action}?rid=r1" if action else "nightly?rid=r1"
            code, said = await curl(served.url(path), "--data-binary", "stage=forged p=99")
            assert (code, said) == (404, "not found\n"), path
        state, owner = await _state_and_owner(db, "nightly/r1")
        assert state.executing and owner is not None and owner.startswith("run@")
        assert wrapper.poll() is None, "the wrapper still owns its run"
        kept = [path.read_bytes() for path in tmp_path.glob("*.d/output/*")]
        assert not any(b"forged" in output for output in kept), "a ping wrote the run's output"
        # A run pings opened is still theirs to end, beside the local one.
        assert (await curl(served.url("nightly/start?rid=h1")))[0] == 200
        assert (await curl(served.url("nightly/start?rid=h1")))[0] == 200  # a retry: same run
        assert (await curl(served.url("nightly/fail?rid=h1")))[0] == 200
        assert (await _state_and_owner(db, "nightly/h1"))[0] is TaskState.FAILED
        assert (await curl(served.url("nightly/fail?rid=h1")))[0] == 404  # ended: not found
        # A local run whose wrapper died: no ping keeps it alive or takes it over.
        wrapper.kill()
        await asyncio.to_thread(wrapper.wait, 30)
        for path in ("nightly/beat?rid=r1&p=5", "nightly/start?rid=r1", "nightly/0?rid=r1"):
            assert (await curl(served.url(path)))[0] == 404, path
        state, owner = await _state_and_owner(db, "nightly/r1")
        assert state.executing and owner is not None and owner.startswith("run@")


LOCK_HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
"""


@contextlib.asynccontextmanager
async def store_locked(db: Path) -> AsyncIterator[None]:
    """Hold the store's write lock, as a long write by another process does, until the block
    ends."""
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LOCK_HOLDER, str(db),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdin is not None
    assert await holder.stdout.readline() == b"locked\n"
    try:
        yield
    finally:
        holder.stdin.close()
        await holder.wait()


async def _runs(db: Path, job: str) -> list[tuple[str, TaskState]]:
    store = await SQLiteStore.open(db)
    try:
        return [(task.task_id, task.state) for task in await store.job_runs(job, 100)]
    finally:
        await store.close()


READ_TIMEOUT = 10.0
"""``[serve] read_timeout``'s default: serve cuts a connection off then."""


async def _timed(url: str) -> tuple[int, str, float]:
    """Ask ``url`` (the answer's head too); return the status, the answer and the seconds."""
    started = time.monotonic()
    code, said = await curl(url, "-i")
    return code, said, time.monotonic() - started


async def test_a_locked_store_is_answered_503_in_time_and_nothing_is_applied_late(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    async with serve_process(db) as served:  # read_timeout: the default 10 s
        assert (await curl(served.url("probe/start?create=1")))[0] == 200
        async with store_locked(db):
            answers = await asyncio.gather(
                *(_timed(served.url("etl/start?create=1")) for _ in range(4))
            )
        for code, said, took in answers:
            assert took < READ_TIMEOUT, f"answered after {took:.1f}s"
            # Answered, not cut off at read_timeout (curl's 000), and told to try again.
            assert code == 503, said
            assert "Retry-After: 5" in said and "nothing was changed" in said
        assert (await curl(served.url("probe/start")))[0] == 200  # after all the others
        assert await _runs(db, "etl") == []
        code, said = await curl(served.url("etl/start?create=1"))  # the client's retry
        assert code == 200, said
        assert [state for _, state in await _runs(db, "etl")] == [TaskState.STARTING]
    assert not any("Traceback" in line for line in served.log)


async def test_a_ping_whose_client_left_is_not_applied(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with serve_process(db, "--metrics") as served:
        assert (await curl(served.url("probe/start?create=1")))[0] == 200
        async with store_locked(db):
            # Its first write waits for the store; its client gives up after 1 s.
            code, _ = await curl(served.url("cut/start?create=1"), "-m", "1")
            assert code == 0  # curl's word for no answer

            async def seen_to_leave() -> bool:  # only this scrape is left open
                _, page = await curl(f"http://{served.address}/metrics")
                return "zombietop_serve_open_connections 1.0" in page

            await wait_for(seen_to_leave, what="serve to see the client leave")
        assert (await curl(served.url("probe")))[0] == 200  # the store is free again
        assert await _runs(db, "cut") == []
        # A start sent again within seconds (a client's retry) is the same run.
        assert (await curl(served.url("first/start?create=1")))[0] == 200
        [(task_id, _)] = await _runs(db, "first")
        code, said = await curl(served.url("first/start"))
        assert (code, said) == (200, f"OK {task_id} starting\n")
        assert [state for _, state in await _runs(db, "first")] == [TaskState.STARTING]


async def test_a_job_name_is_one_safe_path_segment(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with serve_process(db) as served:
        for name in ("..", "..%2F..%2Fetc", "a%2Fb", "%2E%2E", ".hidden", "a%20b"):
            code, said = await curl(served.url(f"{name}/start?create=1"), "--path-as-is")
            assert code == 400 and said.startswith("a job name is 1 to 200 letters"), name
        store = await SQLiteStore.open(db)
        try:
            assert await store.job_runs("..", 10) == [] and await store.events(kind="ping") == []
        finally:
            await store.close()
        assert (await curl(served.url("nightly.export-2:eu/start?create=1")))[0] == 200


async def test_pings_create_at_most_sixty_jobs_a_minute(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with serve_process(db) as served:
        proc = await asyncio.create_subprocess_exec(
            "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}\n",
            served.url("job-[1-100]/start?create=1"), stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await proc.communicate()
        codes = out.decode().split()
        assert (codes.count("200"), codes.count("429")) == (60, 40)
        assert (await curl(served.url("job-1")))[0] == 200  # a known job is still served
    assert any("over 60 new jobs a minute" in line for line in served.log)


async def test_a_refused_request_logs_one_short_line_and_no_secret(tmp_path: Path) -> None:
    token = "wall-0123456789abcdef"
    db = tmp_path / "store.db"
    async with serve_process(db, "--wall", env={"ZOMBIETOP_WALL_TOKEN": token}) as served:
        started = len(served.log)
        code, _ = await curl(served.url("x" * 5000))  # a request line past its bound
        assert code == 400
        cookie = f"zombietop_wall={token}; pad={'y' * 5000}"  # a header past its bound
        code, _ = await curl(f"http://{served.address}/wall", "-H", f"Cookie: {cookie}")
        assert code == 400
        assert (await curl(served.url("probe/start?create=1")))[0] == 200
    logged = served.log[started:]
    refusals = [line for line in logged if line.startswith("refused a request from 127.0.0.1")]
    assert refusals == ["refused a request from 127.0.0.1: LineTooLong (HTTP 400)"] * 2, logged
    assert not any(KEY in line or token in line or "Traceback" in line for line in logged)


async def test_metrics_off_loopback_need_the_key(tmp_path: Path) -> None:
    async with serve_process(tmp_path / "store.db", "--metrics", listen="0.0.0.0:0") as served:
        metrics = f"http://127.0.0.1:{served.address.rsplit(':', 1)[1]}/metrics"
        code, said = await curl(metrics)
        assert (code, said) == (401, "metrics need a ping key: Authorization: Bearer KEY\n")
        assert (await curl(metrics, "-H", "Authorization: Bearer wrong-key-0123456789"))[0] == 401
        code, page = await curl(metrics, "-H", f"Authorization: Bearer {KEY}")
        assert code == 200 and "zombietop_serve_answers_total" in page
    async with serve_process(tmp_path / "store.db", "--metrics") as served:
        assert (await curl(f"http://{served.address}/metrics"))[0] == 200  # loopback: open
