"""Durations at the edges: ``"90s"``, ``"15m"``, ``"1h30m"`` in, plain float seconds inside."""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
MAX_DURATION = 36500 * 86400.0
"""A hundred years: every duration is added to a date somewhere, and dates end at 9999."""


def parse_duration(text: str) -> float:
    """Return the seconds in ``text``, e.g. ``"1h30m"`` -> 5400.0.

    Raise ``ValueError`` with the accepted forms when the text is not a duration.
    """
    cleaned = text.strip().lower().replace(" ", "")
    pos = 0
    total = 0.0
    for match in _PART.finditer(cleaned):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not cleaned or pos != len(cleaned):
        raise ValueError(
            f"{text!r} is not a duration: use a number and a unit (ms, s, m, h, d), "
            'e.g. "90s", "15m", "1h30m"'
        )
    if not total <= MAX_DURATION:
        raise ValueError(f"{text!r} is longer than zombietop can add to a date; use at most 36500d")
    return total


def format_duration(seconds: float) -> str:
    """Format seconds for config files and flags: the exact, shortest unit form (``"15m"``)."""
    if seconds < 0:
        raise ValueError(f"negative duration {seconds}")
    if seconds != int(seconds):
        millis = round(seconds * 1000)
        return f"{millis}ms"
    whole = int(seconds)
    if whole == 0:
        return "0s"
    # The largest unit that divides exactly reads best ("90s", "15m", "6h").
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole % size == 0:
            return f"{whole // size}{unit}"
    raise AssertionError("unreachable: every whole number divides by 1")


def format_age(seconds: float) -> str:
    """Format an age or countdown for people: two units at most (``4h12m``, ``3m05s``, ``41s``)."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{int(seconds)}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"
