"""The agents of a fleet: one per host, beating to say it is there.

Its SQL is in ``sql/common/agents.sql``.
"""

from __future__ import annotations

import abc

from zombietop.fleet import AgentPresence
from zombietop.model import (
    Task,
)
from zombietop.store.sql_base import Conn, SQLBase


class AgentsInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Agents`` below: record an agent's beat and stop, and read
    the agents and their host's tasks."""

    @abc.abstractmethod
    async def record_agent_beat(
        self, host: str, *, agent_id: str, pid: int, interval: float, reported_at: float
    ) -> AgentPresence:
        """Record that ``host``'s agent is alive; ``reported_at`` is the host's own clock."""

    @abc.abstractmethod
    async def stop_agent(self, host: str, *, agent_id: str) -> None:
        """Mark ``host``'s agent as shut down, so dashboards say so at once."""

    @abc.abstractmethod
    async def agents(self) -> list[AgentPresence]:
        """Every host whose agent ever reported, by host name."""

    @abc.abstractmethod
    async def active_tasks_on(
        self, host: str, *, finished_since: float | None = None
    ) -> list[Task]:
        """Tasks with a recorded process on ``host``: the unfinished, and those finished at or
        after ``finished_since`` (store time; None: none), whose processes its agent samples."""


class Agents(SQLBase[Conn], AgentsInterface):
    """Record an agent's beat and stop, and read the agents and their host's tasks."""

    async def record_agent_beat(
        self, host: str, *, agent_id: str, pid: int, interval: float, reported_at: float
    ) -> AgentPresence:
        async with self._write() as db:
            now = await self._now_in(db)
            await self._run(
                db,
                "upsert_agent",
                {
                    "host": host,
                    "agent_id": agent_id,
                    "pid": pid,
                    "interval_s": float(interval),
                    "now": now,
                    "reported_at": float(reported_at),
                },
            )
            rows = await self._rows(db, "select_agents", {})
        return next(AgentPresence.from_row(r) for r in rows if r["host"] == host)

    async def stop_agent(self, host: str, *, agent_id: str) -> None:
        async with self._write() as db:
            now = await self._now_in(db)
            await self._run(db, "stop_agent", {"host": host, "agent_id": agent_id, "now": now})

    async def agents(self) -> list[AgentPresence]:
        async with self._read() as db:
            rows = await self._rows(db, "select_agents", {})
        return [AgentPresence.from_row(row) for row in rows]

    async def active_tasks_on(
        self, host: str, *, finished_since: float | None = None
    ) -> list[Task]:
        params = {"host": host, "finished_since": finished_since}
        async with self._read() as db:
            rows = await self._rows(db, "select_active_tasks_on_host", params)
        return [Task.from_row(row) for row in rows]
