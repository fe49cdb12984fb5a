"""One message for a human: what the watchdog pages, one task's or a digest of many."""

from __future__ import annotations

import time
from dataclasses import dataclass

from zombietop.printable import bounded

STORE_READ = "watchdog:store-read"
"""The incident of a watchdog that cannot read its store; paged once, cleared once."""
STORE_WRITE = "watchdog:store-write"
"""The incident of a watchdog that cannot write its store (a hold it could not place)."""
SOURCE_READ = "watchdog:source:"
"""The incident of a watchdog that cannot read a source: the prefix, then the source's name."""


def incident_key(subject: str, opened_at: float) -> str:
    """One incident's name: its task (or ``schedule:NAME``) and when it opened, in UTC
    (``extract-2031:20261202T030000Z``). Its pages carry it to every channel, and a channel that
    keeps incidents (PagerDuty) triggers, acknowledges and resolves by it."""
    return f"{subject}:{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(opened_at))}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One message for a human: a line with enough context to decide in three seconds."""

    kind: str
    """incident, renotify, all_clear, acknowledged, stage_overrun, request_overrun, watchdog,
    digest."""
    line: str
    task_id: str | None = None
    health: str | None = None
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

    @property
    def shown(self) -> str:
        """The line as a person receives it: printable and bounded (``bounded``), whatever
        the task's fields held.

        ``line`` stays exact for the event the store keeps; every channel sends ``shown``.
        """
        return bounded(self.line)
