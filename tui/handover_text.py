"""The handover and an incident's story as a person reads them: Markdown or Slack's mrkdwn for
the handover (to paste into a ticket or a chat), plain lines for one incident, and JSON for
both.

Every time is given in UTC with how long ago it was, and in the reader's own zone too when
that is not UTC (``zone``, passed in so tests fix it). Every untrusted field goes through
``printable``; in Markdown through ``md_text`` or ``md_code`` as well, in Slack through
``slack_text`` or ``slack_code``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from zombietop.durations import format_age
from zombietop.heartbeat_line import format_timestamp
from zombietop.model import Silence
from zombietop.oncall.handover import Handover, MissedSchedule, OpenIncident
from zombietop.oncall.incident_story import Entry, Step, Story
from zombietop.paging.digest import group_by_cause_and_host
from zombietop.printable import printable
from zombietop.tui.markdown import md_code, md_text
from zombietop.tui.slack import slack_code, slack_text

PAGES = (Step.PAGED, Step.RENOTIFIED)

LISTED_UP_TO = 20
"""A section of the handover lists up to this many incidents one by one; above it, the oldest
``SHOWN_IN_FULL``, then one line per root cause and host, as the watchdog's digests group
pages (by root cause alone when that makes more lines than this). ``--format json`` always
has the full list."""
SHOWN_IN_FULL = 5
NAMED_IN_GROUP = 3
"""Task ids a group's line names, the oldest first."""


def when(at: float, now: float, zone: tzinfo | None = None, *, seconds: bool = False) -> str:
    """``2026-12-01 03:00 UTC (2h10m ago)``; with a zone other than UTC,
    ``2026-12-01 03:00 UTC, 04:00 CET (2h10m ago)``."""
    shape = "%H:%M:%S" if seconds else "%H:%M"
    moment = datetime.fromtimestamp(at, UTC)
    text = moment.strftime(f"%Y-%m-%d {shape} UTC")
    local = moment.astimezone(zone) if zone is not None else moment
    if local.utcoffset() != timedelta(0):
        text += f", {local.strftime(shape)} {local.tzname()}"
    gap = now - at
    if abs(gap) < 1:
        return f"{text} (now)"
    return f"{text} ({format_age(gap)} ago)" if gap > 0 else f"{text} (in {format_age(gap)})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _last_page(story: Story) -> Entry | None:
    pages = [e for e in story.entries if e.step in PAGES or e.step is Step.HELD]
    return pages[-1] if pages else None


def how_it_ended(story: Story) -> str:
    """``by a kill, by ana`` or ``by itself``: what ended the incident."""
    hand = story.resolved_by()
    if hand is None:
        return "by itself"
    return f"by a {hand.action or 'action'}, by {hand.by}"


