"""How each health looks: a glyph, the word, and a style, so colour is never the only signal."""

from __future__ import annotations

from rich.text import Text

from zombietop.model import Health

GLYPHS: dict[Health, str] = {
    Health.DEAD: "✖",
    Health.RECLAIMABLE: "◌",
    Health.STALLED: "■",
    Health.SPINNING: "↻",
    Health.QUARANTINED: "⊘",
    Health.INTERRUPTED: "‖",
    Health.STARTING: "▹",
    Health.QUEUED: "…",
    Health.HEALTHY: "●",
    Health.SUCCEEDED: "✓",
    Health.FAILED: "✗",
    Health.DISCARDED: "-",
}

STYLES: dict[Health, str] = {
    Health.DEAD: "bold red",
    Health.RECLAIMABLE: "bold red",
    Health.STALLED: "bold red",
    Health.SPINNING: "yellow",
    Health.QUARANTINED: "magenta",
    Health.INTERRUPTED: "yellow",
    Health.STARTING: "cyan",
    Health.QUEUED: "dim",
    Health.HEALTHY: "green",
    Health.SUCCEEDED: "green",
    Health.FAILED: "red",
    Health.DISCARDED: "dim",
}

ACTIVE_HEALTHS = tuple(
    h for h in Health if h not in (Health.SUCCEEDED, Health.FAILED, Health.DISCARDED)
)
ATTENTION_HEALTHS = frozenset(
    {
        Health.DEAD,
        Health.RECLAIMABLE,
        Health.STALLED,
        Health.SPINNING,
        Health.QUARANTINED,
        Health.INTERRUPTED,
    }
)
"""Healths a wall screen lists as offenders."""


def health_label(health: Health) -> Text:
    """The glyph and the word, styled: ``✖ dead``."""
    return Text(f"{GLYPHS[health]} {health}", style=STYLES[health])


def health_count(health: Health, count: int) -> Text:
    """A count in the header: ``✖ dead 2``; zero counts are dimmed, never hidden by colour alone."""
    style = STYLES[health] if count else "dim"
    return Text(f"{GLYPHS[health]} {health} {count}", style=style)
