"""One active watchdog per store: the store's watchdog lease, taken, renewed and given up.

The watchdog that holds the lease is the active one: it acts and pages. Any other is a
standby: it polls the store, acts on nothing, and takes over once the lease lapses (or is
given up on a clean stop). Each look of the watchdog (see docs/glossary.md) renews the
lease; it lasts ``LEASE_INTERVALS`` intervals, so a watchdog that dies without
a word is replaced within that time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from zombietop.durations import format_duration
from zombietop.errors import StoreError
from zombietop.fleet import WatchdogLease
from zombietop.paging.notify import Outbox
from zombietop.store import Store
from zombietop.watch.watchdog_hands import Look

LEASE_INTERVALS = 3
"""The watchdog lease lasts this many ``[watch] interval``s: a standby takes over after it."""


class LeaseKeeper:
    """Hold the store's watchdog lease for one watchdog; know whether it is active or standby."""

    def __init__(
        self,
        store: Store,
        *,
        owner: str,
        host: str,
        pid: int,
        interval: float,
        outbox: Outbox,
        restore: Callable[[], Awaitable[None]],
        dry_run: bool,
        log: Callable[[str], None],
    ) -> None:
        self.store = store
        self.owner = owner
        """Who this watchdog is in the lease (its actor, which a host's watchdogs share, and
        its pid)."""
        self.host = host
        self.pid = pid
        self.ttl = LEASE_INTERVALS * interval
        self.outbox = outbox
        """Undelivered pages: taken over from the store on becoming active, left on standing by."""
        self.restore = restore
        """Read back the incident book: on taking over, what the other watchdog opened and
        closed meanwhile."""
        self.dry_run = dry_run
        self.log = log
        self.active: bool | None = None
        """Whether this watchdog held the lease at the last look (None before the first)."""
        self._stuck = False
        """The last renewal failed while active: said once, until one lands."""

    @property
    def standby(self) -> bool:
        """True when another watchdog held the lease at the last look."""
        return self.active is False

    async def hold(self, look: Look) -> tuple[WatchdogLease | None, str | None]:
        """Take or renew the store's watchdog lease; say why not (a standby), once per change."""
        if self.dry_run:
            self.active = True
            return None, None
        try:
            lease = await self.store.hold_watchdog_lease(
                owner=self.owner, host=self.host, pid=self.pid, ttl=self.ttl
            )
        except StoreError as exc:
            if self.active:
                # A full disk must not blind the watchdog: nobody can take the lease over
                # while nobody can write, and the next renewal that lands says who holds it.
                if not self._stuck:
                    self._stuck = True
                    look.logs.append(
                        f"cannot renew the watchdog lease ({exc}); still acting as the active one"
                    )
                return None, None
            reason = f"cannot hold the watchdog lease in {self.store.describe()}: {exc}"
            return None, reason
        self._stuck = False
        active = lease.owner == self.owner
        was, self.active = self.active, active
        if active and was is not True:
            if was is False:
                look.logs.append(f"active: took over the watchdog lease (token {lease.token})")
                await self.restore()  # what the other watchdog opened and closed meanwhile
            loaded = await self.outbox.load()
            if loaded:
                look.logs.append(f"{loaded} undelivered page(s) from the store: delivering them")
        if active:
            return lease, None
        reason = (
            f"standby: {lease.owner} is the active watchdog (token {lease.token}); "
            f"taking over if its lease lapses for {format_duration(self.ttl)}"
        )
        if was is not False:
            self.outbox.forget_kept()
            look.logs.append(reason)
        return lease, reason

    async def release(self) -> None:
        """Give up the watchdog lease on a clean stop, so a standby takes over at once."""
        if self.active and not self.dry_run:
            try:
                await self.store.release_watchdog_lease(owner=self.owner)
            except StoreError as exc:
                self.log(f"could not release the watchdog lease ({exc}); it lapses by itself")
            self.active = None