# Markdown and Slack ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """How one format writes the handover: its title and section lines, its bullets, and how it
    shows untrusted text (every field goes through ``text`` or ``code``)."""

    text: Callable[[str], str]
    code: Callable[[str], str]
    title: Callable[[str], str]
    heading: Callable[[str], str]
    bullet: str
    sub: str
    """The bullet of a line under an item."""


MARKDOWN = Dialect(
    text=md_text,
    code=md_code,
    title=lambda words: f"# {words}",
    heading=lambda words: f"## {words}",
    bullet="- ",
    sub="  - ",
)
SLACK = Dialect(
    # mrkdwn has no headings: a bold line stands for one.
    text=slack_text,
    code=slack_code,
    title=lambda words: f"*{words}*",
    heading=lambda words: f"*{words}*",
    bullet="• ",
    sub="    ◦ ",
)
FORMATS: dict[str, Dialect] = {"markdown": MARKDOWN, "md": MARKDOWN, "slack": SLACK}
"""``zombietop handover --format``: each text format and how it writes (``json`` aside)."""


def _notes(d: Dialect, story: Story, now: float, zone: tzinfo | None) -> list[str]:
    return [
        f"{d.sub}note by {d.text(n.by)}, {when(n.at, now, zone)}: {d.text(n.text)}"
        for n in reversed(story.notes())
    ]


def _open(d: Dialect, item: OpenIncident, now: float, zone: tzinfo | None) -> list[str]:
    story, ack = item.story, item.ack
    pages = sum(1 for e in story.entries if e.step in PAGES)
    line = (
        f"{d.bullet}{d.code(story.task_id)}: {d.text(story.health)} since "
        f"{when(story.opened_at, now, zone)}; "
        + (f"paged {_plural(pages, 'time')}" if pages else "not paged: a silence holds it")
    )
    if ack is not None:
        why = f": {d.text(ack.reason)}" if ack.reason else ""
        line += f"; acked by {d.text(ack.by)} until {when(ack.until, now, zone)}{why}"
    last = _last_page(story)
    lines = [line]
    if last is not None:
        # A held page's own text says so: "held by silence 3: ...".
        label = "" if last.step is Step.HELD else "last page: "
        lines.append(f"{d.sub}{label}{d.text(last.text)}")
    return lines + _notes(d, story, now, zone)


def _resolved(d: Dialect, story: Story, now: float, zone: tzinfo | None) -> list[str]:
    clear = story.resolution
    assert clear is not None
    took = format_age(clear.at - story.opened_at)
    acks = sorted({e.by for e in story.entries if e.step is Step.ACKED})
    acked = f"; acked by {', '.join(d.text(by) for by in acks)}" if acks else ""
    return [
        f"{d.bullet}{d.code(story.task_id)}: {d.text(story.health)}, open {took}; ended "
        f"{d.text(how_it_ended(story))} at {when(clear.at, now, zone)}{acked}",
        f"{d.sub}all clear: {d.text(clear.text)}",
        *_notes(d, story, now, zone),
    ]


def _silence(d: Dialect, silence: Silence, now: float, zone: tzinfo | None) -> str:
    return (
        f"{d.bullet}silence {silence.silence_id} ({silence.matcher} {d.code(silence.pattern)}) "
        f"by {d.text(silence.by)} ends {when(silence.until, now, zone)}: {d.text(silence.reason)}"
    )


def _schedule(d: Dialect, missed: MissedSchedule, now: float, zone: tzinfo | None) -> list[str]:
    head = f"{d.bullet}{d.code(missed.name)}: paged {when(missed.paged_at, now, zone)}"
    if missed.cleared_at is None or missed.cleared is None:
        return [f"{head}; still missed", f"{d.sub}page: {d.text(missed.line)}"]
    return [
        f"{head}; cleared {when(missed.cleared_at, now, zone)}",
        f"{d.sub}page: {d.text(missed.line)}",
        f"{d.sub}all clear: {d.text(missed.cleared)}",
    ]


def _section(d: Dialect, title: str, items: list[list[str]], count: int | None = None) -> list[str]:
    body = [line for item in items for line in item] or ["None."]
    return [d.heading(f"{title} ({len(items) if count is None else count})"), "", *body, ""]


def _grouped(
    d: Dialect,
    title: str,
    stories: list[Story],
    render: Callable[[int], list[str]],
    now: float,
    zone: tzinfo | None,
) -> list[str]:
    """A section of ``stories`` (oldest first): each one by ``render(index)`` up to
    ``LISTED_UP_TO``; above it the oldest few, then a line for each root cause (the health
    that opened the incident) and host of the rest, grouped as the watchdog's digests are."""
    if len(stories) <= LISTED_UP_TO:
        return _section(d, title, [render(i) for i in range(len(stories))])
    items = [render(i) for i in range(SHOWN_IN_FULL)]
    groups, by_host = group_by_cause_and_host(
        stories[SHOWN_IN_FULL:],
        cause=lambda story: story.health,
        host=lambda story: story.host,
        most=LISTED_UP_TO,
    )
    for members in sorted(groups, key=lambda group: -len(group)):
        items.append([_group_line(d, members, by_host, now, zone)])
    items.append(["The whole list, one by one: `zombietop handover --format json`."])
    return _section(d, title, items, count=len(stories))


def _group_line(
    d: Dialect, members: list[Story], by_host: bool, now: float, zone: tzinfo | None
) -> str:
    """``- 25 more stalled on batch-07, opened from ... to ...: `a`, `b`, `c` and 22 more``."""
    hosts = {story.host for story in members}
    if by_host or len(hosts) == 1:
        host = next(iter(hosts))
        where = "an unknown host" if host is None else d.text(host)
    else:
        where = f"{len(hosts)} hosts"
    named = ", ".join(d.code(story.task_id) for story in members[:NAMED_IN_GROUP])
    more = len(members) - NAMED_IN_GROUP
    return (
        f"{d.bullet}{len(members)} more {d.text(members[0].health)} on {where}, opened from "
        f"{when(min(m.opened_at for m in members), now, zone)} to "
        f"{when(max(m.opened_at for m in members), now, zone)}: {named}"
        + (f" and {more} more" if more > 0 else "")
    )


def _open_section(
    d: Dialect, title: str, items: list[OpenIncident], now: float, zone: tzinfo | None
) -> list[str]:
    stories = [item.story for item in items]
    return _grouped(d, title, stories, lambda i: _open(d, items[i], now, zone), now, zone)


