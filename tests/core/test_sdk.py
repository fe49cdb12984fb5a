"""The job SDK: lease, beats, atomic checkpoints, fail-fast requests, and SIGTERM handling."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.realprocs import Children, zombietop
from zombietop.act.executor import Executor
from zombietop.actions import Outcome
from zombietop.config import Config
from zombietop.errors import LeaseLost, RequestTimeout, UpstreamBlocked
from zombietop.model import TaskState
from zombietop.sdk import Job
from zombietop.store.sqlite import SQLiteStore

KILLS = 60

# A zygote: imports the SDK once, then forks one job per line on stdin, so that sixty kills
# cost milliseconds each instead of an interpreter start each.
ZYGOTE = r"""
import hashlib, os, sys, traceback
from pathlib import Path
from zombietop.config import load_config
from zombietop.sdk import Job

db, fast_config_path, checkpoint = sys.argv[1:4]
fast_config = load_config(Path(fast_config_path))

def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()

for _ in sys.stdin:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            with Job("fuzz", db=db, config=fast_config, checkpoint_path=checkpoint) as job:
                state = job.load_checkpoint()
                if state is not None and digest(state["pad"]) != state["sha"]:
                    print("corrupt", flush=True)
                    os._exit(70)
                n = state["n"] if state else 0
                print(f"start {n}", flush=True)
                while True:
                    n += 1
                    pad = "x" * (64 + n % 256)
                    job.checkpoint({"n": n, "pad": pad, "sha": digest(pad)})
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 71
        os._exit(code)
    print(f"pid {pid}", flush=True)
    _, status = os.waitpid(pid, 0)
    print(f"status {status}", flush=True)
