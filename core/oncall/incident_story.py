"""An incident's whole story, read back from the event log: when it was paged, each notice
again, the notes, the acks, what was done (kill, resume, discard) and the all-clear, each with
who and when.

The story is the events themselves, grouped: an incident opens with its first page (or the
watchdog's record of a page a silence held), takes every event of its task until its
all-clear, and ends there. ``zombietop incident TASK`` prints one story and
``zombietop handover`` reads the same stories, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from zombietop.model import Event, EventKind
from zombietop.page import PageKind
from zombietop.store import Store

STORY_KINDS = (
    EventKind.PAGE,
    EventKind.WATCHDOG,
    EventKind.ACK,
    EventKind.INCIDENT_NOTE,
    EventKind.ACTION,
)
"""The kinds of event an incident's story is made of."""

DONE = frozenset({"requeued", "relaunched", "discarded", "term_sent"})
"""The outcomes of an action that was asked and done: a refusal or a gone process did
nothing, and a kill's end (exited, escalated) is the same kill, finished by whoever looked."""


class Step(StrEnum):
    """What one line of an incident's story says happened."""

    PAGED = "paged"
    """The first page of the incident."""
    HELD = "held"
    """The first page was held by a silence: detected, not paged."""
    RENOTIFIED = "renotified"
    """Another notice, nobody having acked."""
    NOTE = "note"
    ACKED = "acked"
    UNACKED = "unacked"
    ACTION = "action"
    """A kill, resume or discard, by a person or the watchdog."""
    WATCHDOG = "watchdog"
    """Something else the watchdog said of the task (an auto-retry, a limit reached)."""
    ALL_CLEAR = "all clear"


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One line of an incident's story."""

    at: float
    step: Step
    by: str
    text: str
    """What the event said, untrusted: print it through ``printable``."""
    action: str | None = None
    """For an action: ``kill``, ``resume`` or ``discard``."""
    done: bool = False
    """For an action: True when it did something (not refused, not already gone)."""
    until: float | None = None
    """For an ack: when it ends."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Story:
    """One incident of one task, from its first page to its all-clear (or now)."""

    task_id: str
    health: str
    """The health that opened it (``stalled``, ``dead``, ...)."""
    opened_at: float
    host: str | None = None
    """The task's host when the incident opened, as its first page says (None: not said,
    as in the pages of zombietop 0.1, or a task without a host)."""
    entries: tuple[Entry, ...] = field(default_factory=tuple)

    @property
    def closed_at(self) -> float | None:
        last = self.entries[-1] if self.entries else None
        return last.at if last is not None and last.step is Step.ALL_CLEAR else None

    @property
    def resolution(self) -> Entry | None:
        """The all-clear, once the incident is over."""
        last = self.entries[-1] if self.entries else None
        return last if last is not None and last.step is Step.ALL_CLEAR else None

    def resolved_by(self) -> Entry | None:
        """The last action that did something: what ended the incident, if a hand did."""
        acts = [e for e in self.entries if e.step is Step.ACTION and e.done]
        return acts[-1] if acts else None

    def ack(self) -> Entry | None:
        """The last ack, unless an unack came after it."""
        for entry in reversed(self.entries):
            if entry.step is Step.UNACKED:
                return None
            if entry.step is Step.ACKED:
                return entry
        return None

    def notes(self) -> list[Entry]:
        return [e for e in self.entries if e.step is Step.NOTE]


def _opens(event: Event) -> bool:
    """True for the event that opens an incident: its first page, or that page held."""
    data = event.data
    return (
        event.kind in (EventKind.PAGE, EventKind.WATCHDOG)
        and data.get("page") == PageKind.INCIDENT
        and not data.get("released")
        and "schedule" not in data
    )


def _entry(event: Event) -> Entry:
    data, kind = event.data, event.kind
    step = Step.WATCHDOG
    if kind == EventKind.PAGE or (kind == EventKind.WATCHDOG and "page" in data):
        page = data.get("page")
        if page == PageKind.ALL_CLEAR:
            step = Step.ALL_CLEAR
        elif page == PageKind.INCIDENT:
            step = Step.HELD if data.get("held") else Step.PAGED
            if data.get("released"):
                step = Step.RENOTIFIED  # paged at last, the silence over
        elif page == PageKind.RENOTIFY:
            step = Step.RENOTIFIED
        # Any other page is a one-shot warning (an overrun): told as the watchdog said it.
    elif kind == EventKind.INCIDENT_NOTE:
        return Entry(at=event.at, step=Step.NOTE, by=event.actor, text=str(data.get("text", "")))
    elif kind == EventKind.ACK:
        acked = data.get("action") == "ack"
        until = data.get("until")
        return Entry(
            at=event.at,
            step=Step.ACKED if acked else Step.UNACKED,
            by=event.actor,
            text=event.message,
            until=float(until) if acked and isinstance(until, int | float) else None,
        )
    elif kind == EventKind.ACTION:
        action = data.get("action")
        return Entry(
            at=event.at,
            step=Step.ACTION,
            by=event.actor,
            text=event.message,
            action=action if isinstance(action, str) else None,
            done=data.get("outcome") in DONE,
        )
    return Entry(at=event.at, step=step, by=event.actor, text=event.message)


def stories_of(events: Iterable[Event]) -> list[Story]:
    """Group one task's events (any order) into its incidents, oldest first. Events before
    its first incident, or between two, belong to none and are left out."""
    stories: list[Story] = []
    current: list[Entry] | None = None
    opening: Event | None = None
    for event in sorted(events, key=lambda e: e.event_id):
        if current is None:
            if not _opens(event) or event.task_id is None:
                continue
            opening, current = event, []
        assert opening is not None and opening.task_id is not None
        entry = _entry(event)
        current.append(entry)
        if entry.step is Step.ALL_CLEAR:
            stories.append(_story(opening, current))
            current = opening = None
    if current is not None and opening is not None:
        stories.append(_story(opening, current))
    return stories


def _story(opening: Event, entries: Sequence[Entry]) -> Story:
    assert opening.task_id is not None
    return Story(
        task_id=opening.task_id,
        health=str(opening.data.get("health", "")),
        opened_at=opening.at,
        host=host if isinstance(host := opening.data.get("host"), str) else None,
        entries=tuple(entries),
    )


async def stories_of_tasks(store: Store, task_ids: Sequence[str]) -> dict[str, list[Story]]:
    """Each task's incidents, oldest first, from the store's event log: the events of all the
    tasks are read together (a handover of 10,000 open incidents is a few reads, not one for
    each kind of event of each task)."""
    by_task: dict[str, list[Event]] = {task_id: [] for task_id in task_ids}
    for event in await store.events_of_tasks(list(by_task), STORY_KINDS):
        if event.task_id in by_task:
            by_task[event.task_id].append(event)
    return {task_id: stories_of(events) for task_id, events in by_task.items()}


async def stories(store: Store, task_id: str) -> list[Story]:
    """The task's incidents, oldest first, from the store's event log."""
    return (await stories_of_tasks(store, [task_id]))[task_id]
