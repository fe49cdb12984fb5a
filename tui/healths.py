"""How each health looks: a glyph, the word, and a style, so colour is never the only signal.

Colour says how severe: red for the healths that page, yellow for those that need a look, green
for what went well, dim for what waits. Each glyph means one thing only (the on-call marks and
the flags beside a task id have glyphs of their own, in ``zombietop.tui.cells``).
"""

from __future__ import annotations

from rich.text import Text

from zombietop.health import Health
from zombietop.judge.monitor import Snapshot
from zombietop.watch.failed_runs import failure_open

GLYPHS: dict[Health, str] = {
    Health.DEAD: "✖",
    Health.ORPHANED: "⊗",
    Health.RECLAIMABLE: "◌",
    Health.STALLED: "■",
    Health.SPINNING: "↻",
    Health.QUARANTINED: "⊠",
    Health.INTERRUPTED: "‖",
    Health.STARTING: "▹",
    Health.QUEUED: "…",
    Health.HEALTHY: "●",
    Health.SUCCEEDED: "✓",
    Health.FAILED: "✗",
    Health.DISCARDED: "-",
}

PAGE_STYLE, LOOK_STYLE = "bold red", "yellow"
STYLES: dict[Health, str] = {
    Health.DEAD: PAGE_STYLE,
    Health.ORPHANED: PAGE_STYLE,
    Health.RECLAIMABLE: PAGE_STYLE,
    Health.STALLED: PAGE_STYLE,
    Health.SPINNING: LOOK_STYLE,
    Health.QUARANTINED: LOOK_STYLE,
    Health.INTERRUPTED: LOOK_STYLE,
    Health.STARTING: "cyan",
    Health.QUEUED: "dim",
    Health.HEALTHY: "green",
    Health.SUCCEEDED: "green",
    Health.FAILED: LOOK_STYLE,
    Health.DISCARDED: "dim",
}

ALL_CLEAR = "✓ all clear: nothing needs a human"


def health_label(health: Health) -> Text:
    """The glyph and the word, styled: ``✖ dead``."""
    return Text(f"{GLYPHS[health]} {health}", style=STYLES[health])


def health_count(health: Health, count: int) -> Text:
    """A count in the header: ``✖ dead 2``; zero counts are dimmed, never hidden by colour alone."""
    style = STYLES[health] if count else "dim"
    return Text(f"{GLYPHS[health]} {health} {count:,}", style=style)


def count_of(snapshot: Snapshot, health: Health) -> int:
    """The number a count line shows for ``health``. ``quarantined`` counts every task that is
    held, whatever its health reads (a stalled task the watchdog quarantined reads ``stalled``)."""
    if health is Health.QUARANTINED:
        return snapshot.quarantined
    return snapshot.counts.get(health, 0)


def all_clear(snapshot: Snapshot) -> bool:
    """True when the snapshot shows nothing for a human to do: no task in an attention health,
    none quarantined, no missed schedule, no failed run still open as an incident (and the
    snapshot is of a whole poll, with no task left unread)."""
    return (
        snapshot.taken_at is not None
        and snapshot.glance_of is None  # a glance has not seen every task yet
        and not snapshot.left_unread
        and not snapshot.quarantined
        and not snapshot.missed
        and not any(n for health, n in snapshot.counts.items() if health.needs_attention)
        and not any(failure_open(view, snapshot.jobs) for view in snapshot.tasks)
    )
