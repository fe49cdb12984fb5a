"""The watchdog's quarantines: placed when an incident opens, let go when the task recovers.

A task of zombietop's own store is held in the store. A task of a read-only source (an
engine's database) is held on zombietop's side only: an event in the store that the monitor
shows as the hold, never a write into the engine's database. A hold that cannot be written
(a full disk, a lock held by another writer) is tried again at every look of the watchdog (see
docs/glossary.md); the watchdog pages once that it cannot write the store,
saying why and what to do, and once when it can.

The hold is written only if the task has not beaten since the look read it, nor changed
hands, nor (when the verdict was made on its lease's expiry) renewed its lease (``Seen``,
checked inside the write): a lock that held those writes back until after the look must not
get a working job quarantined. Such a task is judged again at the next look.
"""

from __future__ import annotations

from zombietop.errors import StoreBusy, StoreError
from zombietop.health import Health
from zombietop.judge.monitor import TaskView
from zombietop.model import EventKind
from zombietop.page import STORE_WRITE, PageKind
from zombietop.sources import Origin
from zombietop.store.interface import Seen
from zombietop.watch.watchdog_hands import Hands, Look


def seen_in(view: TaskView) -> Seen:
    """What the look's verdict on ``view`` was made on, to check again inside the write.

    The lease's expiry counts only for a verdict made on it (``reclaimable``): the live
    wrapper of a task that stopped beating goes on renewing its lease, and that renewal is
    the stall itself, not a sign that the task moved (on a loaded host one falls between
    nearly every look and its write)."""
    lease = view.lease
    return Seen(
        beat_seq=None if view.heartbeat is None else view.heartbeat.seq,
        lease_token=None if lease is None else lease.token,
        lease_owner=None if lease is None else lease.owner,
        lease_expires_at=(
            lease.expires_at if lease is not None and view.health is Health.RECLAIMABLE else None
        ),
    )


def what_to_do(exc: StoreError) -> str:
    """What a human can do about a store that refused a write, going by why it refused."""
    if isinstance(exc, StoreBusy):
        return (
            "another writer holds the store's lock (named above, when it could be found); "
            "end or wait for that writer: the watchdog tries again at every look"
        )
    if "full" in str(exc):
        return "free the store's disk"
    return "check the store: the error above says what failed"


class Quarantines:
    """Place and let go of the watchdog's holds on tasks."""

    def __init__(self, hands: Hands) -> None:
        self.hands = hands
        self._unheld: set[str] = set()
        """Tasks whose quarantine could not be written: tried again each look, paged once held."""
        self._write_down = False
        """The watchdog paged that it cannot write the store, and has not paged the all-clear."""

    async def place(self, view: TaskView, look: Look) -> bool:
        """Quarantine the task unless it is already; False when the hold could not be written."""
        hands, task_id = self.hands, view.task_id
        if not view.task.quarantined and view.health.holds:
            first = next(
                (r.words(look.now) for r in view.verdict.reasons if r.health is view.health),
                str(view.health),
            )
            origin = hands.origin_of(task_id)
            if origin is not None:
                await self._hold(view, origin, f"{view.health}: {first}", look)
            elif hands.dry_run:
                look.logs.append(f"would quarantine {task_id}: {first}")
            else:
                try:
                    held = await hands.store.set_quarantine(
                        task_id,
                        quarantined=True,
                        actor=hands.actor,
                        reason=f"{view.health}: {first}",
                        seen=seen_in(view),
                    )
                except StoreError as exc:
                    self._failed(view, look, exc)
                    return False
                if not held.quarantined:
                    look.logs.append(
                        f"not quarantined {task_id}: it beat or its lease changed after the "
                        f"look that found it {view.health}; judged again at the next look"
                    )
                    return False
                look.logs.append(f"quarantined {task_id}: {first}")
        if task_id in self._unheld:
            self._unheld.discard(task_id)
            if not self._unheld and self._write_down:
                self._write_down = False
                hands.page(
                    look,
                    PageKind.ALL_CLEAR,
                    f"zombietop watchdog writes {hands.store.describe()} again",
                    incident=STORE_WRITE,
                )
        return True

    async def let_go(self, view: TaskView, look: Look) -> Health:
        """Let go of the hold this watchdog placed on a task whose incident ends; return the
        health the all-clear speaks of."""
        hands, task_id, health, task = self.hands, view.task_id, view.health, view.task
        origin = hands.origin_of(task_id)
        if origin is not None and task.quarantined_by == hands.actor and not hands.dry_run:
            if health is Health.QUARANTINED and task.state.executing:
                health = Health.HEALTHY  # the hold it showed is let go of: it runs, recovered
            await hands.record(
                EventKind.UNQUARANTINED,
                f"hold released: now {health}",
                task_id,
                {"source": origin.source, "reason": "recovered"},
            )
        elif (
            health is Health.QUARANTINED
            and task.quarantined_by == hands.actor
            and task.state.executing
        ):
            # It recovered by itself: let go of the hold we placed, and tell the human.
            if not hands.dry_run:
                try:
                    await hands.store.set_quarantine(
                        task_id, quarantined=False, actor=hands.actor, reason="recovered"
                    )
                except StoreError as exc:
                    look.logs.append(f"could not release quarantine on {task_id}: {exc}")
            health = Health.HEALTHY
        return health

    async def _hold(self, view: TaskView, origin: Origin, reason: str, look: Look) -> None:
        """Quarantine a read-only source's task on zombietop's side only: an event in the store
        that the monitor shows as the hold, never a write into the engine's database."""
        where = f"in zombietop only ({origin.kind} is read-only: nothing written there)"
        if self.hands.dry_run:
            look.logs.append(f"would hold {view.task_id} {where}: {reason}")
            return
        await self.hands.record(
            EventKind.QUARANTINED,
            f"held {where}: {reason}",
            view.task_id,
            {"source": origin.source, "reason": reason},
        )
        look.logs.append(f"held {view.task_id} {where}: {reason}")

    def _failed(self, view: TaskView, look: Look, exc: StoreError) -> None:
        task_id = view.task_id
        if task_id not in self._unheld:
            self._unheld.add(task_id)
            look.logs.append(
                f"could not quarantine {task_id} ({exc}); trying again every look, "
                "its incident opens once the hold is written"
            )
        if not self._write_down:
            # The human hears of it now, from the watchdog itself, not once space is freed.
            self._write_down = True
            self.hands.page(
                look,
                PageKind.WATCHDOG,
                f"zombietop watchdog cannot write {self.hands.store.describe()}: could not "
                f"quarantine {task_id} ({view.health}): {exc} - {what_to_do(exc)}",
                incident=STORE_WRITE,
            )
