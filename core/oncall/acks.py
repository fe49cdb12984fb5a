"""The on-call loop: acks ("I'm on it"), silences (expiring rules: shown, never paged), and when
an open incident is paged again.

Acks and silences live in the store, so every dashboard, watchdog and host sees the same ones.
They change who is paged, never a task's health. Every ack, unack, silence and unsilence is an
event with who and why; the watchdog reads the rest of its memory from the event log.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from zombietop.durations import format_age, format_duration
from zombietop.errors import ActionRefused
from zombietop.heartbeat_line import format_timestamp
from zombietop.identity import real_user
from zombietop.model import Ack, EventKind, Matcher, Note, Silence, Task
from zombietop.page import PageKind, incident_key
from zombietop.printable import bounded, printable

if TYPE_CHECKING:
    from zombietop.config import OnCallSettings
    from zombietop.store import Store


def operator_name() -> str:
    """Who acks or silences: the real uid's name (``zombietop.identity``), never ``$USER``."""
    return real_user()


@dataclass(frozen=True, slots=True, kw_only=True)
class OnCall:
    """The acks and active silences as of one poll, for the faces and the watchdog."""

    at: float
    acks: Mapping[str, Ack] = field(default_factory=dict)
    """Active acks by task id."""
    silences: tuple[Silence, ...] = ()
    """Active silences, soonest to end first."""

    def ack_for(self, task_id: str) -> Ack | None:
        return self.acks.get(task_id)

    def silence_for(self, task: Task) -> Silence | None:
        """The silence that holds this task's pages (the one that ends last), if any."""
        found = [s for s in self.silences if s.matches(task)]
        return max(found, key=lambda s: s.until) if found else None


def capped(silence: Silence, max_silence: float) -> Silence:
    """The silence as this reader honours it: at most ``max_silence`` after it was made.

    ``max_silence`` bounds what a silence may be set for, but only in the config of whoever
    set it: one made under a config that allows 100 years must not hold this reader's pages
    for longer than this reader's own config allows.
    """
    end = silence.created_at + max_silence
    if silence.until <= end:
        return silence
    return replace(silence, until=end, set_until=silence.until)


def capped_words(silence: Silence) -> str:
    """`` (set to end 2126-01-01T00:00:00Z; this reader's [oncall] max_silence = "7d" ends it
    sooner)``, or nothing for a silence that ends where it was set to."""
    if silence.set_until is None:
        return ""
    span = format_duration(round(silence.until - silence.created_at))
    return (
        f" (set to end {format_timestamp(math.floor(silence.set_until))}; this reader's "
        f'[oncall] max_silence = "{span}" ends it sooner)'
    )


def current(
    now: float,
    acks: Iterable[Ack],
    silences: Iterable[Silence],
    *,
    max_silence: float | None = None,
    owners: Mapping[str, str] | None = None,
) -> OnCall:
    """Keep what is in force at ``now``, each silence capped at ``max_silence`` (this reader's
    ``[oncall] max_silence``; None: as set). ``owners`` names, by task id, the source each of
    the sources' tasks came from in this poll: an ack counts only for the task of its own
    source (or of this store, for an ack without one), so an ack on one Airflow's
    DAG/TASK/RUN never quiets another's task of the same id."""
    if max_silence is not None:
        silences = [capped(s, max_silence) for s in silences]
    owners = owners or {}
    return OnCall(
        at=now,
        acks={
            ack.task_id: ack
            for ack in acks
            if ack.active(now) and ack.source == owners.get(ack.task_id)
        },
        silences=tuple(sorted((s for s in silences if s.active(now)), key=lambda s: s.until)),
    )


# Re-notify -------------------------------------------------------------------------------


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th ... 11th, 12th, 13th, 21st."""
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def notice_line(line: str, *, notice: int, open_for: float) -> str:
    """The same page line, with the notice number and how long the incident has been open."""
    return f"{line} ({ordinal(notice)} notice, open {format_age(open_for)})"


class FollowUp(StrEnum):
    """What an open incident is owed this look."""

    RELEASE = "release"
    """Its silence ended while it is still open: the page it never got goes out now."""
    RENOTIFY = "renotify"
    """Nobody acked or silenced it for ``[watch] renotify``: page again, the next notice."""


@dataclass(slots=True, kw_only=True)
class Notice:
    """What was sent for one open incident."""

    opened_at: float
    incident: str
    """The incident's name on each of its pages (``zombietop.page.incident_key``)."""
    notices: int = 0
    """Pages sent so far (0: held by a silence since it opened)."""
    last_at: float = 0.0


