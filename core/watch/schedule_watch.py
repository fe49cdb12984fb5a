"""Missed schedules, paged like stalls: the first page, a notice every ``[watch] renotify``,
and the all-clear once a run starts (or the schedule is no longer configured).

A schedule's incident has no task: its notices live in the incident book under
``SCHEDULE_KEY`` and the schedule's name.
"""

from __future__ import annotations

from zombietop.durations import format_age
from zombietop.health import ScheduleHealth
from zombietop.judge.monitor import Snapshot
from zombietop.model import EventKind
from zombietop.page import PageKind, incident_key
from zombietop.watch.incident_book import SCHEDULE_KEY, IncidentBook
from zombietop.watch.watchdog_hands import Hands, Look


class ScheduleWatch:
    """Page the schedules a snapshot says were missed, again while they are, and the all-clear."""

    def __init__(self, hands: Hands, book: IncidentBook, *, renotify: float) -> None:
        self.hands = hands
        self.book = book
        self.renotify = renotify
        """``[watch] renotify``: seconds between the notices of a schedule still missed."""

    async def check(self, snapshot: Snapshot, look: Look) -> None:
        """Page a missed schedule like a stall (then re-notify), all-clear once a run starts."""
        hands, notices = self.hands, self.book.notices
        configured = set()
        for view in snapshot.schedules:
            key = SCHEDULE_KEY + view.name
            configured.add(key)
            open_ = notices.get(key)
            if view.health.pages and open_ is None:
                notice = notices.opened(key, at=hands.clock.now(), paged=True)
                hands.page_schedule(look, PageKind.INCIDENT, view.line, incident=notice.incident)
                await hands.record(
                    EventKind.PAGE,
                    view.line,
                    None,
                    {
                        "page": PageKind.INCIDENT,
                        "schedule": view.name,
                        "health": str(view.health),
                        "incident": notice.incident,
                    },
                )
            elif view.health.pages:
                due = notices.due(
                    key,
                    now=hands.clock.now(),
                    interval=self.renotify,
                    acked=False,
                    silenced=False,
                )
                if due is not None:
                    await self.book.notice(look, key, due, view.line, schedule=view.name)
            elif open_ is not None and view.health is not ScheduleHealth.LATE:
                # Late is a new fire time still inside its grace: the miss is not over yet.
                took = format_age(hands.clock.now() - open_.opened_at)
                await self._clear(look, view.name, f"now {view.health} (was missed for {took})")
        for key in [k for k in notices.keys() if k.startswith(SCHEDULE_KEY)]:
            if key not in configured:
                await self._clear(look, key[len(SCHEDULE_KEY) :], "no longer configured")

    async def _clear(self, look: Look, name: str, how: str) -> None:
        notice = self.book.notices.closed(SCHEDULE_KEY + name)
        line = f"schedule {name} all clear: {how}"
        incident = notice.incident if notice else incident_key(SCHEDULE_KEY + name, look.now)
        self.hands.page_schedule(look, PageKind.ALL_CLEAR, line, incident=incident)
        await self.hands.record(
            EventKind.PAGE, line, None, {"page": PageKind.ALL_CLEAR, "schedule": name}
        )