def handover_text(h: Handover, zone: tzinfo | None = None, dialect: Dialect = MARKDOWN) -> str:
    """The handover in Markdown or Slack's mrkdwn: one section per thing the next person must
    know."""
    d, now = dialect, h.now
    silences = [[_silence(d, s, now, zone)] for s in h.silences]
    later = h.later_silences
    lines = [
        d.title(f"Handover at {when(now, now, zone)}"),
        "",
        f"The window: {format_age(now - h.since)}, from {when(h.since, now, zone)}.",
        "",
        *_open_section(d, "Open, nobody on it", h.unacked, now, zone),
        *_open_section(d, "Open and acked", h.acked, now, zone),
        *_grouped(
            d,
            "Resolved in the window",
            list(h.resolved),
            lambda i: _resolved(d, h.resolved[i], now, zone),
            now,
            zone,
        ),
        *_section(d, "Silences ending in the next 8 hours", silences),
    ]
    if later:
        verb = "ends" if later == 1 else "end"
        # After the blank line, not against the list: there it would join its last item.
        lines.extend([f"{_plural(later, 'other silence')} in force {verb} later.", ""])
    lines += _section(d, "Schedules missed", [_schedule(d, m, now, zone) for m in h.schedules])
    return "\n".join(lines).rstrip("\n") + "\n"


def handover_markdown(h: Handover, zone: tzinfo | None = None) -> str:
    """The handover as Markdown."""
    return handover_text(h, zone, MARKDOWN)


# Plain text: one incident --------------------------------------------------------------------


def story_text(story: Story, now: float, zone: tzinfo | None = None) -> list[str]:
    """One incident's story, one line per thing that happened, oldest first."""
    clear = story.resolution
    state = "open" if clear is None else f"ended {how_it_ended(story)}"
    lines = [
        f"{printable(story.task_id)}: {printable(story.health)}, opened "
        f"{when(story.opened_at, now, zone, seconds=True)}; {printable(state)}"
    ]
    for entry in story.entries:
        until = "" if entry.until is None else f" (until {when(entry.until, now, zone)})"
        lines.append(
            f"  {when(entry.at, now, zone, seconds=True)}  {entry.step}  by "
            f"{printable(entry.by)}: {printable(entry.text)}{until}"
        )
    return lines


# JSON -------------------------------------------------------------------------------------


def entry_json(entry: Entry) -> dict[str, Any]:
    found: dict[str, Any] = {
        "at": format_timestamp(entry.at),
        "step": str(entry.step),
        "by": entry.by,
        "text": entry.text,
    }
    if entry.action is not None:
        found.update(action=entry.action, done=entry.done)
    if entry.until is not None:
        found["until"] = format_timestamp(entry.until)
    return found


def story_json(story: Story) -> dict[str, Any]:
    closed = story.closed_at
    hand = story.resolved_by()
    return {
        "task_id": story.task_id,
        "health": story.health,
        "host": story.host,
        "opened_at": format_timestamp(story.opened_at),
        "closed_at": None if closed is None else format_timestamp(closed),
        "ended_by": None if closed is None else how_it_ended(story),
        "resolved_by": None if closed is None or hand is None else hand.by,
        "entries": [entry_json(e) for e in story.entries],
    }


def _open_json(item: OpenIncident) -> dict[str, Any]:
    ack = item.ack
    acked = None
    if ack is not None:
        acked = {"by": ack.by, "until": format_timestamp(ack.until), "reason": ack.reason}
    return {**story_json(item.story), "ack": acked}


def handover_json(h: Handover) -> dict[str, Any]:
    return {
        "now": format_timestamp(h.now),
        "since": format_timestamp(h.since),
        "open_unacked": [_open_json(o) for o in h.unacked],
        "open_acked": [_open_json(o) for o in h.acked],
        "resolved": [story_json(s) for s in h.resolved],
        "silences_ending": [
            {
                "id": s.silence_id,
                "matcher": str(s.matcher),
                "pattern": s.pattern,
                "by": s.by,
                "reason": s.reason,
                "until": format_timestamp(s.until),
            }
            for s in h.silences
        ],
        "silences_later": h.later_silences,
        "schedules_missed": [
            {
                "name": m.name,
                "paged_at": format_timestamp(m.paged_at),
                "line": m.line,
                "cleared_at": None if m.cleared_at is None else format_timestamp(m.cleared_at),
                "cleared": m.cleared,
            }
            for m in h.schedules
        ],
    }
