"""``ScheduleWatch`` alone: a missed schedule paged like a stall, noticed again every
``[watch] renotify``, and cleared once a run starts or the schedule is gone. Each look's
schedules are built by hand, as the monitor would judge them; the pages and events are real."""

from __future__ import annotations

import pytest

from tests.core.watchdog_parts import Parts, hands_on
from zombietop.clock import FakeClock
from zombietop.config import Schedule
from zombietop.health import ScheduleHealth
from zombietop.judge.monitor import Snapshot
from zombietop.judge.schedules import ScheduleView
from zombietop.model import EventKind
from zombietop.store import Store
from zombietop.watch.incident_book import SCHEDULE_KEY, IncidentBook
from zombietop.watch.schedule_watch import ScheduleWatch

pytestmark = pytest.mark.backends("sqlite")
RENOTIFY = 600.0
NIGHTLY = Schedule(name="nightly", step="export", cron="0 2 * * *")


def nightly(health: ScheduleHealth, at: float) -> ScheduleView:
    return ScheduleView(
        schedule=NIGHTLY,
        health=health,
        last_due=at - 3600,
        next_due=at + 3600,
        last_started=None,
        running_since=None,
        first_seen=at - 86400,
        line=f"nightly {health}: the 02:00 UTC run did not start",
    )


class Schedules:
    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.book = IncidentBook(parts.hands, renotify=RENOTIFY)
        self.watch = ScheduleWatch(parts.hands, self.book, renotify=RENOTIFY)

    async def look(self, *views: ScheduleView) -> list[str]:
        """One look at these schedules; the kinds and lines of the pages it queued."""
        now = self.parts.clock.now()
        look = self.parts.look()
        await self.watch.check(Snapshot(taken_at=now, schedules=views), look)
        return [f"{page.kind}: {page.line}" for page in look.pages]


async def test_a_missed_schedule_is_paged_noticed_again_and_cleared_by_a_run(
    store: Store, clock: FakeClock
) -> None:
    schedules = Schedules(hands_on(store, clock))
    missed = nightly(ScheduleHealth.MISSED, clock.now())
    assert await schedules.look(missed) == [
        "incident: nightly missed: the 02:00 UTC run did not start"
    ]
    assert schedules.book.notices.keys() == [SCHEDULE_KEY + "nightly"]
    clock.advance(RENOTIFY / 2)
    assert await schedules.look(missed) == []
    clock.advance(RENOTIFY / 2)
    (notice,) = await schedules.look(missed)
    assert notice.startswith("renotify: nightly missed") and notice.endswith(
        "(2nd notice, open 10m00s)"
    )
    clock.advance(60)
    # A new fire time inside its grace is late, not over: the miss stays open.
    assert await schedules.look(nightly(ScheduleHealth.LATE, clock.now())) == []
    assert await schedules.look(nightly(ScheduleHealth.OK, clock.now())) == [
        "all_clear: schedule nightly all clear: now ok (was missed for 11m00s)"
    ]
    assert schedules.book.notices.keys() == []
    events = await schedules.parts.events(EventKind.PAGE)
    assert [e.data["page"] for e in events] == ["incident", "renotify", "all_clear"]
    assert all(e.data["schedule"] == "nightly" and e.task_id is None for e in events)


async def test_a_schedule_no_longer_configured_is_cleared(store: Store, clock: FakeClock) -> None:
    schedules = Schedules(hands_on(store, clock))
    await schedules.look(nightly(ScheduleHealth.MISSED, clock.now()))
    assert await schedules.look() == ["all_clear: schedule nightly all clear: no longer configured"]


async def test_a_schedule_that_runs_on_time_is_never_paged(store: Store, clock: FakeClock) -> None:
    schedules = Schedules(hands_on(store, clock))
    for health in (ScheduleHealth.OK, ScheduleHealth.LATE, ScheduleHealth.RUNNING_LONG):
        assert await schedules.look(nightly(health, clock.now())) == []
    assert await store.events(kind=EventKind.PAGE) == []
