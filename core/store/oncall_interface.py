"""The on-call part of the store interface: acks, notes and silences. ``Store`` takes it in,
so a backend implements it with the rest; it has its own room because it grows with the
on-call loop."""

from __future__ import annotations

import abc

from zombietop.model import Ack, Note, Silence


class OnCallInterface(abc.ABC):
    """Acks (someone is on an incident), notes on incidents, and silences (rules that hold
    pages), each written with an event and the store's clock."""

    @abc.abstractmethod
    async def ack_task(
        self,
        task_id: str,
        *,
        by: str,
        reason: str | None,
        duration: float,
        source: str | None = None,
    ) -> Ack:
        """Ack the task until now + ``duration`` (replacing any ack it has), with an event.

        ``source`` names the read-only source the task comes from: its ack is kept here, by
        that name and the task id, as the store holds no row of the task. Without it, raise
        ``TaskNotFound`` for a task the store does not hold.
        """

    @abc.abstractmethod
    async def unack_task(
        self, task_id: str, *, by: str, reason: str, source: str | None = None
    ) -> Ack | None:
        """Remove the task's ack (of ``source``'s task, when given), with an event; None (and
        no event) when it had none."""

    @abc.abstractmethod
    async def acks(self) -> list[Ack]:
        """Every ack still in force, by task id."""

    @abc.abstractmethod
    async def add_note(
        self, task_id: str, *, by: str, text: str, source: str | None = None
    ) -> Note:
        """Add a note to the task's incident (of ``source``'s task, when given), as an event;
        without ``source``, raise ``TaskNotFound`` for a task the store does not hold."""

    @abc.abstractmethod
    async def notes(self, task_id: str, *, limit: int = 20) -> list[Note]:
        """The task's notes, newest first."""

    @abc.abstractmethod
    async def add_silence(
        self, *, matcher: str, pattern: str, by: str, reason: str, duration: float
    ) -> Silence:
        """Hold the pages of tasks matching the rule until now + ``duration``, with an event."""

    @abc.abstractmethod
    async def end_silence(self, silence_id: int, *, by: str) -> Silence:
        """End a silence now, with an event; raise ``ActionRefused`` if it is unknown or over."""

    @abc.abstractmethod
    async def silences(self) -> list[Silence]:
        """Every silence in force, soonest to end first."""
