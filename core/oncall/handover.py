"""What a person taking over the pager needs, read from the store: the incidents still open
(acked or not), those that ended in the window and how, the silences that end soon, and the
schedules missed. ``zombietop handover`` prints it.

It is built from the store's own records (the event log, the acks and the silences in
force), never from a log of its own: the incidents are the stories ``incident_story`` reads,
so a handover and ``zombietop incident TASK`` always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zombietop.model import Ack, Event, EventKind, Silence
from zombietop.oncall.acks import current
from zombietop.oncall.incident_story import Story, stories_of_tasks
from zombietop.page import PageKind
from zombietop.store import Store

SILENCE_HORIZON = 8 * 3600.0
"""Silences that end within this many seconds are listed: the next shift inherits them."""

PAGE_BATCH = 500
"""How many page events one read of the log takes, going back to the start of the window."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenIncident:
    """An incident still open, with its ack in force (None: nobody is on it)."""

    story: Story
    ack: Ack | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MissedSchedule:
    """A schedule paged as missed in the window (or before it and still missed)."""

    name: str
    paged_at: float
    line: str
    """The page's line, untrusted."""
    cleared_at: float | None
    cleared: str | None
    """The all-clear's line, untrusted; None while it is still missed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Handover:
    """The shift in one value: what the renderers (markdown, JSON) print."""

    now: float
    since: float
    open: tuple[OpenIncident, ...]
    """Still open, oldest first: the unacked ones are the reader's first job."""
    resolved: tuple[Story, ...]
    """Ended within the window, oldest first."""
    silences: tuple[Silence, ...]
    """In force now and ending within ``SILENCE_HORIZON``, soonest first."""
    later_silences: int
    """How many other silences are in force (ending later)."""
    schedules: tuple[MissedSchedule, ...]

    @property
    def unacked(self) -> list[OpenIncident]:
        return [o for o in self.open if o.ack is None]

    @property
    def acked(self) -> list[OpenIncident]:
        return [o for o in self.open if o.ack is not None]


async def page_events_since(store: Store, since: float) -> list[Event]:
    """The page and watchdog events from ``since`` on, oldest first, read back in batches."""
    found: list[Event] = []
    for kind in (EventKind.PAGE, EventKind.WATCHDOG):
        before: int | None = None
        while True:
            batch = await store.events(kind=kind, limit=PAGE_BATCH, before_id=before)
            found += [e for e in batch if e.at >= since]
            if len(batch) < PAGE_BATCH or batch[-1].at < since:
                break
            before = batch[-1].event_id
    return sorted(found, key=lambda e: e.event_id)


def _touched(events: Sequence[Event], memory_events: Sequence[Event]) -> list[str]:
    """The tasks with an incident open now or paged in the window, in the order first seen."""
    names: dict[str, None] = {}
    for event in [*memory_events, *events]:
        if event.task_id is not None and "page" in event.data and "schedule" not in event.data:
            names.setdefault(event.task_id, None)
    return list(names)


def missed_schedules(
    events: Sequence[Event], memory_events: Sequence[Event]
) -> list[MissedSchedule]:
    """Each schedule paged as missed, with its all-clear when one came, oldest first."""
    missed: list[MissedSchedule] = []
    opened: dict[str, Event] = {}
    seen: set[int] = set()
    for event in sorted([*memory_events, *events], key=lambda e: e.event_id):
        name = event.data.get("schedule")
        if event.event_id in seen or not isinstance(name, str) or event.kind != EventKind.PAGE:
            continue
        seen.add(event.event_id)
        page = event.data.get("page")
        if page == PageKind.INCIDENT and not event.data.get("released") and name not in opened:
            opened[name] = event
        elif page == PageKind.ALL_CLEAR and name in opened:
            first = opened.pop(name)
            missed.append(_missed(first, event))
    missed += [_missed(first, None) for first in opened.values()]
    return sorted(missed, key=lambda m: m.paged_at)


def _missed(first: Event, clear: Event | None) -> MissedSchedule:
    return MissedSchedule(
        name=str(first.data["schedule"]),
        paged_at=first.at,
        line=first.message,
        cleared_at=None if clear is None else clear.at,
        cleared=None if clear is None else clear.message,
    )


async def read_handover(
    store: Store, *, now: float, since: float, max_silence: float | None = None
) -> Handover:
    """The shift from ``since`` to ``now``, as the store holds it. ``max_silence`` is this
    reader's ``[oncall] max_silence``: a silence ends at that bound if it was set longer."""
    memory = await store.watchdog_memory()
    events = await page_events_since(store, since)
    acks = await store.acks()
    # Each ack applies to its own task: a source's, or this store's (``current``).
    owners = {ack.task_id: ack.source for ack in acks if ack.source is not None}
    in_force = current(now, acks, await store.silences(), max_silence=max_silence, owners=owners)
    open_: list[OpenIncident] = []
    resolved: list[Story] = []
    touched = _touched(events, memory.open_events)
    for task_id, told in (await stories_of_tasks(store, touched)).items():
        for story in told:
            closed = story.closed_at
            if closed is None:
                open_.append(OpenIncident(story=story, ack=in_force.acks.get(task_id)))
            elif since <= closed <= now:
                resolved.append(story)
    horizon = now + SILENCE_HORIZON
    soon = tuple(s for s in in_force.silences if s.until <= horizon)
    return Handover(
        now=now,
        since=since,
        open=tuple(sorted(open_, key=lambda o: o.story.opened_at)),
        resolved=tuple(sorted(resolved, key=lambda s: s.closed_at or 0.0)),
        silences=soon,
        later_silences=len(in_force.silences) - len(soon),
        schedules=tuple(
            m
            for m in missed_schedules(events, memory.open_events)
            if m.cleared_at is None or m.cleared_at >= since
        ),
    )
