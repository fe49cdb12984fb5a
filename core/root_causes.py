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
at the moment of the question, since incidents open during the look.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field

from zombietop.monitor import TaskView

LISTED = 5
"""How many blocked tasks a page names; the rest are counted (``and 7 more``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RootCauses:
    """The waiting tasks of one look and what each one waits on."""

    waits_on: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each queued task with upstream: the upstream tasks it still waits on."""
    dependents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The other way round: each upstream task, the queued tasks waiting on it."""

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

    def behind(self, task_id: str, open_incidents: Container[str]) -> str | None:
        """The upstream with an open incident that ``task_id`` waits behind (the nearest, then
        by name), or None when it waits behind none."""
        seen = {task_id}
        level = [task_id]
        while level:
            upstream = sorted({u for t in level for u in self.waits_on.get(t, ())} - seen)
            for name in upstream:
                if name in open_incidents:
                    return name
            seen.update(upstream)
            level = upstream
        return None

    def blocked_by(self, root: str, open_incidents: Container[str]) -> tuple[str, ...]:
        """The waiting tasks held behind ``root``: its dependents, theirs, and so on, sorted,
        without those that wait behind another open incident first."""
        found: set[str] = set()
        level = [root]
        while level:
            level = sorted({d for t in level for d in self.dependents.get(t, ())} - found)
            found.update(level)
        found.discard(root)
        return tuple(sorted(t for t in found if self.behind(t, open_incidents) == root))


def blocks_words(blocked: tuple[str, ...]) -> str:
    """``; blocks 3: notify-2031, publish-2031, report-2031`` ('' when it blocks none)."""
    if not blocked:
        return ""
    named = ", ".join(blocked[:LISTED])
    more = f", and {len(blocked) - LISTED} more" if len(blocked) > LISTED else ""
    return f"; blocks {len(blocked)}: {named}{more}"
