"""Many task pages at one look become a few digests: a mass incident pages a human per group.

For the words look and page, see docs/glossary.md.

Up to ``[notify] digest_after`` task pages at one look go out one by one. Past it, the pages
of each kind (incident, renotify, all-clear, an overrun) and health are grouped by host, and a
group of more than one goes as one digest that still lists the worst few with their line:
``312 tasks stalled on batch-07 since 02:10 UTC; worst: ...``. Should there still be more
groups than ``digest_after`` (a fleet of small hosts), the groups are by kind and health alone.
Each task is in one page or in one digest, never both. Pages that name no task (the watchdog's
own, a schedule's) always go alone.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TypeVar

from zombietop.page import Page, PageKind

T = TypeVar("T")

WORST_SHOWN = 3
"""Task lines a digest carries in full, the longest silent first."""


def compose(pages: Sequence[Page], *, after: int, at: float) -> list[Page]:
    """Return what to send for one look's pages: each alone, or digests past ``after``."""
    tasks = [page for page in pages if page.task_id is not None]
    if len(tasks) <= after:
        return list(pages)
    groups, by_host = group_by_cause_and_host(
        tasks, cause=lambda page: (page.kind, page.health), host=lambda page: page.host, most=after
    )
    out = [page for page in pages if page.task_id is None]
    for members in groups:
        out.append(members[0] if len(members) == 1 else digest(members, at=at, by_host=by_host))
    return out


def group_by_cause_and_host(
    items: Sequence[T],
    *,
    cause: Callable[[T], Hashable],
    host: Callable[[T], str | None],
    most: int,
) -> tuple[list[list[T]], bool]:
    """Group ``items`` by their cause and host, each group in the order its first item came;
    when that makes more than ``most`` groups (a fleet of small hosts), by cause alone. Return
    the groups, and True when they are by host. The handover groups incidents so too."""
    groups = _group(items, lambda item: (cause(item), host(item)))
    if len(groups) <= most:
        return list(groups.values()), True
    return list(_group(items, cause).values()), False


def digest(members: Sequence[Page], *, at: float, by_host: bool = True) -> Page:
    """One page for a group of task pages of one kind and health."""
    first = members[0]
    hosts = sorted({page.host or "an unknown host" for page in members})
    where = f" on {hosts[0]}" if by_host or len(hosts) == 1 else f" on {len(hosts)} hosts"
    starts = [page.since for page in members if page.since is not None]
    since = (
        f" since {_clock_time(min(starts))}"
        if starts and first.kind is not PageKind.ALL_CLEAR
        else ""
    )
    worst = sorted(members, key=lambda page: (page.since is None, page.since or 0.0))
    shown = [page.line for page in worst[:WORST_SHOWN]]
    more = len(members) - len(shown)
    tail = f" | and {more} more" if more else ""
    line = (
        f"{len(members)} tasks {_what(first)}{where}{since}; "
        f"{'worst' if first.kind is not PageKind.ALL_CLEAR else 'first'}: "
        + " | ".join(shown)
        + tail
    )
    return replace(
        first,
        line=line,
        task_id=None,
        host=hosts[0] if len(hosts) == 1 else None,
        since=min(starts) if starts else None,
        at=at,
        tasks=tuple(page.task_id for page in members if page.task_id is not None),
    )


def _what(page: Page) -> str:
    health = str(page.health or "?")
    if page.kind is PageKind.INCIDENT:
        return health
    if page.kind is PageKind.RENOTIFY:
        return f"still {health}"
    if page.kind is PageKind.ALL_CLEAR:
        return f"all clear (now {health})"
    return f"{page.kind.replace('_', ' ')} ({health})"


def _clock_time(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%H:%M UTC")


def _group(items: Sequence[T], key: Callable[[T], Hashable]) -> dict[Hashable, list[T]]:
    groups: dict[Hashable, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups
