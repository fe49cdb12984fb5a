"""How long a process tree has done nothing, from the kernel's own record (Linux).

The scheduler keeps, for each thread, when it last ran: ``se.exec_start`` in
``/proc/PID/task/TID/sched``, in milliseconds of the scheduler's clock. The reading thread's own
record, read at the same moment, is that clock's "now" (it is running as it reads). So one
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


def _now_ms() -> float | None:
    """The scheduler clock now, as the reading thread's own record of it."""
    return _exec_start_ms(f"/proc/self/task/{threading.get_native_id()}/sched")


def tree_idle_s(pids: Sequence[int]) -> float | None:
    """Seconds since any thread of the processes ``pids`` last ran; None where the kernel's
    record cannot be read for all of them (not Linux, a member or a thread that just ended)."""
    latest = 0.0
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return None
        for tid in threads:
            ran = _exec_start_ms(f"/proc/{pid}/task/{tid}/sched")
            if ran is None:
                return None
            latest = max(latest, ran)
    now = _now_ms()  # read last: the newest moment of the reads
    if now is None or not latest:
        return None
    # The own record is updated at each scheduler tick, so it can be a few ms behind a thread
    # that ran since: that thread is not idle.
    return max(0.0, (now - latest) / 1000.0)


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
