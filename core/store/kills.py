"""Kills in flight, and the actions asked of a host's agent (host requests).

A kill is durable so that any zombietop on the host can finish it after the one that sent
SIGTERM exits. A host request waits for the agent of the host the task runs on.

Its SQL is in ``sql/common/kills.sql`` and ``sql/<backend>/kills.sql``.
"""

from __future__ import annotations

import abc
import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from zombietop.errors import ActionRefused, StoreError
from zombietop.fleet import HostRequest
from zombietop.identity import real_user
from zombietop.model import (
    EventKind,
    PendingKill,
)
from zombietop.start_identity import StartIdentity
from zombietop.store.sql_base import Conn, Duplicate, SQLBase, identity_params


def already_requested(kind: str, task_id: str, host: str) -> str:
    """The refusal for a second request of the same action while one waits for an agent."""
    return (
        f"a {kind} of {task_id} is already waiting for the agent on {host}; "
        "wait for it (zombietop status shows it)"
    )


class KillsInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Kills`` below: open, read and close kills; ask, claim and
    finish host requests."""

    @abc.abstractmethod
    async def open_kill(
        self,
        task_id: str,
        *,
        pid: int,
        pid_start_time: float | None,
        pgid: int | None,
        host: str | None,
        requested_by: str,
        grace: float,
        source: str | None = None,
        pid_start_identity: StartIdentity | None = None,
    ) -> PendingKill:
        """Record a graceful kill as SIGTERM goes out (deadline = now + grace); ``source``
        names the read-only source of a task this store does not hold, ``pid_start_identity``
        the kernel's count of the signalled process's start.

        Raise ``ActionRefused`` if the task already has an open kill.
        """

    @abc.abstractmethod
    async def get_open_kill(self, task_id: str) -> PendingKill | None:
        """Return the task's open kill, if any."""

    @abc.abstractmethod
    async def open_kills(self, host: str | None) -> list[PendingKill]:
        """Return every open kill on ``host``, soonest deadline first."""

    @abc.abstractmethod
    async def source_kills(self, since: float | None) -> dict[str, PendingKill]:
        """The latest kill of each read-only source's task, by task id: those still open and
        those finished since ``since`` (None: all)."""

    @abc.abstractmethod
    async def close_kill(
        self,
        task_id: str,
        *,
        outcome: str,
        actor: str,
        message: str,
        data: Mapping[str, Any] | None = None,
    ) -> PendingKill | None:
        """Close the task's open kill and record an action event, in one transaction.

        Return None when there was no open kill (another zombietop closed it first).
        """

    @abc.abstractmethod
    async def request_host_action(
        self,
        *,
        task_id: str,
        host: str,
        kind: str,
        expected_token: int | None,
        actor: str,
        reason: str | None = None,
        source: str | None = None,
    ) -> HostRequest:
        """Ask ``host``'s agent to carry out an action (on a task of the read-only ``source``,
        when given); raise ``ActionRefused`` if the same action on the task is already
        waiting."""

    @abc.abstractmethod
    async def get_host_request(self, request_id: int) -> HostRequest:
        """Return one request (or raise ``StoreError``)."""

    @abc.abstractmethod
    async def open_host_requests(self, host: str | None = None) -> list[HostRequest]:
        """Requests not yet carried out, oldest first (None: every host)."""

    @abc.abstractmethod
    async def claim_host_request(self, request_id: int, *, agent_id: str) -> HostRequest | None:
        """Claim a request for ``agent_id``; None when another agent claimed it first."""

    @abc.abstractmethod
    async def finish_host_request(
        self, request_id: int, *, outcome: str, message: str, actor: str
    ) -> HostRequest | None:
        """Record what became of a request, with an event; None if it was already finished."""


