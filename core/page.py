"""One message for a human: what the watchdog pages, one task's or a digest of many."""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum

from zombietop.health import Flag, Health, ScheduleHealth
from zombietop.printable import bounded

STORE_READ = "watchdog:store-read"
"""The incident of a watchdog that cannot read its store; paged once, cleared once."""
STORE_WRITE = "watchdog:store-write"
"""The incident of a watchdog that cannot write its store (a hold it could not place)."""
SOURCE_READ = "watchdog:source:"
"""The incident of a watchdog that cannot read a source: the prefix, then the source's name."""


class PageKind(StrEnum):
    """What a page says: the channels, the digests and the event log tell pages apart by it.

    The event log keeps the value (``all_clear``), so a value never changes.
    """

    INCIDENT = "incident"
    """The first page of an incident (or the page a silence held, sent when it ends)."""
    RENOTIFY = "renotify"
    """Another page of an incident still open that nobody acked or silenced."""
    ALL_CLEAR = "all_clear"
    """The incident is over: the task, schedule or watchdog is well again."""
    ACKNOWLEDGED = "acknowledged"
    """A human acked an incident: only the channels that keep incidents hear of it."""
    WATCHDOG = "watchdog"
    """The watchdog itself is in trouble: it cannot read its store or a source, or write."""
    STAGE_OVERRUN = "stage_overrun"
    """A stage has run past its budget (paged once)."""
    REQUEST_OVERRUN = "request_overrun"
    """A request has run past its budget (paged once)."""
    REDELIVERED = "redelivered"
    """A queue gave the task to a worker again while it was still held (paged once)."""
    QUEUED_TOO_LONG = "queued_too_long"
    """The task waited in its queue past ``queue_timeout`` (paged once)."""
    SLOWER_THAN_USUAL = "slower_than_usual"
    """The run is much slower than its job's usual run (paged once)."""
    FINISHED_TOO_FAST = "finished_too_fast"
    """The run succeeded much faster than its job's usual run (paged once)."""
    RUNS_LATE_USUALLY = "runs_late_usually"
    """A job's start times drift from its usual cadence (paged once a day per job)."""
    FAILING_MORE = "failing_more"
    """A job fails much more often today than in the last 30 days (paged once a day per job)."""
    FLAPPING = "flapping"
    """The task went into and out of a health that pages too often: one notice, then its
    pages are held until it is steady (an all-clear says so)."""

    @classmethod
    def of_flag(cls, flag: Flag) -> PageKind:
        """The page of a flag that pages once per task (``Flag.pages_once``)."""
        return cls(flag.value)

    @property
    def budget(self) -> bool:
        """A warning that a budget is spent: it opens no incident."""
        return self in (PageKind.STAGE_OVERRUN, PageKind.REQUEST_OVERRUN)


_WITHOUT_KIND = [flag for flag in Flag if flag.pages_once and flag.value not in set(PageKind)]
if _WITHOUT_KIND:
    # Fail at import, not at the first page of the flag.
    raise TypeError(f"zombietop.page: no PageKind for the flags {_WITHOUT_KIND}")


def page_health(word: str | None) -> Health | ScheduleHealth | None:
    """The health a stored page speaks of (a task's, or ``missed`` for a schedule's)."""
    if word is None:
        return None
    if word in set(ScheduleHealth):
        return ScheduleHealth(word)
    return Health(word)


def incident_key(subject: str, opened_at: float) -> str:
    """One incident's name: its task (or ``schedule:NAME``) and when it opened, in UTC
    (``extract-2031:20261202T030000Z``). Its pages carry it to every channel, and a channel that
    keeps incidents (PagerDuty) triggers, acknowledges and resolves by it."""
    return f"{subject}:{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(opened_at))}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One message for a human: a line with enough context to decide in three seconds."""

    kind: PageKind
    line: str
    task_id: str | None = None
    health: Health | ScheduleHealth | None = None
    """The health the line speaks of: a task's, or ``missed`` for a schedule's page."""
    host: str | None = None
    """The task's host, for grouping many pages into a digest."""
    since: float | None = None
    """When the task last showed progress (its last beat, else its start): a digest lists the
    longest silent first."""
    at: float
    tasks: tuple[str, ...] = ()
    """A digest's tasks (its ``task_id`` is None); empty for a page of one task."""
    incident: str | None = None
    """The incident the page belongs to (``incident_key``, or a watchdog constant above); None
    for a page that opens and closes nothing (an overrun, a digest)."""
    runbook: str | None = None
    """The runbook the line ends with, as a link for the channels that carry one."""
    trace_id: str | None = None
    """The W3C trace the task runs in (the line says its start: ``trace 4bf92f35...``)."""
    trace_url: str | None = None
    """The link to that trace, where ``[otel] trace_url`` is set."""

    @property
    def shown(self) -> str:
        """The line as a person receives it: printable and bounded (``bounded``), whatever
        the task's fields held.

        ``line`` stays exact for the event the store keeps; every channel sends ``shown``.
        """
        return bounded(self.line)
