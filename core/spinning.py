"""Spinning tasks are logged, never paged: once when a task starts to spin, and all of them
together in a digest every ``[watch] digest_every``.

A spinning task beats but makes no progress ("one link is slow"): worth a line in the log and
in the event log, not a human woken up. A look is one round of the watchdog: one poll of the
store and what it leads to.
"""

from __future__ import annotations

from zombietop.health import Health
from zombietop.incident_book import IncidentBook
from zombietop.model import EventKind
from zombietop.monitor import TaskView
from zombietop.watchdog_hands import Hands, Look


class SpinningWatch:
    """Log each task that starts to spin, and a digest of the spinning ones now and then."""

    def __init__(self, hands: Hands, book: IncidentBook, *, digest_every: float) -> None:
        self.hands = hands
        self.book = book
        self.digest_every = digest_every
        self._spinning: dict[str, str] = {}
        """The line of each task spinning as of the last look, by task id."""

    async def note(self, view: TaskView, look: Look) -> None:
        """Keep the task's line while it spins; log it the first time (each attempt)."""
        task_id = view.task_id
        spin_key = f"spinning:{task_id}:{view.task.attempt}"
        if view.health is not Health.SPINNING:
            self._spinning.pop(task_id, None)
            return
        context = view.verdict.context(look.now)
        self._spinning[task_id] = context
        if spin_key not in self.book.once:
            self.book.once.add(spin_key)
            look.logs.append(f"spinning (not paged): {context}")
            await self.hands.record(
                EventKind.WATCHDOG,
                f"spinning: {context}",
                task_id,
                {"key": spin_key},
            )

    async def digest(self, look: Look) -> None:
        """Log the spinning tasks, when ``digest_every`` has passed since the last digest."""
        now = self.hands.clock.now()
        last = self.book.last_digest_at
        if last is not None and now - last < self.digest_every:
            return
        self.book.last_digest_at = now
        lines = sorted(self._spinning.values())
        message = f"digest: {len(lines)} spinning" + "".join(f"\n  {line}" for line in lines)
        look.logs.append(message)
        await self.hands.record(
            EventKind.WATCHDOG, message, None, {"digest": True, "spinning": lines}
        )
