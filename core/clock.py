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
