"""A task's lease: who runs it, fenced by a token that grows with every new owner.

Its SQL is in ``sql/common/leases.sql`` and ``sql/<backend>/leases.sql``.
"""

from __future__ import annotations

import abc

from zombietop.durations import format_age
from zombietop.errors import LeaseHeld, LeaseLost
from zombietop.model import (
    EventKind,
    Lease,
)
from zombietop.store.sql_base import Conn, SQLBase


class LeasesInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Leases`` below: acquire, reclaim, renew and release a
    task's lease."""

    @abc.abstractmethod
    async def get_lease(self, task_id: str) -> Lease | None: ...

    @abc.abstractmethod
    async def acquire_lease(
        self, task_id: str, *, owner: str, ttl: float, queued: bool = False
    ) -> Lease:
        """Take a lease nobody holds; the token grows. Raise ``LeaseHeld`` if someone does.

        ``queued`` leaves a queued task queued: ``zombietop run --wait`` holds the lease while
        it waits for its upstream, so a waiter that dies shows as reclaimable."""

    @abc.abstractmethod
    async def renew_lease(self, task_id: str, *, owner: str, token: int, ttl: float) -> Lease:
        """Extend our unexpired lease; raise ``LeaseLost`` if the owner, token or time is wrong."""

    @abc.abstractmethod
    async def release_lease(self, task_id: str, *, owner: str, token: int) -> None:
        """Give the lease up; raise ``LeaseLost`` if it is no longer ours."""

    @abc.abstractmethod
    async def reclaim_lease(self, task_id: str, *, owner: str, ttl: float) -> Lease:
        """Take over an expired lease (the token grows); raise ``LeaseHeld`` while it is live."""

    @abc.abstractmethod
    async def still_owner(self, task_id: str, *, owner: str, token: int) -> bool:
        """True while ``owner`` holds the lease with ``token`` and it has not expired."""


class Leases(SQLBase[Conn], LeasesInterface):
    """Acquire, reclaim, renew and release a task's lease."""

    async def get_lease(self, task_id: str) -> Lease | None:
        async with self._read() as db:
            return await self._lease_in(db, task_id)

    async def acquire_lease(
        self, task_id: str, *, owner: str, ttl: float, queued: bool = False
    ) -> Lease:
        async with self._write() as db:
            task, now = await self._locked(db, task_id)
            if task.state.finished:
                raise LeaseHeld(f"{task_id} is {task.state}; a finished task cannot be leased")
            current = await self._lease_in(db, task_id)
            if current is not None and current.held:
                if current.expired(now):
                    raise LeaseHeld(
                        f"{task_id} is leased to {current.owner} (token {current.token}), expired "
                        f"{format_age(now - (current.expires_at or now))} ago: reclaim it instead"
                    )
                raise LeaseHeld(
                    f"{task_id} is leased to {current.owner} (token {current.token}) for another "
                    f"{format_age((current.expires_at or now) - now)}"
                )
            token = (current.token if current else 0) + 1
            return await self._grant(
                db, now, task_id, owner, token, ttl, EventKind.LEASE_ACQUIRED, None, queued=queued
            )

    async def reclaim_lease(self, task_id: str, *, owner: str, ttl: float) -> Lease:
        async with self._write() as db:
            task, now = await self._locked(db, task_id)
            if task.state.finished:
                raise LeaseHeld(f"{task_id} is {task.state}; a finished task cannot be reclaimed")
            current = await self._lease_in(db, task_id)
            if current is None or not current.held:
                raise LeaseHeld(f"{task_id} has no lease to reclaim: acquire it instead")
            if not current.expired(now):
                raise LeaseHeld(
                    f"{task_id}'s lease (held by {current.owner}, token {current.token}) is "
                    f"live for another {format_age((current.expires_at or now) - now)}; "
                    "it cannot be reclaimed yet"
                )
            return await self._grant(
                db, now, task_id, owner, current.token + 1, ttl, EventKind.LEASE_RECLAIMED, current
            )

    async def _grant(
        self,
        db: Conn,
        now: float,
        task_id: str,
        owner: str,
        token: int,
        ttl: float,
        kind: EventKind,
        previous: Lease | None,
        *,
        queued: bool = False,
    ) -> Lease:
        expires_at = now + ttl
        await self._run(
            db,
            "upsert_lease",
            {
                "task_id": task_id,
                "owner": owner,
                "token": token,
                "now": now,
                "expires_at": expires_at,
            },
        )
        if not queued:
            await self._run(
                db,
                "claim_task",
                {"task_id": task_id, "now": now, "attempt_bump": 1 if previous is not None else 0},
            )
        taken = "" if previous is None else f" from {previous.owner} (token {previous.token})"
        await self._event(
            db,
            now,
            kind=kind,
            actor=owner,
            task_id=task_id,
            message=f"{owner} took token {token}{taken}, expires in {format_age(ttl)}",
            data={
                "owner": owner,
                "token": token,
                "expires_at": expires_at,
                "previous_owner": previous.owner if previous else None,
                "previous_token": previous.token if previous else None,
                "previous_expires_at": previous.expires_at if previous else None,
            },
        )
        return Lease(
            task_id=task_id,
            owner=owner,
            token=token,
            acquired_at=now,
            renewed_at=now,
            expires_at=expires_at,
        )

    async def renew_lease(self, task_id: str, *, owner: str, token: int, ttl: float) -> Lease:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            expires_at = now + ttl
            changed = await self._run(
                db,
                "renew_lease",
                {
                    "task_id": task_id,
                    "owner": owner,
                    "token": token,
                    "now": now,
                    "expires_at": expires_at,
                },
            )
            if changed != 1:
                await self._fence(db, now, task_id, owner, token)  # raises with the precise reason
                raise LeaseLost(f"{owner} could not renew {task_id}")
            lease = await self._lease_in(db, task_id)
            assert lease is not None
            await self._event(
                db,
                now,
                kind=EventKind.LEASE_RENEWED,
                actor=owner,
                task_id=task_id,
                message=f"{owner} renewed token {token} until +{format_age(ttl)}",
                data={"owner": owner, "token": token, "expires_at": expires_at},
            )
            return lease

    async def release_lease(self, task_id: str, *, owner: str, token: int) -> None:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            changed = await self._run(
                db,
                "release_lease",
                {"task_id": task_id, "owner": owner, "token": token, "now": now},
            )
            if changed != 1:
                raise LeaseLost(
                    f"{owner} (token {token}) does not hold {task_id}; nothing to release"
                )
            await self._event(
                db,
                now,
                kind=EventKind.LEASE_RELEASED,
                actor=owner,
                task_id=task_id,
                message=f"{owner} released token {token}",
                data={"owner": owner, "token": token},
            )

    async def still_owner(self, task_id: str, *, owner: str, token: int) -> bool:
        async with self._read() as db:
            now = await self._now_in(db)
            lease = await self._lease_in(db, task_id)
        return (
            lease is not None
            and lease.owner == owner
            and lease.token == token
            and lease.expires_at is not None
            and now <= lease.expires_at
        )