class Notices:
    """Per open incident (a task id, or ``schedule:NAME``): how many pages went out and when.

    The watchdog opens and closes incidents; this decides which open ones are paged again.
    Its memory is the page events, so ``--once`` runs under cron count notices right.
    """

    def __init__(self) -> None:
        self._open: dict[str, Notice] = {}

    def get(self, key: str) -> Notice | None:
        return self._open.get(key)

    def keys(self) -> list[str]:
        return list(self._open)

    def clear(self) -> None:
        self._open.clear()

    def opened(self, key: str, *, at: float, paged: bool, incident: str | None = None) -> Notice:
        """Open the incident ``key``; it is named ``incident`` (by default, from when it opened)."""
        notice = Notice(
            opened_at=at,
            incident=incident or incident_key(key, at),
            notices=1 if paged else 0,
            last_at=at,
        )
        self._open[key] = notice
        return notice

    def closed(self, key: str) -> Notice | None:
        return self._open.pop(key, None)

    def sent(self, key: str, *, at: float) -> int:
        """Count one more page for the incident; return its notice number."""
        notice = self._open[key]
        notice.notices += 1
        notice.last_at = at
        return notice.notices

    def remember(self, key: str, data: Mapping[str, object], at: float) -> None:
        """Replay one page event of the log (oldest first)."""
        page = data.get("page")
        if page == PageKind.INCIDENT:
            if data.get("released") and key in self._open:
                self.sent(key, at=at)
            else:
                name = data.get("incident")
                self.opened(
                    key,
                    at=at,
                    paged=not data.get("held"),
                    incident=name if isinstance(name, str) else None,
                )
        elif page == PageKind.RENOTIFY and key in self._open:
            self.sent(key, at=at)
        elif page == PageKind.ALL_CLEAR:
            self._open.pop(key, None)

    def due(
        self,
        key: str,
        *,
        now: float,
        interval: float,
        acked: bool,
        silenced: bool,
    ) -> FollowUp | None:
        """What the open incident ``key`` is owed now, if anything.

        Held (or silenced now): nothing until the silence ends, then the page it never got.
        Acked: nothing until the ack ends or the incident does. Otherwise, every ``interval``
        (0: never) after the last page, the next notice.
        """
        notice = self._open.get(key)
        if notice is None or silenced:
            return None
        if notice.notices == 0:
            return FollowUp.RELEASE
        if acked or interval <= 0 or now - notice.last_at < interval:
            return None
        return FollowUp.RENOTIFY


# The desk: what an operator asks for ---------------------------------------------------------


def _writable(store: Store, what: str) -> None:
    if store.read_only:
        raise ActionRefused(
            f"store {store.describe()} is open read-only; {what} is disabled (like every action)"
        )


def _bounded(seconds: float, settings: OnCallSettings, what: str) -> None:
    if seconds <= 0:
        raise ActionRefused(f"{what} must last longer than zero")
    if seconds > settings.max_silence:
        raise ActionRefused(
            f"{what} for {format_duration(seconds)} is longer than [oncall] max_silence = "
            f'"{format_duration(settings.max_silence)}"; give a shorter --for, or raise '
            "max_silence in the config"
        )


async def ack(
    store: Store,
    settings: OnCallSettings,
    task_id: str,
    *,
    by: str,
    reason: str | None = None,
    duration: float | None = None,
    source: str | None = None,
) -> Ack:
    """Ack a task's incident for ``duration`` (default ``[oncall] ack_for``); ``source`` names
    the read-only source of a task the store does not hold (the ack is kept in the store)."""
    _writable(store, "ack")
    seconds = settings.ack_for if duration is None else duration
    _bounded(seconds, settings, "an ack")
    return await store.ack_task(
        task_id, by=by, reason=reason or None, duration=seconds, source=source
    )


