"""``zombietop serve`` under attack and under load, as a real process on loopback: a ping key
cannot touch a run pings did not open, a cut-off ping changes nothing, a refused request logs
one short line and no secret, and job names and creations are bounded."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, wait_for, zombietop
from tests.core.serve_process import serve_process
from tests.core.test_serve_pings import curl
from zombietop.model import TaskState
from zombietop.store.sqlite import SQLiteStore

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")


@pytest.fixture
def fast_config(tmp_path: Path) -> Path:
    path = tmp_path / "fast.toml"
    path.write_text(FAST_CONFIG)
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
    wrapper.terminate()
    await asyncio.to_thread(wrapper.wait, 30)
