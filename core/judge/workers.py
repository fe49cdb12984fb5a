"""What the tasks run on, in one list: zombietop's agents and the engines' workers.

An agent (``zombietop agent``, one per host) holds the tasks of zombietop's store that run on
its host; an engine's worker (a Celery or RQ worker, a BullMQ worker's connection) holds the
tasks its engine says it runs. A worker gone with tasks still on it comes first: those tasks
are zombies in the making. Then the live ones, the busiest first, then the gone ones that hold
nothing. A pure function of one snapshot and ``now``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable

from zombietop.durations import format_age
from zombietop.fleet import AgentPresence
from zombietop.judge.snapshot import Snapshot, TaskView
from zombietop.sources import EngineWorker

AGENT = "agent"
"""The kind of a zombietop agent in the list, beside the engines' kinds."""


def agent_holds(views: Iterable[TaskView], engines: Container[str]) -> Counter[str]:
    """By host, how many of zombietop's own tasks run there; an engine's task (its id in
    ``engines``) is held by the engine's worker."""
    return Counter(
        view.task.host
        for view in views
        if view.task.host is not None and view.task.state.executing and view.task_id not in engines
    )


def agent_worker(agent: AgentPresence, holds: int, now: float) -> EngineWorker:
    """An agent as one line of the list: gone once it missed its ticks, or stopped."""
    gone = not agent.present(now)
    why = ""
    if agent.stopped_at is not None:
        why = f"stopped {format_age(max(now - agent.stopped_at, 0.0))} ago"
    elif gone:
        why = f"no beat for {format_age(max(now - agent.seen_at, 0.0))}"
    return EngineWorker(
        name=agent.agent_id,
        kind=AGENT,
        source="store",
        host=agent.host,
        pid=agent.pid,
        last_beat=agent.seen_at,
        holds=holds,
        gone=gone,
        why=why,
    )


def worker_list(snapshot: Snapshot, now: float) -> tuple[EngineWorker, ...]:
    """Every agent and every engine's worker the snapshot knows, in the order to read them."""
    holds = agent_holds(snapshot.tasks, snapshot.origins)
    agents = [agent_worker(a, holds[a.host], now) for a in snapshot.agents]
    return tuple(sorted([*agents, *snapshot.workers], key=_order))


def _order(worker: EngineWorker) -> tuple[int, int, str, str]:
    rank = 0 if worker.gone and worker.holds else 2 if worker.gone else 1
    return (rank, -worker.holds, worker.kind, worker.name)
