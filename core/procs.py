"""The local process probe: what psutil sees of the PIDs behind tasks on this host.

A process is known by its PID *and* its start time: PIDs are reused, so a live PID whose start
time differs from the one recorded when the task started belongs to someone else.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from zombietop.clock import Clock, SystemClock
from zombietop.model import ProcessSample, Task
from zombietop.private import open_append

START_TIME_TOLERANCE = 1.0
"""Seconds two readings of one process's start time may differ by. psutil derives it from the
boot time, which Linux reports in whole seconds and which moves when the wall clock is stepped."""


def spawn_detached(
    argv: Sequence[str], *, log: Path, env: Mapping[str, str], cwd: str | Path | None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session of its own (no terminal signals reach it), its output appended
    to ``log`` (0600, never through a link), and reap it from a thread when it ends so no zombie
    of ours lingers."""
    with open(open_append(log), "ab") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc


TASK_ENV = "ZOMBIETOP_TASK"
"""What ``zombietop run`` (and a relaunch through it) puts in its command's environment."""


def tie(pid: int, task_id: str) -> str | None:
    """Say how ``pid`` is tied to ``task_id`` as /proc shows it now; None when it is not.

    The store's pid and start time can be forged by whoever writes the store, so before a
    signal the process itself must say it runs the task: ``ZOMBIETOP_TASK=<task>`` in its
    environment (every command ``zombietop run`` starts, and what they start), or a Python
    process (an SDK job) whose command line passes ``--task <task>``.
    """
    try:
        proc = psutil.Process(pid)
        try:
            if proc.environ().get(TASK_ENV) == task_id:
                return f"{TASK_ENV} in its environment"
        except psutil.AccessDenied:
            pass
        cmdline = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None
    if cmdline and Path(cmdline[0]).name.startswith(("python", "pypy", "zombietop")):
        for arg, value in itertools.pairwise(cmdline):
            if arg == "--task" and value == task_id:
                return "--task in its command line"
        if f"--task={task_id}" in cmdline:
            return "--task in its command line"
    return None


def untied(pid: int, task_id: str) -> str:
    """Why a process is not acted on for ``task_id``: what it would have needed."""
    return (
        f"pid {pid} carries no tag of {task_id} ({TASK_ENV}={task_id} in its environment, as "
        "`zombietop run` gives its command, or --task in an SDK job's command line); the "
        "store's pid and start time alone are not trusted, so nothing was signalled"
    )


def this_host() -> str:
    """The host name tasks record, so the probe and the executor know which PIDs are theirs.

    ``ZOMBIETOP_HOST`` overrides it where the system's name is not stable (containers) or not
    unique across a fleet.
    """
    return os.environ.get("ZOMBIETOP_HOST") or socket.gethostname()


def process_start_time(pid: int) -> float | None:
    """Return the start time of ``pid`` (epoch seconds), or None when no such process exists."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:
        # Start times are world-readable on Linux; elsewhere a foreign process may hide it.
        return None


def same_start(recorded: float | None, actual: float | None) -> bool:
    """True when two start times describe the same process (None recorded: trust the PID)."""
    if actual is None:
        return False
    return recorded is None or abs(recorded - actual) <= START_TIME_TOLERANCE


@dataclass(frozen=True, slots=True, kw_only=True)
class _Seen:
    """What the previous sample of one process saw, to turn totals into deltas."""

    create_time: float
    at: float
    cpu_seconds: float
    io_bytes: tuple[int, int] | None
    io_moved_at: float


class PsutilProbe:
    """Sample the processes behind tasks on this host; implements ``monitor.ProcessProbe``.

    Keeps the previous reading per process, so CPU% and I/O are deltas since the last sample.
    """

    def __init__(self, *, host: str | None = None, clock: Clock | None = None) -> None:
        self.host = host if host is not None else this_host()
        self._clock = clock or SystemClock()
        self._seen: dict[int, _Seen] = {}

    async def sample(self, tasks: Sequence[Task]) -> Mapping[str, ProcessSample]:
        """Return a sample per task id for the tasks with a PID on this host."""
        mine = [t for t in tasks if t.pid is not None and t.host == self.host]
        if not mine:
            return {}
        # psutil reads /proc synchronously: keep it off the caller's event loop.
        return await asyncio.to_thread(self.sample_now, mine)

    def sample_now(self, tasks: Sequence[Task]) -> dict[str, ProcessSample]:
        """Sample synchronously (the blocking half of ``sample``)."""
        now = self._clock.now()
        samples: dict[str, ProcessSample] = {}
        live: set[int] = set()
        for task in tasks:
            if task.pid is None:
                continue
            samples[task.task_id] = self._one(task.pid, task.pid_start_time, now)
            live.add(task.pid)
        # Forget processes no task points at any more, so the state cannot grow without bound.
        for pid in set(self._seen) - live:
            del self._seen[pid]
        return samples

    def _one(self, pid: int, recorded_start: float | None, now: float) -> ProcessSample:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                create_time = proc.create_time()
                if not same_start(recorded_start, create_time):
                    self._seen.pop(pid, None)
                    return ProcessSample(
                        pid=pid,
                        alive=True,
                        identity_ok=False,
                        create_time=create_time,
                        sampled_at=now,
                    )
                status = proc.status()
                times = proc.cpu_times()
                cpu_seconds = times.user + times.system
                rss = proc.memory_info().rss
                threads = proc.num_threads()
                io = _io_bytes(proc)
            children = len(proc.children(recursive=True))
        except psutil.ZombieProcess:
            # Exited but not reaped (its parent is stuck or frozen): the task's work is over.
            self._seen.pop(pid, None)
            return ProcessSample(pid=pid, alive=True, status="zombie", sampled_at=now)
        except psutil.NoSuchProcess:
            self._seen.pop(pid, None)
            return ProcessSample(pid=pid, alive=False, sampled_at=now)
        except psutil.AccessDenied:
            # Another user's process: we know it exists, not what it does.
            return ProcessSample(pid=pid, alive=True, sampled_at=now)

        previous = self._seen.get(pid)
        if previous is not None and previous.create_time != create_time:
            previous = None
        cpu_percent = read_delta = write_delta = None
        io_moved_at = now
        if previous is not None:
            elapsed = now - previous.at
            if elapsed > 0:
                cpu_percent = max(0.0, 100.0 * (cpu_seconds - previous.cpu_seconds) / elapsed)
            if io is not None and previous.io_bytes is not None:
                read_delta = io[0] - previous.io_bytes[0]
                write_delta = io[1] - previous.io_bytes[1]
                io_moved_at = now if (read_delta or write_delta) else previous.io_moved_at
        self._seen[pid] = _Seen(
            create_time=create_time,
            at=now,
            cpu_seconds=cpu_seconds,
            io_bytes=io,
            io_moved_at=io_moved_at,
        )
        return ProcessSample(
            pid=pid,
            alive=True,
            identity_ok=True,
            status=str(status),
            cpu_percent=cpu_percent,
            rss_bytes=rss,
            threads=threads,
            read_bytes_delta=read_delta,
            write_bytes_delta=write_delta,
            io_idle_s=None if io is None else now - io_moved_at,
            children=children,
            create_time=create_time,
            sampled_at=now,
        )


def _io_bytes(proc: psutil.Process) -> tuple[int, int] | None:
    """Read and write byte totals, or None where the platform or permissions hide them."""
    try:
        counters = proc.io_counters()  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, psutil.AccessDenied, NotImplementedError):
        return None
    return int(counters.read_bytes), int(counters.write_bytes)
