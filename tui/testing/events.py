"""What the detail screen shows beside the sample fleet: its events and a progress history."""

from __future__ import annotations

from zombietop.model import Event, EventKind, HistoryPoint
from zombietop.tui.testing.builders import NOW, H, M


def sample_history(task_id: str) -> list[HistoryPoint]:
    """A made-up climb that flattens out, for the sparkline."""
    points = [0, 4, 9, 15, 22, 28, 33, 40, 46, 51, 55, 58, 60, 61, 61, 61, 61, 61]
    return [
        HistoryPoint(
            written_at=NOW - (len(points) - i) * 10 * M, stage="transform", progress=float(p)
        )
        for i, p in enumerate(points)
    ]


def sample_events(task_id: str | None = None) -> list[Event]:
    events = [
        Event(
            event_id=6,
            at=NOW - 60,
            task_id="etl-0417",
            kind=EventKind.TRANSITION,
            actor="watchdog",
            message="healthy -> dead: pid 3907 is gone",
        ),
        Event(
            event_id=5,
            at=NOW - 6 * M,
            task_id="thumbs-7781",
            kind=EventKind.TRANSITION,
            actor="watchdog",
            message="healthy -> stalled: heartbeat 2m00s old (timeout 2m)",
        ),
        Event(
            event_id=4,
            at=NOW - 20 * M,
            task_id="billing-0901",
            kind=EventKind.QUARANTINED,
            actor="watchdog",
            message="quarantined: stalled 2m at stage=invoice",
        ),
        Event(
            event_id=3,
            at=NOW - 30 * M,
            task_id="export-2029",
            kind=EventKind.ACTION,
            actor="alice@laptop",
            message="discard: discarded (token 2 -> 3)",
        ),
        Event(
            event_id=2,
            at=NOW - 3 * H - 50 * M,
            task_id="export-2031",
            kind=EventKind.TRANSITION,
            actor="watchdog",
            message="stalled -> reclaimable: lease expired",
        ),
        Event(
            event_id=1,
            at=NOW - 4 * H,
            task_id="export-2031",
            kind=EventKind.PAGE,
            actor="watchdog",
            message=(
                "export-2031 stalled: stage=transform p=61% heartbeat 2m00s old - resume or discard"
            ),
        ),
    ]
    return [e for e in events if task_id is None or e.task_id == task_id]
