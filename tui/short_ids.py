"""A long task id in a narrow column, with the part that tells it from its neighbours kept.

Ids grow at the end (``export-2031``, ``DAG/TASK/RUN``), so the end is what tells one run of a
task from the next. Engines write times into their run ids (Airflow's
``scheduled__2026-11-29T04:00:00+00:00``), and there the end is ``:00:00+00:00`` for every run:
the date in the middle is what differs. So a long id first loses what every such time repeats
(zero seconds, a UTC offset), and only then is it cut in the middle.
"""

from __future__ import annotations

import re

from rich.cells import cell_len

CUT = "…"
"""Where ``short_id`` took characters out of a task id."""

_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d)(:\d\d(?:\.\d+)?)?(\+00:00|Z)?")
"""An ISO 8601 time: its minutes, then its seconds (with any fraction), then a UTC offset."""

_ZERO_SECONDS = re.compile(r":00(?:\.0+)?")


def short_id(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: as it is when it fits; else with the zero seconds
    and UTC offsets of the times in it dropped, then cut in the middle and never at its end."""
    if cell_len(text) <= width:
        return text
    return middle_cut(_TIME.sub(_squeezed, text), width)


def _squeezed(time: re.Match[str]) -> str:
    minutes, seconds = time.group(1), time.group(2) or ""
    return minutes if _ZERO_SECONDS.fullmatch(seconds) or not seconds else minutes + seconds


def middle_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, cut in the middle and never at its end. The head
    keeps a third of the room. A ``DAG/TASK/RUN`` id keeps its ``DAG/TASK/`` whole when that
    fits in two thirds of the room (the tasks of two DAGs may share a name), and the end of
    its run in the rest; else it starts at the TASK and keeps half."""
    if cell_len(text) <= width:
        return text
    room = width - cell_len(CUT)
    head_from, head_room = text, room // 3
    dag, _, rest = text.partition("/")
    if rest.count("/") >= 1 and dag:
        named = f"{dag}/{rest.partition('/')[0]}/"
        if cell_len(named) <= room * 2 // 3:
            return named + CUT + _cells_from(text, room - cell_len(named), end=True)
        head_from, head_room = rest, room // 2
        if cell_len(rest) <= room:
            return CUT + rest
    head = _cells_from(head_from, head_room)
    tail = _cells_from(
        text[len(text) - len(head_from) + len(head) :], room - cell_len(head), end=True
    )
    return head + CUT + tail


def _cells_from(text: str, room: int, *, end: bool = False) -> str:
    """The longest start (or ``end``) of ``text`` that fits in ``room`` cells."""
    kept: list[str] = []
    used = 0
    for char in reversed(text) if end else text:
        if used + cell_len(char) > room:
            break
        kept.append(char)
        used += cell_len(char)
    return "".join(reversed(kept) if end else kept)
