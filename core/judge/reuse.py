"""The reusing monitor's fast path: keep the last snapshot, and at the next poll judge only
what may have changed since."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from heapq import heapify, heappop, heappush
from operator import attrgetter

from zombietop.config import Config
from zombietop.job_summary import JobSummary
from zombietop.judge.classify import INF
from zombietop.judge.snapshot import (
    Fleet,
    Judge,
    Snapshot,
    TaskView,
    is_held,
    probed_here,
    waits_on_upstream,
)
from zombietop.model import (
    PollChanges,
    ProcessSample,
    Task,
    TaskRecord,
)

_DUE_SLACK = 64
"""Entries a heap of due verdicts may hold beyond two per task before it is built afresh."""


_URGENCY = attrgetter("urgency")


def reordered(
    ordered: Sequence[TaskView], out: Iterable[TaskView], moved: Iterable[TaskView]
) -> tuple[TaskView, ...]:
    """``ordered`` (in urgency order) without the views ``out`` and with the views ``moved``
    where sorting every view would put them.

    The task id in an urgency makes the order total, so bisection finds where a view is and
    where one goes. The views kept are copied once, as the runs between those places: a
    list insert or delete for each view would move every view after it, which at 100,000
    tasks and a thousand beats a poll costs more than judging the beats.
    """
    leaving = sorted(bisect_left(ordered, view.urgency, key=_URGENCY) for view in out)
    kept: list[TaskView] = []
    start = 0
    for place in leaving:
        kept += ordered[start:place]
        start = place + 1
    kept += ordered[start:]

    views: list[TaskView] = []
    start = 0
    for view in sorted(moved, key=_URGENCY):
        place = bisect_left(kept, view.urgency, start, key=_URGENCY)
        views += kept[start:place]
        views.append(view)
        start = place
    views += kept[start:]
    return tuple(views)


def _due(views: Mapping[str, TaskView]) -> list[tuple[float, str]]:
    """A heap of when each verdict can next change with time alone (never: left out)."""
    due = [
        (view.verdict.stable_until, task_id)
        for task_id, view in views.items()
        if view.verdict.stable_until != INF
    ]
    heapify(due)
    return due


class KeptSnapshot:
    """A reusing monitor's last snapshot, kept so that the next poll judges only what may have
    changed since: the tasks the store read again, the verdicts that reached their
    ``stable_until``, the tasks with a local process sample (now or at the last poll) and the
    queued tasks with upstream. Every other task keeps its view, as ``build_snapshot`` with
    ``previous`` would keep it.

    Only for a quiet fleet (no agents, no owed requests): then a task's view follows from its
    record, its own sample and ``now``.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        records: Sequence[TaskRecord],
        config: Config,
        samples: Mapping[str, ProcessSample],
        poll: int,
        host: str,
    ) -> None:
        self.config = config
        self.poll = poll
        """The store poll (``PollChanges.poll``) these views come from."""
        self.host = host
        self.ordered = snapshot.tasks
        self.by_id = snapshot.by_id()
        self.counts = dict(snapshot.counts)
        self.quarantined = snapshot.quarantined
        self.sampled = set(samples)
        self.waiting = {
            task_id for task_id, view in self.by_id.items() if waits_on_upstream(view.task)
        }
        self.due = _due(self.by_id)
        """A heap of (stable_until, task id) of every view whose verdict can change with time
        alone, and of some replaced since (judging those again only costs the time)."""
        self.local = {
            record.task.task_id: record.task
            for record in records
            if probed_here(record.task, self.host)
        }
        """The tasks whose process this host probes itself."""

    def follows(self, changes: PollChanges | None, config: Config) -> bool:
        """True when ``changes`` are against the poll these views come from."""
        return (
            changes is not None
            and changes.after is not None
            and changes.after == self.poll
            and config is self.config
        )

    def local_tasks(self, changes: PollChanges) -> list[Task]:
        """The tasks to probe after ``changes``."""
        local = self.local
        for task_id, record in changes.changed.items():
            if probed_here(record.task, self.host):
                local[task_id] = record.task
            else:
                local.pop(task_id, None)
        for task_id in changes.dropped:
            local.pop(task_id, None)
        return list(local.values())

    def follow(
        self,
        now: float,
        changes: PollChanges,
        samples: Mapping[str, ProcessSample],
        fleet: Fleet,
        jobs: Mapping[str, JobSummary] | None = None,
    ) -> Snapshot:
        """The snapshot ``build_snapshot`` with ``previous`` would take at ``now``, judging only
        what may have changed (the fleet must be quiet)."""
        out = self._drop(changes.dropped)  # views that leave their place in the order
        judge = Judge(now, self.config, samples, fleet, jobs)
        before = self._judge_again(judge, changes, self._to_judge(now, changes, samples))
        judge.wait(self.by_id, self.waiting)
        moved = self._count_moves(before, out)
        if len(self.due) > 2 * len(self.by_id) + _DUE_SLACK:
            # Verdicts replaced before they came due leave their entries behind: start afresh.
            self.due = _due(self.by_id)
        if out or moved:
            self._reorder(out, moved)
        self.sampled = set(samples)
        self.poll = changes.poll
        return Snapshot(
            taken_at=now,
            tasks=self.ordered,
            counts=dict(self.counts),
            quarantined=self.quarantined,
            host=fleet.host,
        )

    def _drop(self, dropped: Iterable[str]) -> list[TaskView]:
        """Forget the views of the tasks that left the store's poll, and return them."""
        out: list[TaskView] = []
        for task_id in dropped:
            gone = self.by_id.pop(task_id, None)
            if gone is not None:
                self.counts[gone.health] -= 1
                self.quarantined -= is_held(gone)
                out.append(gone)
        return out

    def _to_judge(
        self, now: float, changes: PollChanges, samples: Mapping[str, ProcessSample]
    ) -> set[str]:
        """The tasks whose view may have changed: read again by the store, waiting behind
        upstream, with a process sample now or at the last poll, or due by ``now``."""
        again = set(changes.changed)
        again.update(self.waiting, self.sampled, samples)
        due = self.due
        while due and due[0][0] <= now:
            again.add(heappop(due)[1])
        return again

    def _judge_again(
        self, judge: Judge, changes: PollChanges, again: Iterable[str]
    ) -> dict[str, TaskView | None]:
        """Judge the tasks ``again`` and keep their new views; return the view each had before
        (None: a task new to the poll)."""
        by_id = self.by_id
        before: dict[str, TaskView | None] = {}
        for task_id in again:
            record = changes.changed.get(task_id)
            seen = by_id.get(task_id)
            if record is not None:
                view = judge.view(
                    record.task, record.lease, record.heartbeat, record.pending_kill, seen
                )
            elif seen is not None:
                view = judge.view(seen.task, seen.lease, seen.heartbeat, seen.pending_kill, seen)
            else:
                continue  # sampled or waiting at the last poll, gone since
            before[task_id] = seen
            by_id[task_id] = view
            if waits_on_upstream(view.task):
                self.waiting.add(task_id)
            else:
                self.waiting.discard(task_id)
        self.waiting.intersection_update(by_id)
        return before

    def _count_moves(
        self, before: Mapping[str, TaskView | None], out: list[TaskView]
    ) -> list[TaskView]:
        """Count each view that changed in place of the one before it (which joins ``out``),
        put its next due moment on the heap, and return the new views."""
        counts, moved = self.counts, list[TaskView]()
        for task_id, seen in before.items():
            view = self.by_id[task_id]
            if view is seen:
                continue
            if seen is not None:
                counts[seen.health] -= 1
                self.quarantined -= is_held(seen)
                out.append(seen)
            counts[view.health] += 1
            self.quarantined += is_held(view)
            moved.append(view)
            stable_until = view.verdict.stable_until
            if stable_until != INF and (seen is None or seen.verdict is not view.verdict):
                heappush(self.due, (stable_until, task_id))
        return moved

    def _reorder(self, out: Sequence[TaskView], moved: Sequence[TaskView]) -> None:
        """Take the views ``out`` from the order and put the views ``moved`` in their places."""
        self.ordered = reordered(self.ordered, out, moved)
