"""Helpers for tests that use real processes, real signals and a real SQLite store."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import psutil
import pytest

from zombietop.clock import CLOCK_TICKS
from zombietop.procs import read_start, this_host
from zombietop.start_identity import StartIdentity
from zombietop.store import Store, location_of

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


CHILD_MARK = "ZOMBIETOP_TEST_CHILDREN"
"""Set in the environment of every child a test starts, with a value of that test's own: every
descendant inherits it, also one that left the group or the session, so the test's end finds
and kills them all (a ``setsid sleep 3011`` left by a failed test would otherwise run on, and
match the tags of a later test's task)."""


class Children:
    """Real child processes a test starts; whatever is left is killed, group and all, at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.groups: set[int] = set()
        self.mark = uuid.uuid4().hex

    def start(self, argv: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        kwargs.setdefault("process_group", 0)
        env = kwargs.get("env")
        base = os.environ if env is None else env
        kwargs["env"] = {**base, CHILD_MARK: self.mark}  # type: ignore[dict-item]
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
        for descendant in [*self._descendants(), *self._marked()]:
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

    def _marked(self) -> list[psutil.Process]:
        """The live processes that carry this test's mark: descendants that left the group."""
        found: list[psutil.Process] = []
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if proc.environ().get(CHILD_MARK) == self.mark:
                    found.append(proc)
        return found

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
    while_running: subprocess.Popen[bytes] | None = None,
) -> None:
    """Poll ``check`` until it is true; fail the test after ``timeout`` seconds.

    With ``while_running``, wait for as long as that process runs (``timeout`` then only
    bounds a hang: at most ``HANG_S``), and fail at once when it exits: on a busy machine a
    Python process can take many seconds to start, and that is no failure.
    """
    if while_running is not None:
        timeout = max(timeout, HANG_S)
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if while_running is not None and while_running.poll() is not None:
            raise AssertionError(
                f"pid {while_running.pid} exited ({while_running.returncode}) before {what}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


HANG_S = 60.0
"""How long a process that still runs may take to do what a test waits for: far more than the
busiest machine needs, and less than the test's own timeout (pytest's, 120 s)."""


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
    env = {**os.environ, **attempt_tags(task_id, real_store)} if tagged else None
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


def attempt_tags(task_id: str, store: Store, attempt: int = 1) -> dict[str, str]:
    """What `zombietop run` puts in its command's environment to tie it to one attempt of
    ``store``'s task. The store is part of it: every test names its task t1, and a process of
    another test's t1 must never look like one of this test's attempt."""
    return {
        "ZOMBIETOP_TASK": task_id,
        "ZOMBIETOP_ATTEMPT": str(attempt),
        "ZOMBIETOP_DB": str(location_of(store)),
    }


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


@contextlib.contextmanager
def throwaway_user() -> Iterator[pwd.struct_passwd]:
    """A new OS user (root only; skip otherwise), deleted again afterwards with whatever it
    still runs: every process of it is one the test started."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user with useradd; run the suite as root")
    if shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.skip("useradd and setpriv (util-linux) are needed to act as a second user")
    name = f"zt{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    user = pwd.getpwnam(name)
    try:
        yield user
    finally:
        end_processes_of(user.pw_uid)
        subprocess.run(["userdel", name], check=False, capture_output=True)


def as_user(user: pwd.struct_passwd, *argv: str) -> list[str]:
    """``argv`` run as ``user`` (real and effective ids, no extra groups), by setpriv's exec."""
    return [
        "setpriv",
        f"--reuid={user.pw_uid}",
        f"--regid={user.pw_gid}",
        "--clear-groups",
        "--",
        *argv,
    ]


def uids_of(pid: int) -> int | None:
    """The real uid of ``pid``; None when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next(line for line in status.splitlines() if line.startswith("Uid:"))
    return int(line.split()[1])


def tasks_of(uid: int) -> int:
    """What RLIMIT_NPROC counts for ``uid``: the threads of its processes, zombies included."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            status = Path(f"/proc/{name}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid:
            total += int(fields["Threads"])
    return total


def end_processes_of(uid: int) -> None:
    """SIGKILL every process of ``uid`` (a user the test made), stopped first so that none
    starts another meanwhile."""
    for _ in range(50):
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit() and uids_of(int(n)) == uid]
        if not pids:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
        time.sleep(0.05)


def blocked_writing_to_a_pipe(pid: int) -> bool:
    """True while the main thread of ``pid`` waits in a write to a full pipe."""
    try:
        return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


class Said:
    """The lines a process writes on a pipe, read on a thread as they come."""

    def __init__(self, stream: BinaryIO) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._ended = False
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: BinaryIO) -> None:
        with stream:
            for raw in stream:
                with self._changed:
                    self.lines.append(raw.decode(errors="replace"))
                    self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = 30.0) -> bool:
        """True once a line holds ``text``; False if the stream ends (or times out) first."""

        def seen() -> bool:
            return any(text in line for line in self.lines)

        with self._changed:
            self._changed.wait_for(lambda: self._ended or seen(), timeout)
            return seen()

    def all(self, timeout: float = 30.0) -> str:
        """Everything, once the stream ended (or ``timeout`` passed)."""
        with self._changed:
            self._changed.wait_for(lambda: self._ended, timeout)
            return "".join(self.lines)


class FullPipe:
    """A pipe whose buffer is full, so the first write to it blocks until the test drains it."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        self._filled = 0
        for size in (1 << 16, 1):
            with contextlib.suppress(BlockingIOError):
                while True:
                    self._filled += os.write(self.write, b"x" * size)
        os.set_blocking(self.write, True)

    def drain(self) -> Said:
        """Read it from now on, the filling left out; the test's copy of the write end (the
        child has its own) is closed."""
        os.close(self.write)
        stream = os.fdopen(self.read, "rb")
        stream.read(self._filled)
        return Said(stream)
