"""The agents of a fleet: one per host, beating to say it is there.

Its SQL is in ``sql/common/agents.sql``.
"""

from __future__ import annotations

import abc
from collections.abc import Collection, Mapping
from typing import Any

from zombietop.fleet import AgentPresence
from zombietop.model import ProcessSample, Task
from zombietop.store.beats import sample_params
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
    async def record_agent_round(
        self,
        host: str,
        *,
        agent_id: str,
        pid: int,
        interval: float,
        reported_at: float,
        samples: Mapping[str, ProcessSample],
        finished: Collection[str] = (),
    ) -> AgentPresence:
        """Record one tick of ``host``'s agent at once: its beat (as ``record_agent_beat``) and
        its samples of the store's own tasks on the host (as ``record_process_samples`` without
        a source), so a host's tick costs the store one write, not one per task."""

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
            row = await self._row(
                db, "upsert_agent", _agent_params(host, agent_id, pid, interval, reported_at, now)
            )
        assert row is not None
        return AgentPresence.from_row(row)

    async def record_agent_round(
        self,
        host: str,
        *,
        agent_id: str,
        pid: int,
        interval: float,
        reported_at: float,
        samples: Mapping[str, ProcessSample],
        finished: Collection[str] = (),
    ) -> AgentPresence:
        # One transaction; PostgreSQL makes it one statement (PostgresStore).
        async with self._write() as db:
            now = await self._now_in(db)
            row = await self._row(
                db, "upsert_agent", _agent_params(host, agent_id, pid, interval, reported_at, now)
            )
            await self._run_bulk(
                db,
                "upsert_process_sample",
                [
                    sample_params(task_id, host, sample, now, after_finish=task_id in finished)
                    for task_id, sample in samples.items()
                ],
            )
            await self._run(db, "prune_own_samples", {"host": host, "now": now})
        assert row is not None
        return AgentPresence.from_row(row)

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


def _agent_params(
    host: str, agent_id: str, pid: int, interval: float, reported_at: float, now: float
) -> dict[str, Any]:
    """The named parameters of ``upsert_agent``."""
    return {
        "host": host,
        "agent_id": agent_id,
        "pid": pid,
        "interval_s": float(interval),
        "now": now,
        "reported_at": float(reported_at),
    }
