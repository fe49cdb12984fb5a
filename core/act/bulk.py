"""One action asked of many tasks at once (the dashboard's marked rows), planned before anyone
confirms it.

A plan says which tasks the action will be asked of, and which it will not be, and why, by the
checks the one-task paths make themselves: the store's ``finished_refusal`` (nothing left to
resume or discard), an engine's ``engine_refusal`` (a source's task is resumed or discarded in
its engine), the kill's ``kill_refusal`` (no process recorded). The confirm says all that once;
then each task asked goes through the executor on its own, with the token the operator saw.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from zombietop.act.source_actions import kill_only
from zombietop.actions import ActionKind, ActionRequest, finished_refusal, kill_refusal
from zombietop.health import Health
from zombietop.judge.monitor import TaskView
from zombietop.sources.base import Origin, engine_refusal
from zombietop.sources.registry import ENGINES, engine

SHOWN_IDS = 5
"""How many task ids a bulk confirm names; the rest it counts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """A marked task the action will not be asked of, and why."""

    view: TaskView
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkPlan:
    """What a bulk action will do: the tasks it asks (in the order they were marked on screen)
    and the ones it leaves, each with its reason."""

    verb: str
    asked: tuple[TaskView, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def views(self) -> tuple[TaskView, ...]:
        """Every task of the plan: asked, then skipped."""
        return self.asked + tuple(one.view for one in self.skipped)

    def healths(self) -> list[tuple[Health, int]]:
        """How many of the tasks are in each health, most urgent first."""
        counts = Counter(view.health for view in self.views)
        return [(health, counts[health]) for health in Health if counts[health]]

    def shown_ids(self) -> tuple[list[str], int]:
        """The first ``SHOWN_IDS`` task ids, and how many more there are."""
        ids = [view.task_id for view in self.views]
        return ids[:SHOWN_IDS], max(len(ids) - SHOWN_IDS, 0)

    def requests(self, kind: ActionKind, actor: str) -> list[ActionRequest]:
        """One request per task asked, each with the lease token the plan was made from."""
        return [
            ActionRequest(kind=kind, task_id=view.task_id, expected_token=view.token, actor=actor)
            for view in self.asked
        ]


def action_refusal(kind: ActionKind, view: TaskView, origin: Origin | None) -> str | None:
    """Why the executor would refuse ``kind`` for this task whatever its token, or None.

    ``origin``: where a source's task came from (``Snapshot.origins``); None for the store's."""
    if origin is not None:
        runs_command = kind is ActionKind.RESUME and bool(view.limits.resume_command)
        if not runs_command and kind is not ActionKind.KILL:
            if origin.kind in ENGINES:
                refusal = engine_refusal(engine(origin.kind), origin.source, kind, origin)
                if refusal is not None:
                    return refusal
            return kill_only(kind, view.task_id, origin.source)
    elif kind is not ActionKind.KILL:
        return finished_refusal(view.task_id, view.task.state, str(kind))
    if kind is ActionKind.KILL:
        return kill_refusal(view.task_id, view.task.pid)
    return None


def plan_action(
    kind: ActionKind, views: Sequence[TaskView], origins: Mapping[str, Origin]
) -> BulkPlan:
    """The plan of a resume, discard or kill of ``views``."""
    asked: list[TaskView] = []
    skipped: list[Skipped] = []
    for view in views:
        why = action_refusal(kind, view, origins.get(view.task_id))
        if why is None:
            asked.append(view)
        else:
            skipped.append(Skipped(view=view, why=why))
    return BulkPlan(verb=str(kind), asked=tuple(asked), skipped=tuple(skipped))


def plan_all(verb: str, views: Sequence[TaskView]) -> BulkPlan:
    """The plan of an action every task takes (an ack, a silence, a note)."""
    return BulkPlan(verb=verb, asked=tuple(views))


def tally(verb: str, words: Iterable[str], skipped: int = 0) -> str:
    """One line for the toast after a bulk action: ``kill of 30 tasks: 26 term sent, 2 gone;
    2 not asked``."""
    counts = Counter(words)
    asked = sum(counts.values())
    total = asked + skipped
    said = ", ".join(f"{count} {word}" for word, count in counts.most_common())
    line = f"{verb} of {total} task{'s' if total != 1 else ''}: {said or 'none asked'}"
    if skipped:
        line += f"; {skipped} not asked"
    return line
