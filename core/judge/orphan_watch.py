"""Which finished tasks the process probe still looks at, to find the orphans.

A task can be finished (its engine marked it failed, an operator discarded it) while its
process runs on: the process a supervisor left behind when it died. The probe keeps sampling
such a pid for ``LOOK_AFTER_FINISH_S`` after the finish, and for as long as it sees the process
alive after that; then it lets the pid go, so that a store's finished history costs nothing.
Its first look samples every finished task it is given, however long ago it finished: a
``status`` run once, or a dashboard just restarted, knows nothing of earlier looks, and must
still find the orphan that a long-running dashboard follows.
The monitor's probe does this for the tasks of its host, and an agent for the tasks of its
host, whose samples then carry the orphan to dashboards elsewhere.

Only a pid that is the task's own process is looked at: a task of an engine's source, or one
started by ``zombietop run`` (its command is that process). A process that uses the SDK
finishes its task and goes on with other work, so its pid says nothing about the task.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from zombietop.model import ProcessSample, Task

LOOK_AFTER_FINISH_S = 600.0
"""Seconds after its finish that a finished task's process is still sampled, alive or not."""


class OrphanWatch:
    """Keep the finished tasks worth a sample in each probe, and remember which lived."""

    def __init__(self) -> None:
        self._alive: dict[tuple[str, int], float] = {}
        """(task id, pid) of the finished tasks whose process the last sample saw alive, each
        with the moment its task finished."""
        self._first = True
        """No sample has been seen yet: every finished task given is looked at."""

    def finished_since(self, now: float) -> float:
        """The earliest finish worth reading a task for: the window after a finish, or the
        finish of a task whose process was still seen alive (an agent's read of the store)."""
        return min([now - LOOK_AFTER_FINISH_S, *self._alive.values()])

    def keep(self, tasks: Sequence[Task], now: float, sources: Collection[str]) -> list[Task]:
        """The tasks to sample: every unfinished one, and the finished ones still looked at.

        ``sources`` holds the ids of the tasks that came from an engine's source."""
        return [task for task in tasks if self._wanted(task, now, sources)]

    def _wanted(self, task: Task, now: float, sources: Collection[str]) -> bool:
        if not task.state.finished:
            return True
        if task.pid is None or not (task.command or task.task_id in sources):
            return False
        if self._first or (task.task_id, task.pid) in self._alive:
            return True
        return now - _finished(task) <= LOOK_AFTER_FINISH_S

    def saw(self, tasks: Sequence[Task], samples: Mapping[str, ProcessSample]) -> None:
        """Remember the finished tasks whose process this sample saw alive (identity checked)."""
        self._first = False
        alive = {}
        for task in tasks:
            sample = samples.get(task.task_id)
            if task.state.finished and task.pid is not None and sample is not None:
                if not sample.gone:
                    alive[task.task_id, task.pid] = _finished(task)
        self._alive = alive


def _finished(task: Task) -> float:
    return task.finished_at if task.finished_at is not None else task.updated_at
