"""Time is an argument: the store owns a clock, tests hand it a fake one."""

from __future__ import annotations

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


def boot_identity() -> tuple[str, float] | None:
    """This boot's id and the seconds since it (``CLOCK_BOOTTIME``); None where there is none."""
    try:
        with open(BOOT_ID_PATH, encoding="ascii") as file:
            boot_id = file.read().strip()
        return boot_id, time.clock_gettime(time.CLOCK_BOOTTIME)
    except (OSError, AttributeError):
        return None


class AnchoredClock:
    """Wall time at an anchor plus the kernel's boot clock since.

    Every process on the host that reads the same anchor reads the same time, and a step of
    the wall clock (``date -s``, an NTP correction, a VM resumed) does not move it: the
    boot clock only runs forward, at the rate NTP keeps.
    """

    def __init__(self, *, wall: float, boot: float) -> None:
        self.wall = wall
        self.boot = boot

    def now(self) -> float:
        return self.wall + (time.clock_gettime(time.CLOCK_BOOTTIME) - self.boot)
