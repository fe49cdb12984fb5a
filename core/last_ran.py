"""How long a process tree has done nothing, from the kernel's own record (Linux).

The scheduler keeps, for each thread, when it last ran: ``se.exec_start`` in
``/proc/PID/task/TID/sched``, in milliseconds of the scheduler's clock of the CPU it ran on. The
reading thread's own record, read on that CPU, is that clock's "now" (it runs as it reads). So one
read says how long ago each thread of a tree last ran, with no earlier sample: a ``status`` run
once knows that a task has been idle for 35 minutes.

How I/O counts: the samples count I/O at the system calls (``rchar`` and ``wchar``), and a
thread runs to make each call and to return from it. A tree whose threads have not run has done
no such I/O either, so "has not run for N" means "no CPU and no I/O for N". A thread blocked in
I/O that never returns (a hung network mount) does not run: it counts as idle, which is right,
as that is a hang too.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence

from zombietop.model import IdleSource

_FIELD = b"se.exec_start"


def _exec_start_ms(path: str) -> float | None:
    """The ``se.exec_start`` of one thread's sched file; None when it cannot be read, or reads 0
    (the kernel clears it when it moves a sleeping thread to another CPU)."""
    try:
        with open(path, "rb") as file:
            data = file.read(4096)
    except OSError:
        return None
    at = data.find(_FIELD)
    if at < 0:
        return None
    line = data[at : data.find(b"\n", at)]
    try:
        value = float(line.rpartition(b":")[2])
    except ValueError:
        return None
    return value or None


def _last_cpu(pid: int, tid: str) -> int | None:
    """The CPU the thread last ran on (field 39 of its stat file); None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat", "rb") as file:
            data = file.read(4096)
    except OSError:
        return None
    fields = data.rpartition(b")")[2].split()
    try:
        return int(fields[36])  # fields after the name start at field 3, the state
    except (IndexError, ValueError):
        return None


_REFERENCES: dict[int, tuple[float, float]] = {}
"""By CPU, the scheduler clock of that CPU as last read (ms) and when (``time.monotonic``)."""
REFERENCE_FOR_S = 1.0
"""How long one reading of a CPU's scheduler clock serves, moved on by the monotonic clock."""


def _now_on(cpu: int) -> float | None:
    """The scheduler clock of ``cpu`` now, in ms: the reading thread's own record of it, read
    while it runs there.

    Each CPU has a clock of its own, which leaves out the time that CPU spent in interrupts
    (and, in a VM, the time stolen from it): over weeks they drift apart by seconds or more, so
    a thread's record is only compared with the clock of the CPU it last ran on. The reading
    thread moves to that CPU for the read, then back (only this thread moves)."""
    now = time.monotonic()
    known = _REFERENCES.get(cpu)
    if known is not None and 0 <= now - known[1] < REFERENCE_FOR_S:
        return known[0] + (now - known[1]) * 1000.0
    own = f"/proc/self/task/{threading.get_native_id()}/sched"
    try:
        allowed = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
    except (OSError, AttributeError):
        return None  # a CPU outside this process's set, or not Linux
    try:
        reading = _exec_start_ms(own)
        at = time.monotonic()
    finally:
        os.sched_setaffinity(0, allowed)
    if reading is not None:
        _REFERENCES[cpu] = (reading, at)
    return reading


def tree_idle_s(pids: Sequence[int]) -> float | None:
    """Seconds since any thread of the processes ``pids`` last ran; None where the kernel's
    record cannot be read for all of them (not Linux, a member or a thread that just ended)."""
    latest: dict[int, float] = {}
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return None
        for tid in threads:
            ran = _exec_start_ms(f"/proc/{pid}/task/{tid}/sched")
            cpu = _last_cpu(pid, tid)
            if ran is None or cpu is None:
                return None
            latest[cpu] = max(latest.get(cpu, 0.0), ran)
    idle: float | None = None
    for cpu, ran in latest.items():
        now = _now_on(cpu)
        if now is None:
            return None
        # The own record is updated at each scheduler tick, so it can be a few ms behind a
        # thread that ran since: that thread is not idle.
        since = max(0.0, (now - ran) / 1000.0)
        idle = since if idle is None else min(idle, since)
    return idle


def longer_idle(
    kernel_s: float | None, sampled_s: float | None
) -> tuple[float | None, IdleSource | None]:
    """The idle time to report and where it came from: the longer of the kernel's record and
    the samples' (each is a lower bound of how long the tree has done nothing)."""
    if kernel_s is None and sampled_s is None:
        return None, None
    if sampled_s is None or (kernel_s is not None and kernel_s >= sampled_s):
        return kernel_s, IdleSource.KERNEL
    return sampled_s, IdleSource.SAMPLES
