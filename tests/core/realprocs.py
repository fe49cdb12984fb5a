"""Helpers for tests that use real processes, real signals and a real SQLite store."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psutil
import pytest

from zombietop.clock import CLOCK_TICKS
from zombietop.procs import read_start, this_host
from zombietop.start_identity import StartIdentity
from zombietop.store import Store

# Short thresholds so that stalled, reclaimable and a kill's grace happen within seconds.
FAST_CONFIG = """\
[thresholds]
heartbeat_interval = "100ms"
heartbeat_timeout = "600ms"
lease_ttl = "3s"
progress_timeout = "10s"
start_grace = "2s"

[timeouts]
request = "2s"
stage = "20s"
task = "1m"
kill_grace = "1s"
"""

ZOMBIETOP = (sys.executable, "-m", "zombietop.tui")

DEFAULT_SIGNALS = ("env", "--default-signal=HUP,INT,QUIT,TERM")
"""The start of every child's argv: these signals at their default action, however the test run
was started. ``pytest &`` in a script ignores SIGINT and SIGQUIT and ``nohup`` ignores SIGHUP;
a child inherits what is ignored, and keeps it ignored (``zombietop run`` does, as shells do)."""


def zombietop(db: Path | str, fast_config_path: Path, *args: str) -> list[str]:
    """The argv of a real ``zombietop`` command against this test's store and config."""
    return [*ZOMBIETOP, "--db", str(db), "--config", str(fast_config_path), *args]


class Children:
    """Real child processes a test starts; whatever is left is killed, group and all, at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.groups: set[int] = set()

    def start(self, argv: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        kwargs.setdefault("process_group", 0)
        # env execs the command: the pid is the command's.
        proc = subprocess.Popen([*DEFAULT_SIGNALS, *argv], **kwargs)  # type: ignore[call-overload]
        self.procs.append(proc)
        if kwargs.get("process_group") == 0 or kwargs.get("start_new_session"):
            self.groups.add(proc.pid)
        return proc

    def track_group(self, pgid: int) -> None:
        self.groups.add(pgid)

    def cleanup(self) -> None:
        # `zombietop run` starts its command in a process group of its own: kill every
        # descendant too, or a busy command outlives the test (and the suite) forever.
        for descendant in self._descendants():
            with contextlib.suppress(psutil.Error):
                descendant.kill()
        for pgid in self.groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGCONT)
                os.killpg(pgid, signal.SIGKILL)
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=10)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    def _descendants(self) -> list[psutil.Process]:
        found: list[psutil.Process] = []
        for proc in self.procs:
            if proc.poll() is None:  # not reaped: its pid is still ours, never a reused one
                with contextlib.suppress(psutil.Error):
                    found.extend(psutil.Process(proc.pid).children(recursive=True))
        return found


async def wait_for(
    check: Callable[[], Awaitable[bool]] | Callable[[], bool],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "condition",
) -> None:
    """Poll ``check`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


def wait_for_file(path: Path, timeout: float = 10.0) -> None:
    """Block until ``path`` exists (a child's readiness marker)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {path}")
        time.sleep(0.01)


async def start_task_process(
    real_store: Store,
    children: Children,
    script: str,
    ready: Path,
    *,
    task_id: str = "t1",
    step_type: str = "default",
    start_time_offset: float = 0.0,
    host: str | None = None,
    tagged: bool = True,
    with_ticks: bool = True,
) -> subprocess.Popen[bytes]:
    """Create a leased task whose process is ``sh -c script`` leading its own group.

    The script must create ``ready`` once its traps and children are in place. Without
    ``with_ticks`` its start is recorded as a zombietop before schema v11 did: the wall-clock
    time alone.
    """
    await real_store.create_task(
        task_id=task_id, run_id="r1", step="s", step_type=step_type, actor="test"
    )
    lease = await real_store.acquire_lease(task_id, owner="test-owner", ttl=60)
    # Tagged as `zombietop run` tags its command: the executor signals only a process tied to
    # its task in /proc, never one the store's pid and start time alone point at.
    env = {**os.environ, "ZOMBIETOP_TASK": task_id} if tagged else None
    proc = children.start(["sh", "-c", script], env=env)
    wait_for_file(ready)
    start = read_start(proc.pid)
    assert start is not None
    identity = start.identity
    if identity is not None and with_ticks:
        # The offset moves the kernel's count as much as the wall-clock time.
        ticks = identity.ticks + round(start_time_offset * CLOCK_TICKS)
        identity = StartIdentity(boot_id=identity.boot_id, ticks=ticks)
    await real_store.set_process(
        task_id,
        owner="test-owner",
        token=lease.token,
        pid=proc.pid,
        pid_start_time=start.time + start_time_offset,
        pid_start_identity=identity if with_ticks else None,
        host=host or this_host(),
    )
    return proc


def start_with_pid(
    children: Children, pid: int, argv: list[str], **kwargs: object
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as the free ``pid``: the kernel hands out the PID after ns_last_pid."""
    last_pid = Path("/proc/sys/kernel/ns_last_pid")
    for _ in range(50):  # another process on the host may take the PID first
        try:
            last_pid.write_text(str(pid - 1))
        except OSError as exc:
            pytest.skip(f"choosing a PID needs {last_pid} writable (root): {exc}")
        proc = children.start(argv, **kwargs)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    raise AssertionError(f"could not start a process as pid {pid}")


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and has not exited (a zombie counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
