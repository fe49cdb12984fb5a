"""Resume and discard through the executor: engine commands, compensation, and the CLI door."""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, wait_for, zombietop
from tests.stores import open_for_test
from zombietop.act.executor import Executor
from zombietop.actions import Outcome
from zombietop.config import Config, load_config
from zombietop.heartbeat_line import BeatLine
from zombietop.model import EventKind, TaskState
from zombietop.store import Store


def _config(tmp_path: Path, step_type: str) -> Config:
    path = tmp_path / "engine.toml"
    path.write_text(FAST_CONFIG + step_type)
    return load_config(path)


async def _interrupted(live_store: Store, task_id: str = "t1", step_type: str = "etl") -> int:
    await live_store.create_task(
        task_id=task_id, run_id="r", step="s", step_type=step_type, actor="t"
    )
    lease = await live_store.acquire_lease(task_id, owner="old", ttl=60)
    await live_store.record_heartbeat(
        task_id, BeatLine(stage="copy", checkpoint="row 42"), owner="old", token=lease.token
    )
    await live_store.finish_task(
        task_id, owner="old", token=lease.token, state=TaskState.INTERRUPTED
    )
    return lease.token


async def test_resume_command_gets_placeholders_as_arguments_not_a_shell(
    live_store: Store, store_location: Path | str, tmp_path: Path
) -> None:
    out = tmp_path / "engine-args"
    script = f"import sys; open({str(out)!r}, 'w').write('|'.join(sys.argv[1:]))"
    fast_config = _config(
        tmp_path,
        f'[step_types.etl]\nresume_command = ["{sys.executable}", "-c", "{script}", '
        '"resume", "{task_id}", "--from", "{checkpoint}"]\n',
    )
    token = await _interrupted(live_store)

    outcome = await Executor(live_store, fast_config).resume(
        "t1", expected_token=token, actor="oncall"
    )

    assert outcome.outcome is Outcome.RELAUNCHED, outcome.message
    assert outcome.new_token == token + 1
    await wait_for(out.exists, what="the resume command to run")
    await wait_for(lambda: out.read_text() != "", what="its arguments")
    # "row 42" arrives as one argument: no shell ever split it.
    assert out.read_text() == "resume|t1|--from|row 42"
    task = await live_store.get_task("t1")
    assert (task.state, task.attempt, task.checkpoint) == (TaskState.QUEUED, 2, "row 42")


async def test_failed_compensation_blocks_the_resume_and_says_why(
    live_store: Store, tmp_path: Path
) -> None:
    fast_config = _config(
        tmp_path,
        '[step_types.etl]\ncompensate_command = ["sh", "-c", "echo half-written file locked >&2; '
        'exit 3"]\n',
    )
    token = await _interrupted(live_store)

    outcome = await Executor(live_store, fast_config).resume(
        "t1", expected_token=token, actor="oncall"
    )

    assert outcome.outcome is Outcome.REFUSED
    assert outcome.message == (
        "not resuming t1: compensation 'sh' failed with exit 3: half-written file locked"
    )
    task = await live_store.get_task("t1")
    assert task.state is TaskState.INTERRUPTED and task.attempt == 1
    [event] = [e for e in await live_store.events(task_id="t1") if e.kind == EventKind.ACTION]
    assert event.data["outcome"] == "refused" and event.data["compensation"] == "failed"


async def test_compensation_runs_before_the_requeue(live_store: Store, tmp_path: Path) -> None:
    marker = tmp_path / "undone"
    fast_config = _config(
        tmp_path,
        f'[step_types.etl]\ncompensate_command = ["touch", "{marker}"]\n',
    )
    token = await _interrupted(live_store)
    outcome = await Executor(live_store, fast_config).resume(
        "t1", expected_token=token, actor="oncall"
    )
    assert outcome.outcome is Outcome.REQUEUED and marker.exists()
    assert "requeued for its engine as attempt 2 (checkpoint row 42)" in outcome.message


async def test_cli_actions_confirm_and_report(
    live_store: Store, store_location: Path | str, fast_config_path: Path
) -> None:
    await _interrupted(live_store, step_type="default")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            zombietop(store_location, fast_config_path, *args),
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )

    unconfirmed = cli("discard", "t1")
    assert unconfirmed.returncode == 2
    assert unconfirmed.stderr == (
        "zombietop: refusing to discard t1 without confirmation: stdin is not a terminal; "
        "pass --yes to confirm\n"
    )
    resumed = cli("resume", "t1", "--yes", "--reason", "flaky network")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("t1: requeued: t1 requeued for its engine as attempt 2")
    discarded = cli("discard", "t1", "--yes")
    assert discarded.returncode == 0
    assert discarded.stdout == (
        "t1: discarded: t1 discarded (token 2 -> 3); artifacts kept, dependents stay blocked\n"
    )
    again = cli("resume", "t1", "--yes")
    assert again.returncode == 1
    assert "t1 is discarded; there is nothing to resume" in again.stdout
    missing = cli("kill", "nope", "--yes")
    assert missing.returncode == 2 and "no task 'nope'" in missing.stderr
    actions = [e for e in await live_store.events(task_id="t1") if e.kind == EventKind.ACTION]
    assert [e.data["outcome"] for e in actions] == ["refused", "discarded", "requeued"]
    assert actions[-1].data["reason"] == "flaky network"


def test_core_never_imports_the_tui_toolkits() -> None:
    code = (
        "import sys, zombietop.act.executor, zombietop.run.runner, zombietop.sdk, zombietop.procs\n"
        "import zombietop.run.claim\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30
    )
    assert result.stdout.strip() == "[]", result.stderr


@pytest.mark.parametrize("kind", ["resume", "discard", "kill"])
async def test_read_only_store_refuses_every_action(
    live_store: Store, store_location: Path | str, fast_config: Config, kind: str
) -> None:
    token = await _interrupted(live_store)
    async with await open_for_test(store_location, read_only=True) as read_only:
        executor = Executor(read_only, fast_config)
        assert executor.read_only
        outcome = await getattr(executor, kind)("t1", expected_token=token, actor="wall")
    assert outcome.outcome is Outcome.REFUSED and "read-only" in outcome.message
    assert (await live_store.get_task("t1")).state is TaskState.INTERRUPTED


def _read_until(fd: int, needle: bytes, timeout: float = 20.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"timed out waiting for {needle!r}; saw {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 1024)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


@pytest.mark.parametrize(("answer", "state"), [(b"n", "interrupted"), (b"y", "discarded")])
async def test_terminal_confirmation_is_asked_and_obeyed(
    live_store: Store, store_location: Path | str, fast_config_path: Path, answer: bytes, state: str
) -> None:
    await _interrupted(live_store, step_type="default")
    # A real zombietop on a real terminal (a pty), spawned without forking this threaded process.
    fd, tty = os.openpty()
    child = subprocess.Popen(
        zombietop(store_location, fast_config_path, "discard", "t1"),
        stdin=tty,
        stdout=tty,
        stderr=tty,
    )
    os.close(tty)
    try:
        prompt = _read_until(fd, b"[y/N] ")
        assert b"discard t1 (interrupted, stage copy, token 1)? [y/N] " in prompt
        os.write(fd, answer + b"\n")
        said = _read_until(fd, b"nothing done" if answer == b"n" else b"t1: discarded")
        code = await asyncio.to_thread(child.wait, 20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(fd)
    assert code == (1 if answer == b"n" else 0), said
    assert (await live_store.get_task("t1")).state == state