class Kills(SQLBase[Conn], KillsInterface):
    """Open, read and close kills; ask, claim and finish host requests."""

    async def open_kill(
        self,
        task_id: str,
        *,
        pid: int,
        pid_start_time: float | None,
        pgid: int | None,
        host: str | None,
        requested_by: str,
        grace: float,
        source: str | None = None,
        pid_start_identity: StartIdentity | None = None,
    ) -> PendingKill:
        async with self._write() as db:
            # A source's task has no row here to hold: the open-kill index alone keeps it to one.
            now = await self._now_in(db) if source else (await self._locked(db, task_id))[1]
            try:
                await self._insert(
                    db,
                    "insert_pending_kill",
                    {
                        "task_id": task_id,
                        "pid": pid,
                        "pid_start_time": pid_start_time,
                        **identity_params(pid_start_identity),
                        "pgid": pgid,
                        "host": host,
                        "requested_by": requested_by,
                        "now": now,
                        "deadline": now + grace,
                        "source": source,
                    },
                )
            except Duplicate:
                raise ActionRefused(
                    f"{task_id} already has a kill in progress; wait for it or watch it with "
                    f"`zombietop kill {task_id}`"
                ) from None
            row = await self._row(db, "select_open_kill", {"task_id": task_id})
            assert row is not None
            return PendingKill.from_row(row)

    async def get_open_kill(self, task_id: str) -> PendingKill | None:
        async with self._read() as db:
            row = await self._row(db, "select_open_kill", {"task_id": task_id})
        return None if row is None else PendingKill.from_row(row)

    async def open_kills(self, host: str | None) -> list[PendingKill]:
        async with self._read() as db:
            rows = await self._rows(db, "select_open_kills_for_host", {"host": host})
        return [PendingKill.from_row(row) for row in rows]

    async def source_kills(self, since: float | None) -> dict[str, PendingKill]:
        async with self._read() as db:
            rows = await self._rows(db, "select_source_kills", {"since": since})
        return {row["task_id"]: PendingKill.from_row(row) for row in rows}

    async def close_kill(
        self,
        task_id: str,
        *,
        outcome: str,
        actor: str,
        message: str,
        data: Mapping[str, Any] | None = None,
    ) -> PendingKill | None:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            # No task, no open kill: another zombietop that closed it first also returns None.
            row = await self._row(db, "select_open_kill", {"task_id": task_id})
            if row is None:
                return None
            await self._run(
                db, "close_pending_kill", {"task_id": task_id, "outcome": outcome, "now": now}
            )
            kill = PendingKill.from_row(row)
            await self._event(
                db,
                now,
                kind=EventKind.ACTION,
                actor=actor,
                task_id=task_id,
                message=message,
                data={
                    "action": "kill",
                    "outcome": outcome,
                    "requested_by": kill.requested_by,
                    "pid": kill.pid,
                    "pgid": kill.pgid,
                    **dict(data or {}),
                },
            )
            return dataclasses.replace(kill, outcome=outcome, finished_at=now)

    # Host requests -------------------------------------------------------------------------

    async def request_host_action(
        self,
        *,
        task_id: str,
        host: str,
        kind: str,
        expected_token: int | None,
        actor: str,
        reason: str | None = None,
        source: str | None = None,
    ) -> HostRequest:
        async with self._write() as db:
            now = await self._now_in(db) if source else (await self._locked(db, task_id))[1]
            try:
                row = await self._insert(
                    db,
                    "insert_host_request",
                    {
                        "task_id": task_id,
                        "host": host,
                        "kind": str(kind),
                        "expected_token": expected_token,
                        "actor": actor,
                        "reason": reason,
                        "now": now,
                        # This process's own real uid: the agent decides on it, not on actor.
                        "requester_uid": os.getuid(),
                        "requester": real_user(),
                        "source": source,
                    },
                )
            except Duplicate:
                raise ActionRefused(already_requested(str(kind), task_id, host)) from None
            assert row is not None
            request_id = int(row[0])
            await self._event(
                db,
                now,
                kind=EventKind.ACTION,
                actor=actor,
                task_id=task_id,
                message=f"{kind} requested for the agent on {host}",
                data={
                    "action": str(kind),
                    "outcome": "requested",
                    "host": host,
                    "request_id": request_id,
                    "reason": reason,
                },
            )
            stored = await self._row(db, "select_host_request", {"request_id": request_id})
        assert stored is not None
        return HostRequest.from_row(stored)

    async def get_host_request(self, request_id: int) -> HostRequest:
        async with self._read() as db:
            row = await self._row(db, "select_host_request", {"request_id": request_id})
        if row is None:
            raise StoreError(f"no host request {request_id} in store {self._where()}")
        return HostRequest.from_row(row)

    async def open_host_requests(self, host: str | None = None) -> list[HostRequest]:
        async with self._read() as db:
            rows = await self._rows(db, "select_open_host_requests", {"host": host})
        return [HostRequest.from_row(row) for row in rows]

    async def claim_host_request(self, request_id: int, *, agent_id: str) -> HostRequest | None:
        async with self._write() as db:
            now = await self._now_in(db)
            changed = await self._run(
                db,
                "claim_host_request",
                {"request_id": request_id, "agent_id": agent_id, "now": now},
            )
            if changed != 1:
                return None
            row = await self._row(db, "select_host_request", {"request_id": request_id})
        assert row is not None
        return HostRequest.from_row(row)

    async def finish_host_request(
        self, request_id: int, *, outcome: str, message: str, actor: str
    ) -> HostRequest | None:
        async with self._write() as db:
            now = await self._now_in(db)
            changed = await self._run(
                db,
                "finish_host_request",
                {"request_id": request_id, "outcome": outcome, "message": message, "now": now},
            )
            if changed != 1:
                return None
            row = await self._row(db, "select_host_request", {"request_id": request_id})
            assert row is not None
            done = HostRequest.from_row(row)
            await self._event(
                db,
                now,
                kind=EventKind.ACTION,
                actor=actor,
                task_id=done.task_id,
                message=f"{done.kind} carried out on {done.host}: {outcome}: {message}",
                data={
                    "action": done.kind,
                    "outcome": outcome,
                    "host": done.host,
                    "request_id": request_id,
                    "requested_by": done.actor,
                },
            )
        return done
