"""One page per root cause: which waiting tasks are blocked behind an open incident.

When ``extract-2031`` stalls, every task queued behind it (``publish-2031``, and
``notify-2031`` behind that) waits too. Paging each of them says the same thing many times.
So, with ``[watch] group_by_upstream = true`` (the default), the watchdog does not page a task
that is queued behind an upstream with an open incident, directly or through other waiting
tasks; the upstream's page lists them instead: ``blocks 2: notify-2031, publish-2031``.

Only what the upstream causes is held. A waiting task that goes bad for its own reason (its
waiting wrapper died, ``reclaimable``) opens its own incident, and no all-clear is ever held:
the rule is "suppress alerting, never monitoring; never suppress a resolution".

The graph is read from each queued task's ``waiting_on`` (its upstream that has not
succeeded), as the snapshot of one look has it; which upstream has an open incident is asked
at the moment of the question, since incidents open during the look. The roots are found once
for each set of open incidents, not once per task.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from zombietop.judge.monitor import TaskView

LISTED = 5
"""How many blocked tasks a page names; the rest are counted (``and 7 more``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RootCauses:
    """The waiting tasks of one look and what each one waits on."""

    waits_on: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each queued task with upstream: the upstream tasks it still waits on."""
    dependents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The other way round: each upstream task, the queued tasks waiting on it."""
    _memo: list[_Roots] = field(default_factory=list, compare=False, repr=False)
    """The roots last found, for the set of open incidents they were found for."""

    @classmethod
    def of(cls, views: Iterable[TaskView]) -> RootCauses:
        """Read the graph from one snapshot's tasks."""
        waits_on: dict[str, tuple[str, ...]] = {}
        dependents: dict[str, list[str]] = {}
        for view in views:
            if not view.waiting_on:
                continue
            upstream = tuple(name for name, _ in view.waiting_on)
            waits_on[view.task_id] = upstream
            for name in upstream:
                dependents.setdefault(name, []).append(view.task_id)
        return cls(
            waits_on=waits_on,
            dependents={name: tuple(sorted(ids)) for name, ids in dependents.items()},
        )

    def behind(self, task_id: str, open_incidents: Collection[str]) -> str | None:
        """The upstream with an open incident that ``task_id`` waits behind (the nearest, then
        by name), or None when it waits behind none."""
        return self._roots(open_incidents).root.get(task_id)

    def blocked_by(self, root: str, open_incidents: Collection[str]) -> tuple[str, ...]:
        """The waiting tasks held behind ``root``: its dependents, theirs, and so on, sorted,
        without those that wait behind another open incident first."""
        return self._roots(open_incidents).held.get(root, ())

    def _roots(self, open_incidents: Collection[str]) -> _Roots:
        """Every waiting task's root, for this set of open incidents.

        Asked once per task, a walk up the chain from each task took time in the square of
        the chain's length (17.5 s for 4,000 tasks in a chain). So all roots are found in one
        walk down from the open incidents, and kept until the set of open incidents changes
        (incidents open and close during a look)."""
        # From the smaller side: a storm opens thousands of incidents, few tasks wait on any.
        if len(self.dependents) <= len(open_incidents):
            key = frozenset(name for name in self.dependents if name in open_incidents)
        else:
            key = frozenset(name for name in open_incidents if name in self.dependents)
        if self._memo and self._memo[0].key == key:
            return self._memo[0]
        root: dict[str, str] = {}
        # One level of the walk at a time: each task passes on the root it is held behind
        # (an open incident passes on itself), so the first level to reach a task is the
        # nearest; within a level, the first name wins.
        passing = {name: name for name in key}
        while passing:
            reached: dict[str, str] = {}
            for upstream, cause in passing.items():
                for task in self.dependents.get(upstream, ()):
                    if task in root or task == cause:
                        continue
                    if task not in reached or cause < reached[task]:
                        reached[task] = cause
            root.update(reached)
            passing = {task: cause for task, cause in reached.items() if task not in key}
        held: dict[str, list[str]] = {}
        for task, cause in root.items():
            held.setdefault(cause, []).append(task)
        found = _Roots(
            key=key, root=root, held={cause: tuple(sorted(ts)) for cause, ts in held.items()}
        )
        self._memo[:] = [found]
        return found


@dataclass(frozen=True, slots=True, kw_only=True)
class _Roots:
    """Each waiting task's root for one set of open incidents, and the other way round."""

    key: frozenset[str]
    root: Mapping[str, str]
    held: Mapping[str, tuple[str, ...]]


def blocks_words(blocked: tuple[str, ...]) -> str:
    """``; blocks 3: notify-2031, publish-2031, report-2031`` ('' when it blocks none)."""
    if not blocked:
        return ""
    named = ", ".join(blocked[:LISTED])
    more = f", and {len(blocked) - LISTED} more" if len(blocked) > LISTED else ""
    return f"; blocks {len(blocked)}: {named}{more}"
