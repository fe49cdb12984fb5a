"""Helpers for testing the watchdog's parts one at a time, each on a real SQLite store.

``hands_on`` gives a part what the watchdog would give it: ``Hands`` over a real store, with a
list notifier for its pages and a list for its log lines. ``view_of`` polls the store with a
real monitor, as one look of the watchdog does, and returns one task's view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.core.test_watchdog import ListNotifier, RecordingExecutor, config
from zombietop.clock import FakeClock
from zombietop.config import Config
from zombietop.judge.monitor import Monitor, Snapshot, TaskView
from zombietop.model import Event, EventKind
from zombietop.paging.notify import Page
from zombietop.store import Store
from zombietop.watch.watchdog_hands import Hands, Look

ACTOR = "watchdog@test"


@dataclass
class Parts:
    """What a part of the watchdog is built on, and what it said and sent."""

    hands: Hands
    store: Store
    clock: FakeClock
    notifier: ListNotifier
    logs: list[str] = field(default_factory=list)

    async def poll(self) -> Snapshot:
        return await self.hands.monitor.poll()

    async def view_of(self, task_id: str = "export-2031") -> TaskView:
        snapshot = await self.poll()
        assert snapshot.error is None, snapshot.error
        return snapshot.by_id()[task_id]

    def look(self) -> Look:
        """A look as of the last poll: its moment, and the acks and silences then in force."""
        last = self.hands.monitor.last
        now = last.taken_at if last.taken_at is not None else self.clock.now()
        return Look(now=now, oncall=last.oncall)

    async def judged(self, task_id: str = "export-2031") -> tuple[TaskView, Look]:
        """Poll, as one look of the watchdog does: the task's view, and the look to act in."""
        view = await self.view_of(task_id)
        return view, self.look()

    async def sent(self) -> list[Page]:
        """Deliver what the parts queued; return every page delivered so far."""
        await self.hands.outbox.flush()
        await self.hands.outbox.settle(10)
        return self.notifier.pages

    async def events(self, kind: EventKind) -> list[Event]:
        return list(reversed(await self.store.events(kind=kind, limit=100)))


def hands_on(
    store: Store,
    clock: FakeClock,
    cfg: Config | None = None,
    *,
    executor: RecordingExecutor | None = None,
    dry_run: bool = False,
) -> Parts:
    cfg = cfg or config()
    notifier = ListNotifier()
    logs: list[str] = []
    hands = Hands(
        Monitor(store, cfg, clock=clock),
        executor=executor,
        notifiers=[notifier],
        settings=cfg.notify,
        clock=clock,
        actor=ACTOR,
        dry_run=dry_run,
        log=logs.append,
    )
    return Parts(hands=hands, store=store, clock=clock, notifier=notifier, logs=logs)