"""


def _read(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    # An empty line is the zygote's end: say how it ended, not only that a word is missing.
    assert line, f"the zygote ended (exit status {proc.wait(timeout=10)}) before {prefix!r}"
    assert line.startswith(prefix), f"expected {prefix!r}, got {line!r}"
    return line[len(prefix) :].strip()


async def test_kills_during_checkpoint_writes_never_corrupt_the_checkpoint(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "ck" / "fuzz.json"
    script = tmp_path / "zygote.py"
    script.write_text(ZYGOTE)
    zygote = children.start(
        [sys.executable, str(script), str(db), str(fast_config_path), str(checkpoint)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert zygote.stdin is not None
    executor = Executor(real_store, fast_config)
    rng = random.Random(20261129)
    last_start = -1
    set_aside = 0
    written = False
    for kill in range(KILLS):
        zygote.stdin.write("go\n")
        zygote.stdin.flush()
        # Parent and child both print: their lines may come in either order.
        words = [_read(zygote, "") for _ in range(2)]
        assert "corrupt" not in words, "a resumed job found a torn checkpoint"
        lines = dict(word.split(" ", 1) for word in words)
        pid, start = int(lines["pid"]), int(lines["start"])
        # Every resume finds a complete checkpoint at least as far as the last one it started from.
        assert start >= last_start
        last_start = start
        time.sleep(rng.uniform(0, 0.015))
        sig = signal.SIGTERM if kill % 2 == 0 else signal.SIGKILL
        os.kill(pid, sig)
        status = int(_read(zygote, "status"))
        if checkpoint.exists():
            data = json.loads(checkpoint.read_text())
            assert hashlib.sha256(data["pad"].encode()).hexdigest() == data["sha"]
            written = True
        else:
            assert not written, "a complete checkpoint disappeared"
        task = await real_store.get_task("fuzz")
        if sig == signal.SIGTERM:
            assert os.waitstatus_to_exitcode(status) == 143
            assert task.state is TaskState.INTERRUPTED
        else:
            assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL
        # SIGTERM sets a partial aside at once; after SIGKILL the next start does it.
        aside, partial = (
            checkpoint.with_name("fuzz.json.tmp"),
            checkpoint.with_name("fuzz.json.partial"),
        )
        if sig == signal.SIGTERM:
            assert not partial.exists(), "SIGTERM left an unfinished checkpoint in place"
        if aside.exists() or partial.exists():
            set_aside += 1
        aside.unlink(missing_ok=True)
        record = await real_store.get_record("fuzz")
        resumed = await executor.resume(
            "fuzz", expected_token=record.lease.token if record.lease else None, actor="fuzz"
        )
        assert resumed.outcome is Outcome.REQUEUED, resumed.message
    zygote.stdin.close()
    assert zygote.wait(10) == 0
    assert last_start > 0
    # Partial checkpoints were set aside as .tmp, never left where a resume would read them.
    assert set_aside > 0
    assert (await real_store.get_task("fuzz")).attempt == KILLS + 1


def test_job_beats_checkpoints_and_succeeds(db: Path, fast_config: Config, tmp_path: Path) -> None:
    with Job("j1", db=db, config=fast_config, step_type="default") as job:
        assert job.still_owner() and job.attempt == 1
        job.beat("load", 10, rows=5)
        path = job.checkpoint({"offset": 5})
        job.beat("load", 20, rows=10)
    assert json.loads(path.read_text()) == {"offset": 5}
    con = sqlite3.connect(db)
    state, checkpoint = con.execute(
        "SELECT state, checkpoint FROM tasks WHERE task_id = 'j1'"
    ).fetchone()
    stage, progress, counters = con.execute(
        "SELECT stage, progress, counters FROM heartbeats WHERE task_id = 'j1'"
    ).fetchone()
    con.close()
    assert (state, checkpoint) == ("succeeded", str(path))
    assert (stage, progress, json.loads(counters)) == ("load", 20, {"rows": 10})


async def test_resume_fences_a_running_job(
    real_store: SQLiteStore, fast_config: Config, db: Path
) -> None:
    job = Job("j1", db=db, config=fast_config)
    job.__enter__()
    try:
        job.beat("work", 50)
        job.checkpoint({"at": 50})
        outcome = await Executor(real_store, fast_config).resume(
            "j1", expected_token=job.token, actor="oncall"
        )
        assert outcome.outcome is Outcome.REQUEUED
        assert not job.still_owner()
        with pytest.raises(LeaseLost):
            job.beat("work", 60)
    finally:
        job.__exit__(None, None, None)
    task = await real_store.get_task("j1")
    assert task.state is TaskState.QUEUED and task.attempt == 2 and task.checkpoint is not None


async def test_job_refuses_while_upstream_is_not_done(
    real_store: SQLiteStore, fast_config: Config, db: Path
) -> None:
    await real_store.create_task(task_id="up", run_id="r", step="s", step_type="default", actor="t")
    with (
        pytest.raises(UpstreamBlocked, match="upstream up is queued, not succeeded"),
        Job("down", db=db, config=fast_config, after=["up"]),
    ):
        pass
    lease = await real_store.acquire_lease("up", owner="o", ttl=60)
    await real_store.finish_task("up", owner="o", token=lease.token, state=TaskState.SUCCEEDED)
    await real_store.set_quarantine("up", quarantined=True, actor="oncall", reason="suspicious")
    with (
        pytest.raises(UpstreamBlocked, match="quarantined"),
        Job("down", db=db, config=fast_config, after=["up"]),
    ):
        pass
    await real_store.set_quarantine("up", quarantined=False, actor="oncall")
    with Job("down", db=db, config=fast_config, after=["up"]) as job:
        assert job.still_owner()


def test_request_fails_fast_past_its_budget(db: Path, fast_config: Config) -> None:
    with Job("j1", db=db, config=fast_config) as job:
        started = time.monotonic()
        with pytest.raises(RequestTimeout, match=r"'fetch' of j1 ran past its 0\.2 s budget"):
            with job.request("fetch", timeout=0.2):
                con = sqlite3.connect(db)
                (in_flight,) = con.execute("SELECT request_name FROM heartbeats").fetchone()
                con.close()
                assert in_flight == "fetch"
                time.sleep(5)
        assert time.monotonic() - started < 2
        with job.request("quick", timeout=1):
            pass


def test_sdk_job_under_zombietop_run_adopts_the_wrapper_lease(
    db: Path, fast_config_path: Path, children: Children, tmp_path: Path
) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "from zombietop.sdk import Job\n"
        "with Job('wrapped') as job:\n"
        "    job.beat('inside', 42)\n"
        "    assert job.still_owner()\n"
    )
    result = subprocess.run(
        zombietop(
            db, fast_config_path, "run", "--task", "wrapped", "--", sys.executable, str(script)
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ZOMBIETOP_CONFIG": str(fast_config_path)},
    )
    assert result.returncode == 0, result.stderr
    con = sqlite3.connect(db)
    state, attempt = con.execute(
        "SELECT state, attempt FROM tasks WHERE task_id = 'wrapped'"
    ).fetchone()
    (stage,) = con.execute("SELECT stage FROM heartbeats WHERE task_id = 'wrapped'").fetchone()
    con.close()
    assert (state, attempt, stage) == ("succeeded", 1, "inside")


@pytest.mark.parametrize(("code", "state"), [(0, "succeeded"), (3, "failed")])
def test_sys_exit_inside_a_job_is_recorded(
    db: Path, fast_config: Config, code: int, state: str
) -> None:
    with pytest.raises(SystemExit), Job("j1", db=db, config=fast_config):
        sys.exit(code)
    con = sqlite3.connect(db)
    row = con.execute("SELECT state, exit_code FROM tasks WHERE task_id = 'j1'").fetchone()
    con.close()
    assert row == (state, code)
