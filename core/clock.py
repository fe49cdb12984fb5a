"""Time is an argument: the store owns a clock, tests hand it a fake one."""

from __future__ import annotations

import functools
import os
import time
from typing import Protocol


class Clock(Protocol):
    """A source of wall-clock time in seconds since the epoch (UTC)."""

    def now(self) -> float: ...


class SystemClock:
    """The machine's wall clock."""

    def now(self) -> float:
        return time.time()


class FakeClock:
    """A clock that moves only when told to; for tests and snapshot screens."""

    def __init__(self, start: float = 1_796_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        """Move forward ``seconds`` and return the new time."""
        self._now += seconds
        return self._now

    def set(self, when: float) -> None:
        self._now = when


BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


@functools.cache
def boot_id() -> str | None:
    """This boot's id, the same in every container and time namespace of the host; None where
    the system has none. A boot keeps its id until the next boot, so it is read once."""
    try:
        with open(BOOT_ID_PATH, encoding="ascii") as file:
            return file.read().strip() or None
    except OSError:
        return None


def boot_identity() -> tuple[str, float] | None:
    """This boot's id and the seconds since it (``CLOCK_BOOTTIME``); None where there is none."""
    this_boot = boot_id()
    if this_boot is None:
        return None
    try:
        return this_boot, time.clock_gettime(time.CLOCK_BOOTTIME)
    except (OSError, AttributeError):
        return None


# The host's boot clock, whatever time namespace reads it ------------------------------------
#
# A process in a time namespace (``unshare --time --boottime 3600``, some containers) keeps the
# host's boot id but reads CLOCK_BOOTTIME moved by its namespace's offset, and the kernel moves
# every start time in /proc/<pid>/stat (clock ticks since boot) by the same offset. Two readers
# on one host, one inside such a namespace, would then see one process start an hour apart, and
# a boot-clock age an hour off. Taking the reader's own offset away gives the host's count: the
# same number for every reader on the host. This is the one place that knows the offset.

TIMENS_OFFSETS_PATH = "/proc/self/timens_offsets"
"""This process's time namespace offsets (``boottime <seconds> <nanoseconds>``); absent on
kernels without time namespaces."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Clock ticks a second, the unit of start times in /proc/<pid>/stat."""


@functools.cache
def boottime_offset_ns() -> int | None:
    """How far this process's CLOCK_BOOTTIME runs ahead of the host's, in nanoseconds.

    0 outside any time namespace, and on kernels without them. None when this process cannot
    know it: the offsets file then describes the namespace its children will get, not its own
    (it left its namespace for them with unshare(CLONE_NEWTIME)), or it cannot be read. A
    process cannot change its own time namespace's offsets, so this is read once.
    """
    try:
        with open(TIMENS_OFFSETS_PATH, encoding="ascii") as file:
            lines = file.read().splitlines()
    except FileNotFoundError:
        return 0  # no time namespaces on this kernel (or no /proc at all): the host's clock
    except OSError:
        return None
    try:
        if os.readlink("/proc/self/ns/time") != os.readlink("/proc/self/ns/time_for_children"):
            return None
    except OSError:
        return None
    for line in lines:
        name, *values = line.split()
        if name == "boottime" and len(values) == 2:
            seconds, nanoseconds = int(values[0]), int(values[1])
            return seconds * 1_000_000_000 + nanoseconds
    return None


def host_boottime() -> float | None:
    """CLOCK_BOOTTIME as the host sees it: this process's reading less its time namespace's
    offset. None where there is no boot clock or the offset cannot be known."""
    offset = boottime_offset_ns()
    if offset is None:
        return None
    try:
        return time.clock_gettime(time.CLOCK_BOOTTIME) - offset / 1e9
    except (OSError, AttributeError):
        return None


def host_ticks(seen: int) -> int | None:
    """A start time read from /proc/<pid>/stat (clock ticks since boot, as this process's time
    namespace shows it) on the host's count.

    None when the offset cannot be known, or is not a whole number of ticks: the kernel rounds
    down the sum of a start and the offset, so such an offset would leave one tick unsure.
    """
    offset = boottime_offset_ns()
    if offset is None:
        return None
    tick_ns, rest = divmod(1_000_000_000, CLOCK_TICKS)
    if rest or offset % tick_ns:
        return None
    return seen - offset // tick_ns


class AnchoredClock:
    """Wall time at an anchor plus the host's boot clock since (``host_boottime``).

    Every process on the host that reads the same anchor reads the same time, a process in a
    time namespace too (its offset is taken away), and a step of the wall clock (``date -s``,
    an NTP correction, a VM resumed) does not move it: the boot clock only runs forward, at
    the rate NTP keeps.
    """

    def __init__(self, *, wall: float, boot: float) -> None:
        self.wall = wall
        self.boot = boot

    def now(self) -> float:
        boot = host_boottime()
        if boot is None:  # never, once an anchor was read with it: the offset is read once
            return time.time()
        return self.wall + (boot - self.boot)
