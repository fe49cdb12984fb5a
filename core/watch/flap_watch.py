"""Tasks that flap are paged once, then held: the watchdog's part for ``flapping``.

Each flip the watchdog sees (``zombietop.judge.flapping.is_flip``) is folded into the task's
``Flips``; a watchdog that starts reads them back from the transitions in the event log, so a
restart forgets no flip. While a task flaps, its incident is neither opened, paged again nor
closed: one ``flapping`` page says so, with the flips counted. Once it has gone
``flap_window`` without a flip, one all-clear says how long it flapped, and the incident book
takes the task back as it is then (a task that pages then opens an incident as usual).
"""

from __future__ import annotations

from dataclasses import replace

from zombietop.errors import StoreError
from zombietop.judge.flapping import (
    Flips,
    flips_of,
    fold_flip,
    judge_flapping,
    steady,
    steady_words,
    with_flapping,
)
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.model import EventKind
from zombietop.page import PageKind, incident_key
from zombietop.watch.incident_book import IncidentBook
from zombietop.watch.watchdog_hands import Hands, Look


class FlapWatch:
    """Count each task's flips, page once when it starts to flap, and once when it is steady."""

    def __init__(self, hands: Hands, book: IncidentBook) -> None:
        self.hands = hands
        self.book = book
        self.flips: dict[str, Flips] = {}
        """By task id, the flips since the task was last steady."""
        self._recalled = False

    def forget(self) -> None:
        """Drop what was counted: the next look reads the flips back from the event log."""
        self.flips.clear()
        self._recalled = False

    async def recall(self, snapshot: Snapshot, look: Look) -> None:
        """Once, at the first trusted look: fold the flips the event log holds for the tasks
        of the snapshot (a watchdog that restarts, or runs from cron, counts them too)."""
        if self._recalled:
            return
        self._recalled = True
        views = snapshot.by_id()
        try:
            events = await self.hands.store.events_of_tasks(list(views), [EventKind.TRANSITION])
        except StoreError as exc:
            look.logs.append(f"cannot read past flips ({exc}); counting from now")
            return
        for task_id, moments in flips_of(events).items():
            limits = views[task_id].limits
            for at in moments:
                self.flips[task_id] = fold_flip(self.flips.get(task_id), at, limits)

    def flip(self, view: TaskView, at: float) -> None:
        """Count one flip of the task at ``at``."""
        self.flips[view.task_id] = fold_flip(self.flips.get(view.task_id), at, view.limits)

    def gone(self, present: set[str]) -> None:
        """Forget the tasks no longer in the snapshot."""
        for task_id in [t for t in self.flips if t not in present]:
            del self.flips[task_id]

    async def hold(self, view: TaskView, look: Look) -> tuple[TaskView, bool]:
        """The task's view with the flag ``flapping`` while it flaps, and True while its
        pages are held. Sends the flapping page and the steady all-clear, each once."""
        flips = self.flips.get(view.task_id)
        if flips is None:
            return view, False
        limits = view.limits
        flapping = judge_flapping(look.now, flips, limits)
        if flapping is not None:
            view = replace(view, verdict=with_flapping(view.verdict, flapping, limits))
            await self._notice(view, flips, look)
            return view, True
        if steady(look.now, flips, limits):
            await self._steady(view, flips, look)
            del self.flips[view.task_id]
        return view, False

    def _incident(self, task_id: str, flips: Flips) -> str:
        return incident_key(f"{PageKind.FLAPPING}:{task_id}", flips.first_at)

    async def _notice(self, view: TaskView, flips: Flips, look: Look) -> None:
        """Page once that the task flaps: the line, with the flips counted."""
        key = f"flapping:{view.task_id}:{flips.first_at}"
        if key in self.book.once:
            return
        self.book.once.add(key)
        line = look.context(view)
        incident = self._incident(view.task_id, flips)
        self.hands.page(look, PageKind.FLAPPING, line, view=view, incident=incident)
        data = {
            "page": PageKind.FLAPPING,
            "key": key,
            "health": str(view.health),
            "flips": flips.count,
            "since": flips.first_at,
        }
        await self.hands.record(EventKind.PAGE, line, view.task_id, data)

    async def _steady(self, view: TaskView, flips: Flips, look: Look) -> None:
        """Say once that the task is steady again, how long it flapped, and how it is now."""
        key = f"steady:{view.task_id}:{flips.first_at}"
        noticed = f"flapping:{view.task_id}:{flips.first_at}" in self.book.once
        if key in self.book.once or not noticed:
            return
        self.book.once.add(key)
        line = f"{view.task_id} steady again: {steady_words(flips)}; now {view.health}"
        incident = self._incident(view.task_id, flips)
        self.hands.page(look, PageKind.ALL_CLEAR, line, view=view, incident=incident)
        # Kept as a flapping page, not an all-clear: the incident book reads its own
        # incidents back from the all-clears, and this one ends none of them.
        data = {"page": PageKind.FLAPPING, "key": key, "steady": True, "flips": flips.count}
        await self.hands.record(EventKind.PAGE, line, view.task_id, data)
