"""Tasks of a warning health (spinning, and any health whose ``watch`` is ``DIGEST``) are
logged, never paged: once when a task comes to that health, and all of them together in a
digest every ``[watch] digest_every``.

A spinning task beats but makes no progress ("one link is slow"): worth a line in the log and
in the event log, not a human woken up. See docs/glossary.md for "look".
"""

from __future__ import annotations

from zombietop.health import Health, WatchReaction
from zombietop.judge.monitor import TaskView
from zombietop.model import EventKind
from zombietop.watch.incident_book import IncidentBook
from zombietop.watch.watchdog_hands import Hands, Look


class SpinningWatch:
    """Log each task that comes to a warning health, and a digest of them now and then."""

    def __init__(self, hands: Hands, book: IncidentBook, *, digest_every: float) -> None:
        self.hands = hands
        self.book = book
        self.digest_every = digest_every
        self._warned: dict[str, tuple[Health, str]] = {}
        """The health and line of each task of a warning health as of the last look, by id."""

    async def note(self, view: TaskView, look: Look) -> None:
        """Keep the task's line while its health warns; log it the first time (each attempt)."""
        task_id, health = view.task_id, view.health
        if health.watch is not WatchReaction.DIGEST:
            self._warned.pop(task_id, None)
            return
        key = f"{health}:{task_id}:{view.task.attempt}"
        context = look.context(view)
        self._warned[task_id] = (health, context)
        if key not in self.book.once:
            self.book.once.add(key)
            look.logs.append(f"{health} (not paged): {context}")
            await self.hands.record(
                EventKind.WATCHDOG, f"{health}: {context}", task_id, {"key": key}
            )

    async def digest(self, look: Look) -> None:
        """Log the tasks of each warning health, when ``digest_every`` has passed since the
        last digest."""
        now = self.hands.clock.now()
        last = self.book.last_digest_at
        if last is not None and now - last < self.digest_every:
            return
        self.book.last_digest_at = now
        by_health = {
            health: sorted(line for of, line in self._warned.values() if of is health)
            for health in Health
            if health.watch is WatchReaction.DIGEST
        }
        counts = ", ".join(f"{len(lines)} {health}" for health, lines in by_health.items())
        shown = [line for lines in by_health.values() for line in lines]
        message = f"digest: {counts}" + "".join(f"\n  {line}" for line in shown)
        look.logs.append(message)
        data: dict[str, object] = {"digest": True}
        data.update((str(health), lines) for health, lines in by_health.items())
        await self.hands.record(EventKind.WATCHDOG, message, None, data)
