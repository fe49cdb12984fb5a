"""Quiet tasks: those a store can prove have nothing to say, counted instead of read.

A fleet's store holds far more tasks than a screen shows or a page names, and most of them are
healthy. Past ``[monitor] read_at_most`` active tasks, a poll asks the store to count the tasks
whose every moment is still ahead of them and to read only the others (``Store.poll_loud``).
The rules stay in one place, ``classify``: the store's test is a bound, not a verdict. A task is
quiet when, at the poll's moment plus one refresh, with the shortest of every configured limit:

- it runs (not starting, not finished), holds an unexpired lease, and its latest beat is one the
  job wrote itself (a proof of progress, so the process's idleness does not matter): the beat is
  fresh, its progress moved, its stage and its request are within their budgets, and the task
  is within its own;
- or it waits in the queue with no upstream, no lease that expired, and within the queue
  timeout;
- and in either case: it is not quarantined, has no malformed beat, is not a run of a job
  (a job's history can flag a run), has no kill under way, its process is not sampled on this
  host (this host's probe reads it), and no agent's sample says its process is gone.

``classify`` says such a task is healthy (or queued) with no reason and no flag, and will say
so until the next poll: tests/core/test_quiet.py judges every task of a varied store both ways.
Every other task is read whole and judged, the longest silent first, up to ``read_at_most``.
While the dashboard's filter holds a text, the quiet tasks whose id or stage holds it are read
whole too (``Store.find_quiet``, at most ``FOUND_AT_MOST``), so that a filter finds any task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zombietop.config import Config, Limits
from zombietop.health import Health

NEVER = 1e15
"""A budget no task reaches (a limit that is off), as a number SQL compares."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QuietBounds:
    """The moments before which a task's sign of life makes it loud, as of one poll.

    Each is ``at - limit``, with ``at`` the poll's moment plus one refresh and ``limit`` the
    shortest of that limit over the config's every limit table."""

    at: float
    """A lease that expires before this is loud."""
    beat: float
    """A beat written before this is stale."""
    progress: float
    """Progress that last moved before this is stuck."""
    stage: float
    """A stage that started before this has overrun."""
    request: float
    """A request that started before this has overrun."""
    task: float
    """A task that began before this has overrun."""
    queued: float
    """A queued task created before this has waited too long."""
    host: str
    """This host: its tasks' processes are probed here, so they are always read."""

    def params(self) -> dict[str, float | str]:
        """The bounds as the named parameters of the store's ``quiet`` test."""
        return {
            "quiet_at": self.at,
            "quiet_beat": self.beat,
            "quiet_progress": self.progress,
            "quiet_stage": self.stage,
            "quiet_request": self.request,
            "quiet_task": self.task,
            "quiet_queued": self.queued,
            "quiet_host": self.host,
        }


def quiet_bounds(now: float, config: Config, host: str) -> QuietBounds:
    """The bounds of a poll at ``now`` that the next poll, one refresh later, still trusts."""
    tables: list[Limits] = [config.defaults, *config.step_types.values()]
    at = now + config.refresh

    def before(limit: str) -> float:
        shortest: float = min(getattr(limits, limit) for limits in tables)
        return at - shortest

    queue_timeouts = [limits.queue_timeout for limits in tables if limits.queue_timeout > 0]
    return QuietBounds(
        at=at,
        beat=before("heartbeat_timeout"),
        progress=before("progress_timeout"),
        stage=before("stage"),
        request=before("request"),
        task=before("task"),
        queued=at - min(queue_timeouts) if queue_timeouts else -NEVER,
        host=host,
    )


FOUND_AT_MOST = 200
"""How many quiet tasks the dashboard's filter reads at most, the first by task id: a text
that most of a fleet's ids hold (``t``) must not read the fleet."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Counted:
    """What a poll of a large store counted instead of reading (``Snapshot.counted``)."""

    quiet: Mapping[Health, int]
    """Quiet tasks by health (healthy, queued): in ``Snapshot.counts``, not in its tasks."""
    unread: int
    """Loud tasks past ``read_at_most``: not quiet and not read, so neither judged nor in
    ``Snapshot.counts`` (the ``read_at_most`` longest silent are read)."""
    read_at_most: int
    """``[monitor] read_at_most``, as this poll applied it."""
    found: int = 0
    """Quiet tasks read because their id or stage holds the dashboard's filter
    (``Monitor.find``): listed and judged, so not in ``quiet``."""
    found_more: bool = False
    """More quiet tasks hold the filter than ``FOUND_AT_MOST``: only the first by task id are
    listed."""

    @property
    def listed_not(self) -> int:
        """How many tasks the snapshot holds no row for: the quiet and the unread."""
        return sum(self.quiet.values()) + self.unread
