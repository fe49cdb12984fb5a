"""How a real job ended, through the real CLI: a kill is never a success, whatever the exit."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.realprocs import Children, wait_for, zombietop
from zombietop.errors import TaskNotFound, UpstreamBlocked
from zombietop.model import EventKind, TaskState
from zombietop.sdk import Job
from zombietop.store.sqlite import SQLiteStore

POLITE = (
    "trap 'echo stage=cleanup >> \"$ZOMBIETOP_HEARTBEAT_FILE\"; exit 0' TERM; "
    'echo "stage=load p=7" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    "while :; do sleep 0.05; done"
)
"""A job whose TERM handler exits 0: the polite kind, and not finished."""


def _cli(db: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(zombietop(db, config, *args), capture_output=True, text=True, timeout=60)


def _said(wrapper: subprocess.Popen[bytes]) -> str:
    """What ``zombietop run`` wrote on stderr, to say why it exited as it did."""
    stderr = wrapper.stderr.read() if wrapper.stderr is not None else b""
    return f"exit {wrapper.returncode}; zombietop run said: {stderr.decode(errors='replace')!r}"


async def _beating(store: SQLiteStore, task_id: str) -> bool:
    """True once the job's own first line (its stage) is recorded: its traps are set by then.

    Any heartbeat is not enough: the wrapper records an observed one as soon as the shell uses
    CPU, which on a busy machine can be before the shell has read its ``trap``.
    """
    try:
        record = await store.get_record(task_id)
    except TaskNotFound:
        return False
    beat = record.heartbeat
    return beat is not None and beat.stage is not None and record.task.pid is not None


async def _state_change(store: SQLiteStore, task_id: str) -> dict[str, object]:
    events = await store.events(task_id=task_id)
    changes = [e for e in events if e.kind == EventKind.STATE_CHANGED]
    return dict(changes[-1].data)


async def test_a_kill_of_a_job_that_exits_0_is_interrupted_and_blocks_its_dependent(
    real_store: SQLiteStore, db: Path, patient_config_path: Path, children: Children
) -> None:
    wrapper = children.start(
        zombietop(db, patient_config_path, "run", "--task", "up", "--", "sh", "-c", POLITE),
        stderr=subprocess.PIPE,
    )
    await wait_for(lambda: _beating(real_store, "up"), what="the job's first heartbeat")

    killed = await asyncio.to_thread(
        _cli, db, patient_config_path, "kill", "up", "--yes", "--reason", "half-done test"
    )
    assert killed.returncode == 0, killed.stderr
    code = await asyncio.to_thread(wrapper.wait, 20)
    assert code == 0, _said(wrapper)  # the job's own exit, passed on
    task = await real_store.get_task("up")
    assert task.state is TaskState.INTERRUPTED and task.exit_code == 0
    assert "stopped by a kill by" in (task.state_reason or "")
    change = await _state_change(real_store, "up")
    assert change["exit_code"] == 0 and "kill by" in str(change["stopped_by"])

    status = json.loads(
        (await asyncio.to_thread(_cli, db, patient_config_path, "status", "--json", "--all")).stdout
    )
    (up,) = [t for t in status["tasks"] if t["task_id"] == "up"]
    assert up["health"] == "interrupted"

    after = await asyncio.to_thread(
        _cli, db, patient_config_path, "run", "--task", "down", "--after", "up", "--", "true"
    )
    assert after.returncode != 0
    assert "upstream up was interrupted" in after.stderr
    with_missing = await real_store.poll(None)
    assert "down" not in {r.task.task_id for r in with_missing}


async def test_a_forwarded_sigint_is_interrupted_even_when_the_job_exits_0(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    script = POLITE.replace("TERM", "INT")
    wrapper = children.start(
        zombietop(db, fast_config_path, "run", "--task", "ctrl-c", "--", "sh", "-c", script),
        stderr=subprocess.PIPE,
    )
    await wait_for(lambda: _beating(real_store, "ctrl-c"), what="the job's first heartbeat")
    wrapper.send_signal(signal.SIGINT)
    code = await asyncio.to_thread(wrapper.wait, 20)
    assert code == 0, _said(wrapper)
    task = await real_store.get_task("ctrl-c")
    assert task.state is TaskState.INTERRUPTED and task.exit_code == 0
    assert "SIGINT (forwarded by zombietop run)" in (task.state_reason or "")


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "background"])
async def test_a_signal_the_wrapper_was_started_ignoring_stays_ignored(
    real_store: SQLiteStore,
    db: Path,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
    sig: signal.Signals,
) -> None:
    """`nohup zombietop run` lives through a hangup, and `zombietop run ... &` in a script
    ignores SIGINT: the command inherited the ignore and cannot trap it, so a forwarded signal
    would only end in a SIGKILL after the grace."""
    done = tmp_path / "done"
    script = (
        'echo "stage=load p=7" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
        f"while [ ! -e {done} ]; do sleep 0.05; done"
    )
    run = zombietop(db, fast_config_path, "run", "--task", "t", "--", "sh", "-c", script)
    ignoring = ["env", f"--ignore-signal={sig.name.removeprefix('SIG')}"]
    wrapper = children.start([*ignoring, *run], stderr=subprocess.PIPE)
    await wait_for(lambda: _beating(real_store, "t"), what="the job's first heartbeat")
    wrapper.send_signal(sig)
    done.touch()
    code = await asyncio.to_thread(wrapper.wait, 20)
    assert code == 0, _said(wrapper)
    task = await real_store.get_task("t")
    assert task.state is TaskState.SUCCEEDED, task.state_reason


async def test_exit_143_on_its_own_is_failed(
    real_store: SQLiteStore, db: Path, fast_config_path: Path
) -> None:
    ran = await asyncio.to_thread(
        _cli, db, fast_config_path, "run", "--task", "own", "--", "sh", "-c", "exit 143"
    )
    assert ran.returncode == 143
    task = await real_store.get_task("own")
    assert (task.state, task.exit_code) == (TaskState.FAILED, 143)


async def test_resume_from_interrupted_relaunches(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    script = f"echo x >> {ran}; " + POLITE
    wrapper = children.start(
        zombietop(db, fast_config_path, "run", "--task", "again", "--", "sh", "-c", script),
        stderr=subprocess.PIPE,
    )
    await wait_for(lambda: _beating(real_store, "again"), what="the first attempt's heartbeat")
    first_pid = (await real_store.get_task("again")).pid
    killed = await asyncio.to_thread(_cli, db, fast_config_path, "kill", "again", "--yes")
    assert killed.returncode == 0, killed.stderr
    await asyncio.to_thread(wrapper.wait, 20)
    assert (await real_store.get_task("again")).state is TaskState.INTERRUPTED

    resumed = await asyncio.to_thread(_cli, db, fast_config_path, "resume", "again", "--yes")
    assert resumed.returncode == 0, resumed.stderr
    await wait_for(lambda: ran.exists() and len(ran.read_text().split()) == 2, what="a relaunch")
    task = await real_store.get_task("again")
    assert task.attempt == 2

    async def relaunched_pid() -> bool:
        pid = (await real_store.get_task("again")).pid
        return pid is not None and pid != first_pid

    await wait_for(relaunched_pid, what="the relaunched attempt's pid")
    second_pid = (await real_store.get_task("again")).pid
    assert second_pid is not None
    children.track_group(second_pid)  # stopped at the end of the test whatever happens


SDK_POLITE = """\
import signal, sys, time
from zombietop import Job

