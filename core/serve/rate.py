"""A rate limit per job: at most ``limit`` pings in any minute, as healthchecks allows.

Kept in memory, one window per job, on the caller's clock (injected in tests). The number of
jobs tracked is bounded: the one quiet for longest is forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable

WINDOW = 60.0
MAX_JOBS = 10_000


class RateLimit:
    """Allow each job ``limit`` pings per ``WINDOW`` seconds."""

    def __init__(self, limit: int, clock: Callable[[], float], *, max_jobs: int = MAX_JOBS) -> None:
        self.limit = limit
        self.clock = clock
        self.max_jobs = max_jobs
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def allow(self, job: str) -> bool:
        """Count one ping of ``job``; False when it is over the limit (not counted then)."""
        now = self.clock()
        times = self._seen.pop(job, None)
        if times is None:
            times = deque()
        while times and times[0] <= now - WINDOW:
            times.popleft()
        self._seen[job] = times
        while len(self._seen) > self.max_jobs:
            self._seen.popitem(last=False)
        if len(times) >= self.limit:
            return False
        times.append(now)
        return True
