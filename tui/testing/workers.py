"""What the sample fleet runs on, for the workers screen: two agents and four engine workers,
two of them gone with tasks still on them."""

from __future__ import annotations

from dataclasses import replace

from zombietop.fleet import AgentPresence
from zombietop.judge.monitor import Snapshot
from zombietop.sources import EngineWorker
from zombietop.tui.testing.builders import HOST, NOW, H, M
from zombietop.tui.testing.fleet import sample_snapshot

CELERY = "celery+redis://broker-1:6379/0"
RQ = "rq+redis://broker-1:6379/1"


def sample_agents(now: float = NOW) -> tuple[AgentPresence, ...]:
    """The agent of the sample fleet's host, silent for 5 minutes, and a live one."""
    return (
        AgentPresence(
            host=HOST,
            agent_id=f"agent@{HOST}",
            pid=812,
            interval_s=2.0,
            started_at=now - 9 * H,
            seen_at=now - 5 * M,
        ),
        AgentPresence(
            host="batch-02",
            agent_id="agent@batch-02",
            pid=907,
            interval_s=2.0,
            started_at=now - 9 * H,
            seen_at=now - 1,
        ),
    )


def sample_engine_workers(now: float = NOW) -> tuple[EngineWorker, ...]:
    """Celery's and RQ's workers as their sources read them: one of each gone."""
    return (
        EngineWorker(
            name="celery@batch-03",
            kind="celery",
            source=CELERY,
            host="batch-03",
            pid=None,
            last_beat=now - 4,
            holds=3,
            gone=False,
        ),
        EngineWorker(
            name="celery@batch-04",
            kind="celery",
            source=CELERY,
            host="batch-04",
            pid=None,
            last_beat=now - 11 * M,
            holds=2,
            gone=True,
            why="no answer to zombietop's questions for 11m00s",
        ),
        EngineWorker(
            name="rq-worker-a1",
            kind="rq",
            source=RQ,
            host="batch-05",
            pid=3121,
            last_beat=now - 12,
            holds=1,
            gone=False,
        ),
        EngineWorker(
            name="rq-worker-b7",
            kind="rq",
            source=RQ,
            host=None,
            pid=None,
            last_beat=None,
            holds=0,
            gone=True,
            why="its hash rq:worker:NAME expired: it stopped beating",
        ),
    )


def workers_snapshot(now: float = NOW) -> Snapshot:
    """The sample fleet with its agents and engine workers."""
    return replace(
        sample_snapshot(now), agents=sample_agents(now), workers=sample_engine_workers(now)
    )