stop = False
def polite(signum, frame):
    global stop
    stop = True

signal.signal(signal.SIGTERM, polite)
with Job("sdk-polite", db=sys.argv[1], config=sys.argv[2], handle_sigterm=False) as job:
    job.beat("load", 7)
    while not stop:
        time.sleep(0.05)
"""


async def test_an_sdk_job_that_handles_term_itself_and_exits_0_after_a_kill_is_interrupted(
    real_store: SQLiteStore, db: Path, patient_config_path: Path, children: Children, tmp_path: Path
) -> None:
    script = tmp_path / "polite.py"
    script.write_text(SDK_POLITE)
    # --task on its command line ties the process to the task, so the kill may signal it.
    job = children.start(
        [sys.executable, str(script), str(db), str(patient_config_path), "--task", "sdk-polite"]
    )
    await wait_for(lambda: _beating(real_store, "sdk-polite"), what="the SDK job's first beat")
    killed = await asyncio.to_thread(_cli, db, patient_config_path, "kill", "sdk-polite", "--yes")
    assert killed.returncode == 0, killed.stderr
    assert await asyncio.to_thread(job.wait, 20) == 0
    task = await real_store.get_task("sdk-polite")
    assert task.state is TaskState.INTERRUPTED and "stopped by a kill by" in (
        task.state_reason or ""
    )
    after = await asyncio.to_thread(
        _cli,
        db,
        patient_config_path,
        "run",
        "--task",
        "next",
        "--after",
        "sdk-polite",
        "--",
        "true",
    )
    assert after.returncode != 0 and "was interrupted" in after.stderr

    def sdk_dependent() -> None:
        with Job("next-sdk", db=db, config=patient_config_path, after=["sdk-polite"]):
            raise AssertionError("the SDK started a dependent of an interrupted task")

    with pytest.raises(UpstreamBlocked, match="upstream sdk-polite was interrupted"):
        await asyncio.to_thread(sdk_dependent)
