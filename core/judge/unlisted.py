"""The words every face says of the tasks a poll did not list (``Snapshot.counted``).

A poll of a store with more than ``[monitor] read_at_most`` active tasks counts the quiet ones
instead of reading them, and leaves unread the loud ones past the limit. The dashboard, the
wall, ``status`` and the watchdog say so in the same words, made here.
"""

from __future__ import annotations

from zombietop.health import Health
from zombietop.judge.quiet import Counted
from zombietop.judge.snapshot import Snapshot

KEY = "[monitor] read_at_most"
"""The config key that sets how many tasks a poll reads whole."""


def _and(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def quiet_line(counted: Counted) -> str | None:
    """``921,635 healthy and 3,012 queued tasks counted by the store, not listed (more than
    20,000 active; [monitor] read_at_most)``; None when no task was counted quiet."""
    counts = [(counted.quiet.get(h, 0), h) for h in Health]
    # The most first: on a fleet the healthy ones outnumber the rest by far.
    counts.sort(key=lambda pair: -pair[0])
    parts = [f"{n:,} {health}" for n, health in counts if n > 0]
    if not parts:
        return None
    return (
        f"{_and(parts)} tasks counted by the store, not listed "
        f"(more than {counted.read_at_most:,} active; {KEY})"
    )


def unread_line(counted: Counted) -> str | None:
    """``12,000 more tasks were not read and may need attention: the 20,000 silent longest are
    listed``; None when every task that may need attention was read."""
    if counted.unread <= 0:
        return None
    noun = "task was" if counted.unread == 1 else "tasks were"
    return (
        f"{counted.unread:,} more {noun} not read and may need attention: "
        f"the {counted.read_at_most:,} silent longest are listed"
    )


def unlisted_lines(counted: Counted | None) -> list[str]:
    """What a face prints after its list of tasks: the quiet tasks counted, then the tasks
    left unread; nothing when the poll read every task (``counted`` is None)."""
    if counted is None:
        return []
    return [line for line in (quiet_line(counted), unread_line(counted)) if line is not None]


def unread_log_line(before: int, snapshot: Snapshot) -> str | None:
    """The watchdog's log line when the number of tasks left unread went from ``before`` to
    what ``snapshot`` left: once when some are first left unread, once when none are any more
    (None otherwise: the metric ``zombietop_tasks_unread`` carries the number at each poll)."""
    now, counted = snapshot.left_unread, snapshot.counted
    if now > 0 and before == 0 and counted is not None:
        return (
            f"{now:,} active tasks were left unread: more tasks may need attention than "
            f"{KEY} ({counted.read_at_most:,}) lets a poll read; only the "
            f"{counted.read_at_most:,} silent longest are judged and paged. "
            f"Raise {KEY} or find why so many tasks are silent"
        )
    if now == 0 and before > 0:
        return f"every task that may need attention is read again (none left unread, {KEY})"
    return None
