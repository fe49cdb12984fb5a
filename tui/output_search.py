"""Search and copy in a task's last output, as pure functions of its lines.

The lines are the job's own text, untrusted: both work on the lines as the pane shows them
(``printable``), so a match is found where the reader sees it, and a copy carries no control
sequence to the terminal that pastes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zombietop.printable import printable

COPY_LIMIT = 74_994
"""The most bytes one OSC 52 copy carries: hterm's limit (100,000 bytes once in base64),
the smallest of the terminals that take it; xterm, kitty and iTerm2 take more."""


@dataclass(frozen=True, slots=True)
class Match:
    """Where the query is found: a line, and the characters ``[start, end)`` of it as shown."""

    line: int
    start: int
    end: int


def shown_lines(lines: Sequence[str]) -> tuple[str, ...]:
    """The lines as the pane shows them: every control and bidi character escaped."""
    return tuple(printable(line) for line in lines)


def find_matches(lines: Sequence[str], query: str) -> tuple[Match, ...]:
    """Every place ``query`` is in ``lines`` (as shown), in reading order. The case matters
    only when the query has a capital letter, as vim's ``smartcase`` and less's ``-i``."""
    if not query:
        return ()
    fold = query == query.lower()
    needle = query.lower() if fold else query
    found: list[Match] = []
    for number, line in enumerate(lines):
        haystack = line.lower() if fold else line
        start = haystack.find(needle)
        while start >= 0:
            found.append(Match(number, start, start + len(needle)))
            start = haystack.find(needle, start + len(needle))
    return tuple(found)


def nearest_match(matches: Sequence[Match], line: int) -> int | None:
    """The index of the first match at or after ``line`` (wrapping to the first), or None."""
    if not matches:
        return None
    return next((i for i, match in enumerate(matches) if match.line >= line), 0)


def step(index: int | None, count: int, forward: bool) -> int | None:
    """The next (or previous) match after ``index``, wrapping around the ends."""
    if count == 0:
        return None
    if index is None:
        return 0 if forward else count - 1
    return (index + (1 if forward else -1)) % count


@dataclass(frozen=True, slots=True, kw_only=True)
class Copy:
    """What ``c`` copies: the text, and how many of the lines asked for it holds."""

    text: str
    lines: int
    asked: int


def copy_of(lines: Sequence[str], count: int, limit: int = COPY_LIMIT) -> Copy:
    """The last ``count`` lines as shown (escaped: no control sequence is copied), one per
    line; when they are longer than ``limit`` bytes, the last of them that fit."""
    shown = list(shown_lines(lines[-count:] if count > 0 else ()))
    asked = len(shown)
    size = sum(len(line.encode()) + 1 for line in shown)
    while shown and size - 1 > limit:
        size -= len(shown.pop(0).encode()) + 1
    return Copy(text="\n".join(shown), lines=len(shown), asked=asked)


def copy_refusal(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the terminal is likely to drop an OSC 52 copy, from the environment; None when
    nothing says so (a terminal never answers one, so it cannot be asked)."""
    env = os.environ if environ is None else environ
    if env.get("TERM_PROGRAM") == "Apple_Terminal":
        return "macOS Terminal does not take OSC 52"
    if env.get("STY"):
        return "GNU screen does not pass OSC 52 on"
    if env.get("TMUX"):
        return "tmux passes OSC 52 on only with `set -g set-clipboard on`"
    return None
