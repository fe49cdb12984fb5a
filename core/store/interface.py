"""The store interface: tasks, leases, heartbeats and events, behind one async API.

``Store`` is put together from one part per concern, each declared beside the code that
implements it over SQL (``LeasesInterface`` and ``Leases`` in ``leases``, and so on); here are
what every store does besides: say where it is, read its clock, close.

SQLite (``sqlite``) is the default; PostgreSQL (``postgres``) implements the same class for
fleets, selected by a ``postgresql://`` URL. Every time a store writes comes from the
store's own clock, never the caller's: for SQLite that is the host's clock (every process using
the file shares it), for PostgreSQL the server's.
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self

from zombietop.store.agents import AgentsInterface
from zombietop.store.beats import HISTORY_LIMIT, BeatsInterface
from zombietop.store.events import EventsInterface
from zombietop.store.jobs import JobsInterface
from zombietop.store.kills import KillsInterface
from zombietop.store.leases import LeasesInterface
from zombietop.store.oncall import OnCallInterface
from zombietop.store.paging import PagingInterface
from zombietop.store.retention import FinishedKey, PruneBatch, RetentionInterface
from zombietop.store.tasks import Seen, TasksInterface

__all__ = ["HISTORY_LIMIT", "RECONNECT_MOST_S", "FinishedKey", "PruneBatch", "Seen", "Store"]

RECONNECT_MOST_S = 4.0
"""The longest a store that lost its server waits between two attempts to reach it again
(PostgreSQL; the backoff doubles up to this). Short enough that a wrapper's exit, retried every
second, is written soon after the server is back; the watchdog waits this long, and a second,
for the jobs to beat again after an outage."""


# In the order of the parts' own bases (``Tasks`` stands on ``Jobs``), so that one method
# resolution order serves them all.
class Store(
    JobsInterface,
    TasksInterface,
    LeasesInterface,
    BeatsInterface,
    EventsInterface,
    KillsInterface,
    AgentsInterface,
    OnCallInterface,
    PagingInterface,
    RetentionInterface,
):
    """One lease/heartbeat store. Use as ``async with await open_store(...) as store``."""

    read_only: bool
    created: bool = False
    """True when opening the store created it: a new, empty store file."""
    counts_quiet: bool = False
    """Past ``[monitor] read_at_most`` active tasks, a poll counts the quiet ones instead of
    reading them (``zombietop.judge.quiet``). False for a store whose polls after the first
    read only what changed (SQLite): at 100,000 tasks counting them cut its memory from 391 to
    143 MB, but each poll scanned every task again, 38% of a core at rest against 9.7%
    (docs/benchmarks.md #14)."""

    @property
    def local_clock(self) -> bool:
        """True when the store's clock is read in this process (SQLite: an anchor plus this
        host's boot clock), so that a process reading its own clock wrong sees every age wrong;
        False when a server keeps the time."""
        return False

    @abc.abstractmethod
    def describe(self) -> str:
        """Say where the store is, for headers and error messages."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    def check_path(self) -> None:
        """Raise ``StoreReplaced`` when the store's path no longer names what this process
        holds open (a file store deleted or replaced under it); long-running commands call it
        every round."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @abc.abstractmethod
    async def now(self) -> float:
        """The store's clock: every lease expiry and heartbeat age is measured against it."""
