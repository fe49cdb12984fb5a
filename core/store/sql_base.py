"""What every part of the SQL store stands on: the adapter each backend implements, and the
plumbing the parts share.

A backend (``sqlite``, ``postgres``) opens its connection, migrates its schema,
translates its driver's errors, and answers the adapter: run a named query (``_run``, ``_row``,
``_rows``, ``_run_many``, ``_insert``), give a read context and a write transaction (``_read``,
``_write``), and hold a task's row and read the store's clock (``_hold``, ``_now_in``). Every
write holds the task's row before it reads the clock, so a lease's expiry is judged by a time
taken after any writer ahead of it finished.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, TypeVar

from zombietop.durations import format_age
from zombietop.errors import LeaseLost, StoreError, TaskNotFound
from zombietop.model import Lease, Task
from zombietop.start_identity import StartIdentity

Conn = TypeVar("Conn")
"""The backend's connection (``zombietop.store.sqlite.Connection`` or an asyncpg connection)."""


class Duplicate(Exception):
    """An insert hit a unique constraint; raised by ``SQLBase._insert``, turned into a refusal."""


def identity_params(identity: StartIdentity | None) -> dict[str, Any]:
    """The two columns that keep a process's start identity (both NULL without one)."""
    return {
        "pid_boot_id": None if identity is None else identity.boot_id,
        "pid_start_ticks": None if identity is None else identity.ticks,
    }


class SQLBase(Generic[Conn]):
    """The adapter methods a backend implements, and the steps every part of the store takes
    inside a transaction: hold a task and read the clock, fence a lease, write an event."""

    # Adapter -------------------------------------------------------------------------------

    @abc.abstractmethod
    def _read(self) -> AbstractAsyncContextManager[Conn]:
        """Give the connection for reads, one coroutine at a time, errors translated."""

    @abc.abstractmethod
    def _write(self) -> AbstractAsyncContextManager[Conn]:
        """Give the connection inside a write transaction that commits on a clean exit."""

    @abc.abstractmethod
    def _where(self) -> str:
        """Say where the store is (no credentials), for messages."""

    @abc.abstractmethod
    async def _now_in(self, db: Conn) -> float:
        """The store's clock, read inside the current transaction."""

    async def _revision(self, db: Conn) -> tuple[int, int] | None:
        """``(changes, removals)`` when the backend stamps tasks in commit order, so a poll can
        read only what changed; None to read every polled row each time."""
        return None

    @abc.abstractmethod
    async def _hold(self, db: Conn, task_id: str) -> Task | None:
        """Hold the task's row for the rest of the transaction; return it if holding read it."""

    @abc.abstractmethod
    async def _run(self, db: Conn, name: str, params: Mapping[str, Any]) -> int:
        """Run a named statement; return how many rows it changed."""

    @abc.abstractmethod
    async def _row(self, db: Conn, name: str, params: Mapping[str, Any]) -> Any:
        """Run a named query; return its first row or None."""

    @abc.abstractmethod
    async def _rows(self, db: Conn, name: str, params: Mapping[str, Any]) -> Sequence[Any]:
        """Run a named query; return every row."""

    @abc.abstractmethod
    async def _run_many(self, db: Conn, name: str, params: Iterable[Mapping[str, Any]]) -> None:
        """Run a named statement once per set of parameters."""

    async def _run_bulk(self, db: Conn, name: str, params: Sequence[Mapping[str, Any]]) -> None:
        """Run a named statement for every set of parameters, in as few statements as the
        backend allows: here once per set (SQLite's executemany stays in one transaction and
        one trip to its thread); PostgreSQL runs one statement over arrays instead."""
        await self._run_many(db, name, params)

    @abc.abstractmethod
    async def _insert(self, db: Conn, name: str, params: Mapping[str, Any]) -> Any:
        """Run a named insert, return its RETURNING row (None without one); raise
        ``Duplicate`` on a unique violation and leave the transaction usable."""

    # Shared plumbing -----------------------------------------------------------------------

    def _missing(self, task_id: str) -> TaskNotFound:
        return TaskNotFound(
            f"no task {task_id!r} in store {self._where()}; `zombietop status --all` lists them"
        )

    async def _locked(self, db: Conn, task_id: str) -> tuple[Task, float]:
        """Hold the task's row, then read the store's clock: the order matters (see module)."""
        task = await self._hold(db, task_id) or await self._task_in(db, task_id)
        return task, await self._now_in(db)

    async def _task_in(self, db: Conn, task_id: str) -> Task:
        row = await self._row(db, "select_task", {"task_id": task_id})
        if row is None:
            raise await self._missing_in(db, task_id)
        return Task.from_row(row)

    async def _missing_in(self, db: Conn, task_id: str) -> StoreError:
        """``TaskNotFound``, unless the store is corrupt: then a missing row proves nothing,
        and saying "no task" would send the operator looking in the wrong place."""
        damage = await self._damage(db, task_id)
        if damage is None:
            return self._missing(task_id)
        return StoreError(
            f"store {self._where()} is corrupt ({damage}), so it cannot say whether task "
            f"{task_id!r} exists; restore it from a backup, or move it aside and start afresh"
        )

    async def _damage(self, db: Conn, task_id: str) -> str | None:
        """What is found wrong with the store when ``task_id`` was not found; None if nothing."""
        return None

    async def _lease_in(self, db: Conn, task_id: str) -> Lease | None:
        row = await self._row(db, "select_lease", {"task_id": task_id})
        return None if row is None else Lease.from_row(row)

    async def _event(
        self,
        db: Conn,
        now: float,
        *,
        kind: str,
        actor: str,
        message: str,
        task_id: str | None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        await self._run(
            db,
            "insert_event",
            {
                "now": now,
                "task_id": task_id,
                "kind": str(kind),
                "actor": actor,
                "message": message,
                "data": json.dumps(dict(data or {}), sort_keys=True, default=str),
            },
        )

    async def _fence(self, db: Conn, now: float, task_id: str, owner: str, token: int) -> Lease:
        lease = await self._lease_in(db, task_id)
        if lease is None or lease.owner != owner or lease.token != token:
            holder = (
                "nobody"
                if lease is None or lease.owner is None
                else f"{lease.owner} (token {lease.token})"
            )
            raise LeaseLost(
                f"{owner} (token {token}) no longer owns {task_id}; the lease is held by {holder}"
            )
        if lease.expires_at is None or now > lease.expires_at:
            ago = format_age(now - (lease.expires_at or now))
            raise LeaseLost(f"{owner}'s lease on {task_id} expired {ago} ago; it may be reclaimed")
        return lease
