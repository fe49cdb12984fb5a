"""On-call state for the sample fleet: an ack, a silence, and two schedules (one missed)."""

from __future__ import annotations

from zombietop.config import Schedule
from zombietop.judge.schedules import ScheduleView, judge, order
from zombietop.model import Ack, Matcher, Silence, StepRuns
from zombietop.oncall.acks import OnCall
from zombietop.tui.testing.builders import NOW, H, M


def sample_oncall(now: float = NOW) -> OnCall:
    """ana acked export-2031 12 minutes ago; bob silenced thumbs-* for a maintenance night."""
    return OnCall(
        at=now,
        acks={
            "export-2031": Ack(
                task_id="export-2031",
                by="ana",
                reason="restarting the partner API",
                acked_at=now - 12 * M,
                until=now + 108 * M,
            )
        },
        silences=(
            Silence(
                silence_id=3,
                matcher=Matcher.TASK,
                pattern="thumbs-*",
                by="bob",
                reason="resize cluster maintenance night",
                created_at=now - H,
                until=now + 5 * H,
            ),
        ),
    )


SAMPLE_SCHEDULES = (
    Schedule(name="nightly-ledger", step="ledger", cron="30 0 * * *", grace=10 * M),
    Schedule(name="hourly-crawl", step="crawl", cron="50 * * * *", grace=15 * M),
)


def sample_schedules(now: float = NOW) -> tuple[ScheduleView, ...]:
    """nightly-ledger missed its 00:30 UTC run; hourly-crawl ran at 23:53 for its 23:50 fire
    time and is inside the grace of its 00:50 one (late). Both were configured weeks ago."""
    runs = {
        "ledger": StepRuns(last_started=now - 24 * H - 22 * M),
        "crawl": StepRuns(last_started=now - H),
    }
    seen = now - 30 * 24 * H
    return order([judge(now, s, runs[s.step], first_seen=seen) for s in SAMPLE_SCHEDULES])
