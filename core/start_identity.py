"""When a process started, told exactly: the boot, and the clock tick of that boot it began in.

PIDs are reused, so a process is known by its PID and its start. Linux counts a start in clock
ticks since boot (/proc/<pid>/stat, field 22). A wall-clock start time is built from that count
on the boot time, which /proc/stat gives in whole seconds and which moves when the wall clock is
stepped: two readings of one process can differ by up to a second, and two processes that
started a fraction of a second apart can read alike. So the identity checks compare the ticks,
on the host's count (``clock.host_ticks``), together with the boot id: equal ticks of one boot
are one process, another boot is another process. The wall-clock time stays for people to
read, and for the checks where one side has no ticks.
"""

from __future__ import annotations

from dataclasses import dataclass

START_TIME_TOLERANCE = 1.0
"""Seconds two wall-clock readings of one process's start may differ by, for the checks that
have no ticks on one side: psutil builds the time on the boot time, which Linux reports in whole
seconds and which moves when the wall clock is stepped."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StartIdentity:
    """A process's start as the kernel counts it: which boot, and how many clock ticks after
    the host's boot it started. Every reader on the host reads the same value."""

    boot_id: str
    ticks: int
    """Clock ticks (SC_CLK_TCK a second) from the host's boot to the start, with the reader's
    time namespace offset taken away."""

    @classmethod
    def from_columns(cls, boot: str | None, ticks: int | None) -> StartIdentity | None:
        """The identity stored in two columns; None for a row written without one."""
        if boot is None or ticks is None:
            return None
        return cls(boot_id=boot, ticks=int(ticks))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessStart:
    """A process's start, as recorded or as read from the system just now."""

    time: float
    """Seconds since the epoch: for people, and for the checks that have no ticks."""
    identity: StartIdentity | None = None
    """None where the kernel's count is not known: a row written by a zombietop before the
    store kept it, a system without /proc, a time taken from another clock."""


def start_words(start: ProcessStart | None) -> str:
    """``1796160314.87 (tick 360014 of boot ecfddbb6)``, or ``unknown``."""
    if start is None:
        return "unknown"
    if start.identity is None:
        return f"{start.time:.2f}"
    identity = start.identity
    return f"{start.time:.2f} (tick {identity.ticks} of boot {identity.boot_id[:8]})"


def same_start(recorded: ProcessStart | None, actual: ProcessStart | None) -> bool:
    """True when ``actual`` (read from a live PID; None: no such process) is the process
    ``recorded`` describes (None: nothing was recorded, trust the PID).

    Exact when both sides have the kernel's count. Only when a side lacks it, compare the
    wall-clock times within ``START_TIME_TOLERANCE``: nothing better can be known then.
    """
    if actual is None:
        return False
    if recorded is None:
        return True
    if recorded.identity is not None and actual.identity is not None:
        return recorded.identity == actual.identity
    return abs(recorded.time - actual.time) <= START_TIME_TOLERANCE
