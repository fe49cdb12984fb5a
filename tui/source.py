"""What the dashboard reads from: the monitor, or a fake in tests and screenshots."""

from __future__ import annotations

from typing import Protocol

from zombietop.judge.monitor import Snapshot
from zombietop.model import Event, HistoryPoint, Task
from zombietop.output import LastOutput


class SnapshotSource(Protocol):
    """The read half of the core facade; ``zombietop.judge.monitor.Monitor`` implements it."""

    @property
    def read_only(self) -> bool: ...

    async def poll(self) -> Snapshot:
        """Take a snapshot; on a store error return the last good one with ``error`` set."""
        ...

    async def glance(self, limit: int) -> Snapshot | None:
        """A first screenful while the first poll is still to come (``Monitor.glance``), or
        None when the poll itself comes as soon."""
        ...

    def find(self, text: str) -> None:
        """From the next poll on, also read the tasks whose id or stage holds ``text`` that a
        large store only counts (``Monitor.find``): the dashboard's filter."""
        ...

    async def history(self, task_id: str) -> list[HistoryPoint]: ...

    async def events(self, task_id: str | None = None, limit: int = 100) -> list[Event]: ...

    async def last_output(self, task: Task) -> LastOutput | None:
        """The task's kept output (``zombietop run`` on this host), or None."""
        ...

    async def latest_ended_runs(
        self, per_job: int, changed_after: float | None = None
    ) -> dict[str, list[Task]]:
        """By job, its latest ``per_job`` ended runs, newest first (the jobs view's trend); with
        ``changed_after``, only of the jobs whose summary changed at or after it."""
        ...

    async def job_runs(self, job: str, limit: int) -> list[Task]:
        """The latest ``limit`` runs of ``job``, newest first (its history)."""
        ...
