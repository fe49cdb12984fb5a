"""The flips a monitor knows, so the dashboard and ``status`` show ``flapping`` as pages do.

The watchdog records each change of a task's health as a transition event. At each poll a
monitor reads the transitions it has not read yet, forward from the last one (at most
``TRANSITIONS_PER_POLL``; the rest at the next poll), folds each task's flips by the same rule
as the watchdog (``zombietop.judge.flapping``), and gives the views of the tasks that flap the
flag ``flapping``. Without a watchdog there are no transitions, and no task flaps.
"""

from __future__ import annotations

from dataclasses import replace

from zombietop.config import Config, Limits
from zombietop.judge.flapping import Flips, flips_of, fold_flip, judge_flapping, with_flapping
from zombietop.judge.snapshot import Snapshot, TaskView
from zombietop.model import EventKind
from zombietop.store.events import EventsInterface

TRANSITIONS_PER_POLL = 5000
"""How many transition events one poll reads at most: a poll after a long pause, or the first
of a busy store, catches up over the next polls instead of reading the whole log at once."""

LOOKBACK = 24 * 3600.0
"""How far back the first read goes (or the longest ``flap_window``, when longer): a task that
went on flipping for hours counts those flips, as the watchdog does."""


def longest_window(config: Config) -> float:
    """The longest ``flap_window`` of the defaults and every step type."""
    return max(limits.flap_window for limits in (config.defaults, *config.step_types.values()))


class FlipBook:
    """Each task's flips as read from the transition events, and the flag they give."""

    def __init__(self) -> None:
        self.after_id = 0
        """The last transition event read."""
        self.flips: dict[str, Flips] = {}
        """By task id, the flips since the task was last steady."""
        self._unfolded: dict[str, list[float]] = {}
        """By task id, the flips read and not yet folded (folding needs the task's limits)."""

    async def read(self, store: EventsInterface, now: float, config: Config) -> None:
        """Read the transitions since the last read: one bounded store read."""
        since = now - max(LOOKBACK, longest_window(config))
        events = await store.events_after(
            self.after_id, kind=EventKind.TRANSITION, since=since, limit=TRANSITIONS_PER_POLL
        )
        if events:
            self.after_id = events[-1].event_id
        for task_id, moments in flips_of(events).items():
            self._unfolded.setdefault(task_id, []).extend(moments)

    def mark(self, snapshot: Snapshot, now: float) -> Snapshot:
        """``snapshot`` with the flag ``flapping`` on the views of the tasks that flap at
        ``now``. Forgets the tasks that left the snapshot and those steady for their window."""
        if not self.flips and not self._unfolded:
            return snapshot
        unfolded, self._unfolded = self._unfolded, {}
        wanted = self.flips.keys() | unfolded.keys()
        # Only the few tasks with flips are judged; the others' views are left as they are.
        known: dict[str, Flips] = {}
        flagged: dict[str, TaskView] = {}
        for view in (view for view in snapshot.tasks if view.task_id in wanted):
            limits = view.limits
            flips = self._fold(self.flips.get(view.task_id), unfolded.get(view.task_id), limits)
            if flips is None or now - flips.last_at >= limits.flap_window:
                continue  # the next flip starts a new count
            known[view.task_id] = flips
            flapping = judge_flapping(now, flips, limits)
            if flapping is not None:
                verdict = with_flapping(view.verdict, flapping, limits)
                flagged[view.task_id] = replace(view, verdict=verdict)
        self.flips = known
        if not flagged:
            return snapshot
        tasks = tuple(flagged.get(view.task_id, view) for view in snapshot.tasks)
        return replace(snapshot, tasks=tasks)

    @staticmethod
    def _fold(flips: Flips | None, moments: list[float] | None, limits: Limits) -> Flips | None:
        for at in moments or ():
            flips = fold_flip(flips, at, limits)
        return flips
