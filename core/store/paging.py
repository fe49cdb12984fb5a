"""The watchdog's own lease, its undelivered pages, and what it remembers across a restart.

Its SQL is in ``sql/common/paging.sql`` and ``sql/<backend>/paging.sql``.
"""

from __future__ import annotations

import abc

from zombietop.fleet import WatchdogLease
from zombietop.model import (
    Event,
    StoredPage,
    WatchdogMemory,
)
from zombietop.store.sql_base import Conn, SQLBase


class PagingInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Paging`` below: one watchdog at a time, and the pages it
    still owes."""

    @abc.abstractmethod
    async def hold_watchdog_lease(
        self, *, owner: str, host: str, pid: int, ttl: float
    ) -> WatchdogLease:
        """Take or renew the one watchdog lease of the store, for ``ttl`` seconds of store
        time; return who holds it now (``owner`` or, while theirs is live, someone else)."""

    @abc.abstractmethod
    async def release_watchdog_lease(self, *, owner: str) -> None:
        """Give the lease up (a clean stop), so a standby takes over at once."""

    @abc.abstractmethod
    async def watchdog_lease(self) -> WatchdogLease | None:
        """Who holds the watchdog lease, live or expired; None if no watchdog ever did."""

    @abc.abstractmethod
    async def keep_page(
        self,
        *,
        notifier: str,
        kind: str,
        line: str,
        task_id: str | None,
        health: str | None,
        page_at: float,
        attempts: int,
        next_at: float,
        incident: str | None = None,
        runbook: str | None = None,
        trace_id: str | None = None,
        trace_url: str | None = None,
    ) -> int:
        """Keep a page owed to one channel until it is delivered; return its id."""

    @abc.abstractmethod
    async def pending_pages(self) -> list[StoredPage]:
        """Every page still owed, oldest first."""

    @abc.abstractmethod
    async def retry_page(self, page_id: int, *, attempts: int, next_at: float) -> None:
        """Record a failed attempt at a kept page and when to try it next."""

    @abc.abstractmethod
    async def drop_page(self, page_id: int) -> None:
        """Forget a kept page: delivered, or out of attempts."""

    @abc.abstractmethod
    async def watchdog_memory(self) -> WatchdogMemory:
        """What a starting watchdog must remember: every open incident's events, and the
        one-shot reactions taken on unfinished tasks (never just the newest N events)."""


class Paging(SQLBase[Conn], PagingInterface):
    """One watchdog at a time, and the pages it still owes."""

    async def hold_watchdog_lease(
        self, *, owner: str, host: str, pid: int, ttl: float
    ) -> WatchdogLease:
        async with self._write() as db:
            now = await self._now_in(db)
            params = {
                "owner": owner,
                "host": host,
                "pid": pid,
                "now": now,
                "expires_at": now + ttl,
            }
            await self._run(db, "insert_watchdog_lease", params)
            row = await self._row(db, "hold_watchdog_lease_row", {})
            assert row is not None
            held = WatchdogLease.from_row(row)
            if held.owner == owner:
                await self._run(db, "renew_watchdog_lease", params)
            elif held.owner != owner and held.expires_at < now:
                await self._run(db, "take_watchdog_lease", params)
            else:
                return held
            row = await self._row(db, "select_watchdog_lease", {})
            assert row is not None
            return WatchdogLease.from_row(row)

    async def release_watchdog_lease(self, *, owner: str) -> None:
        async with self._write() as db:
            await self._run(db, "release_watchdog_lease", {"owner": owner})

    async def watchdog_lease(self) -> WatchdogLease | None:
        async with self._read() as db:
            row = await self._row(db, "select_watchdog_lease", {})
        return None if row is None else WatchdogLease.from_row(row)

    # Undelivered pages ---------------------------------------------------------------------

    async def keep_page(
        self,
        *,
        notifier: str,
        kind: str,
        line: str,
        task_id: str | None,
        health: str | None,
        page_at: float,
        attempts: int,
        next_at: float,
        incident: str | None = None,
        runbook: str | None = None,
        trace_id: str | None = None,
        trace_url: str | None = None,
    ) -> int:
        async with self._write() as db:
            row = await self._row(
                db,
                "insert_pending_page",
                {
                    "notifier": notifier,
                    "kind": kind,
                    "line": line,
                    "task_id": task_id,
                    "health": health,
                    "page_at": page_at,
                    "attempts": attempts,
                    "next_at": next_at,
                    "incident": incident,
                    "runbook": runbook,
                    "trace_id": trace_id,
                    "trace_url": trace_url,
                },
            )
        assert row is not None
        return int(row[0])

    async def pending_pages(self) -> list[StoredPage]:
        async with self._read() as db:
            rows = await self._rows(db, "select_pending_pages", {})
        return [StoredPage.from_row(row) for row in rows]

    async def retry_page(self, page_id: int, *, attempts: int, next_at: float) -> None:
        async with self._write() as db:
            await self._run(
                db,
                "update_pending_page",
                {"page_id": page_id, "attempts": attempts, "next_at": next_at},
            )

    async def drop_page(self, page_id: int) -> None:
        async with self._write() as db:
            await self._run(db, "delete_pending_page", {"page_id": page_id})

    async def watchdog_memory(self) -> WatchdogMemory:
        async with self._read() as db:
            events = await self._rows(db, "select_open_incident_events", {})
            keys = await self._rows(db, "select_watchdog_keys", {})
            digest = await self._row(db, "select_last_watchdog_digest", {})
        return WatchdogMemory(
            open_events=[Event.from_row(row) for row in events],
            keys=frozenset(str(row["key"]) for row in keys),
            last_digest_at=None if digest is None or digest["at"] is None else float(digest["at"]),
        )
