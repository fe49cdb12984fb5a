"""One message for a human: what the watchdog pages, one task's or a digest of many."""

from __future__ import annotations

from dataclasses import dataclass

from zombietop.printable import bounded


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One message for a human: a line with enough context to decide in three seconds."""

    kind: str
    """incident, all_clear, stage_overrun, request_overrun, watchdog."""
    line: str
    task_id: str | None = None
    health: str | None = None
    host: str | None = None
    """The task's host, for grouping many pages into a digest."""
    since: float | None = None
    """When the task last showed progress (its last beat, else its start): a digest lists the
    longest silent first."""
    at: float
    tasks: tuple[str, ...] = ()
    """A digest's tasks (its ``task_id`` is None); empty for a page of one task."""

    @property
    def shown(self) -> str:
        """The line as a person receives it: printable and bounded (``bounded``), whatever
        the task's fields held.

        ``line`` stays exact for the event the store keeps; every channel sends ``shown``.
        """
        return bounded(self.line)