async def unack(store: Store, task_id: str, *, by: str, source: str | None = None) -> Ack | None:
    """End a task's ack (of ``source``'s task, when given); None when it had none."""
    _writable(store, "unack")
    return await store.unack_task(task_id, by=by, reason="unacked", source=source)


NOTE_LIMIT = 500
"""The most characters a note keeps: a note is a line for the next person, not a log."""


async def note(
    store: Store, task_id: str, text: str, *, by: str, source: str | None = None
) -> Note:
    """Add a note to a task's incident, with who and when; its text is cleaned
    (``printable``) and kept to ``NOTE_LIMIT`` characters."""
    _writable(store, "note")
    cleaned = bounded(" ".join(text.split()), limit=NOTE_LIMIT)
    if not cleaned:
        raise ActionRefused("a note needs some text: say what you found or what you wait on")
    return await store.add_note(task_id, by=by, text=cleaned, source=source)


async def recent_notes(store: Store, *, limit: int = 1000) -> dict[str, list[Note]]:
    """The newest ``limit`` notes of the store, by task id, newest first."""
    found: dict[str, list[Note]] = {}
    for event in await store.events(kind=EventKind.INCIDENT_NOTE, limit=limit):
        note = Note.from_event(event)
        found.setdefault(note.task_id, []).append(note)
    return found


def with_note(line: str, notes: Sequence[Note], *, since: float, now: float) -> str:
    """The line, with the newest note written since ``since`` (the incident opened):
    ``...; note by ana 5m ago: waiting on partner API``."""
    fresh = [n for n in notes if n.at >= since]
    if not fresh:
        return line
    newest = max(fresh, key=lambda n: n.at)
    return f"{line}; {printable(newest.words(now))}"


async def silence(
    store: Store,
    settings: OnCallSettings,
    *,
    matcher: Matcher,
    pattern: str,
    by: str,
    reason: str,
    duration: float,
) -> Silence:
    """Hold the pages of every task the rule matches for ``duration``; a reason is required."""
    _writable(store, "silence")
    if not reason.strip():
        raise ActionRefused("a silence needs a reason (--reason): whoever is paged next asks why")
    if not pattern:
        raise ActionRefused(f"a silence by {matcher} needs a value")
    _bounded(duration, settings, "a silence")
    return await store.add_silence(
        matcher=str(matcher), pattern=pattern, by=by, reason=reason, duration=duration
    )


async def unsilence(store: Store, silence_id: int, *, by: str) -> Silence:
    """End a silence now."""
    _writable(store, "unsilence")
    return await store.end_silence(silence_id, by=by)


class OnCallDesk(Protocol):
    """What a face needs to ack and silence; ``Desk`` implements it, tests hand a recorder."""

    @property
    def read_only(self) -> bool: ...

    async def ack(self, task_id: str, *, reason: str | None, duration: float | None) -> Ack: ...

    async def unack(self, task_id: str) -> Ack | None: ...

    async def silence(
        self, *, matcher: Matcher, pattern: str, reason: str, duration: float
    ) -> Silence: ...

    async def note(self, task_id: str, text: str) -> Note: ...


class Desk:
    """The on-call actions as a face calls them: one operator, one store, one config."""

    def __init__(
        self,
        store: Store,
        settings: OnCallSettings,
        *,
        by: str | None = None,
        source_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.by = by or operator_name()
        self.source_of = source_of or (lambda task_id: None)
        """The name of the read-only source a task id came from (as the dashboard's last poll
        read it); None for this store's own task."""

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    async def ack(self, task_id: str, *, reason: str | None, duration: float | None) -> Ack:
        return await ack(
            self.store,
            self.settings,
            task_id,
            by=self.by,
            reason=reason,
            duration=duration,
            source=self.source_of(task_id),
        )

    async def unack(self, task_id: str) -> Ack | None:
        return await unack(self.store, task_id, by=self.by, source=self.source_of(task_id))

    async def note(self, task_id: str, text: str) -> Note:
        return await note(self.store, task_id, text, by=self.by, source=self.source_of(task_id))

    async def silence(
        self, *, matcher: Matcher, pattern: str, reason: str, duration: float
    ) -> Silence:
        return await silence(
            self.store,
            self.settings,
            matcher=matcher,
            pattern=pattern,
            by=self.by,
            reason=reason,
            duration=duration,
        )
