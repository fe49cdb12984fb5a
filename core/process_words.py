"""What a page line says of a task's process: alive or gone, stopped, its CPU, how long idle."""

from __future__ import annotations

from zombietop.durations import format_age
from zombietop.model import ProcessSample

IO_IDLE_WORTH_SAYING = 60.0
"""An idle process (no I/O, or no CPU and no I/O) is worth a word in a page line after this."""
STOPPED = ("stopped", "tracing-stop")
"""Process statuses of a process that cannot run until someone sends it SIGCONT."""


def process_words(process: ProcessSample, idle_after: float | None = IO_IDLE_WORTH_SAYING) -> str:
    """``pid 4121 alive cpu 0%``, with how long it has been idle past ``idle_after`` (None:
    the line says it already)."""
    if not process.alive:
        return f"pid {process.pid} gone"
    if not process.identity_ok:
        return f"pid {process.pid} reused by another process"
    if process.status == "zombie":
        return f"pid {process.pid} zombie"
    words = f"pid {process.pid} alive"
    if process.status in STOPPED:
        words = f"pid {process.pid} stopped"
    if process.children:
        # The work is often a grandchild (sh -c 'python job.py'): say the numbers are the tree's.
        plural = "child" if process.children == 1 else "children"
        words = f"pid {process.pid} + {process.children} {plural}"
        if process.status in STOPPED:
            words += " (stopped)"
        if process.cpu_percent is not None:
            words += ","  # the figure after it is the tree's, not the first process's
    if process.cpu_percent is not None:
        words += f" cpu {process.cpu_percent:.0f}%"
    if idle_after is None:
        return words
    if process.idle_s is not None and process.idle_s >= idle_after:
        words += f", idle {format_age(process.idle_s)} (no CPU, no I/O)"
    elif process.io_idle_s is not None and process.io_idle_s >= IO_IDLE_WORTH_SAYING:
        words += f", no I/O for {format_age(process.io_idle_s)}"
    return words
