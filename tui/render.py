"""Make Textual's partial screen updates write only the dirty span of each line.

Textual 8.2 writes a partial update (``ChopsUpdate.render_segments``) chop by chop, a chop being
the part of a line that one widget covers. A chop that overlaps a dirty span is cropped at the
span's end but not at its start: it is written from the widget's left edge. A table that repaints
one cell at column 60 so rewrites 60 columns of the line (Textualize/textual#5625; the method's
``# TODO: crop to x extents``); on the dashboard at rest that was six bytes in seven.

``install()`` replaces that one private method with a copy that crops both ends. It changes
Textual only when the installed version is in the range this was written against (the one
``pyproject.toml`` pins) and the class still looks as it did; otherwise Textual is left alone and
the dashboard works as before, only writing more.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING

from rich.cells import cell_len, get_character_cell_size
from rich.control import Control

if TYPE_CHECKING:
    from rich.console import Console
    from textual._compositor import ChopsUpdate
    from textual.strip import Strip

TEXTUAL_VERSIONS = ((8, 2), (9, 0))
"""Patch Textual versions in ``[first, second)``: ``textual>=8.2,<9`` in pyproject.toml."""

RenderSegments = Callable[["ChopsUpdate", "Console"], str]
_stock: RenderSegments | None = None
"""Textual's own ``ChopsUpdate.render_segments``, kept once the patch is installed."""


def render_segments(self: ChopsUpdate, console: Console) -> str:
    """Render the update to terminal sequences, writing each chop only inside the dirty span.

    The same as Textual 8.2's method but for the crop of a chop that crosses a span edge.
    """
    sequences: list[str] = []
    append = sequences.append
    move_to = Control.move_to
    chops = self.chops
    chop_ends = self.chop_ends
    last_y = self.spans[-1][0]

    for y, x1, x2 in self.spans:
        line = chops[y]
        ends = chop_ends[y]
        for end, (x, strip) in zip(ends, line.items(), strict=False):
            if strip is None or x >= x2 or end <= x1:
                continue
            if x >= x1 and end <= x2:
                append(move_to(x, y).segment.text)
                append(strip.render(console))
                continue
            start, stop = whole_characters(strip, max(x1 - x, 0), min(end, x2) - x)
            append(move_to(x + start, y).segment.text)
            append(strip.crop(start, stop).render(console))

        if y != last_y:
            append("\n")

    return "".join(sequences)


def whole_characters(strip: Strip, start: int, stop: int) -> tuple[int, int]:
    """Widen the cells ``[start, stop)`` of ``strip`` so neither end cuts a character in half.

    ``Strip.crop`` counts cells and turns a wide character it cuts into spaces; written at
    ``start``, the right half of one would also erase its left half, outside the span, on the
    terminal. A segment with zero-width joiners or variation selectors (whose width is not the
    sum of its characters') is kept whole instead.
    """
    pos = 0
    for text, _style, _control in strip:
        after = pos + cell_len(text)
        cuts_start = pos < start < after
        cuts_stop = pos < stop < after
        if (cuts_start or cuts_stop) and not text.isascii():
            if "\u200d" in text or "\ufe0f" in text:
                start = pos if cuts_start else start
                stop = after if cuts_stop else stop
            else:
                cell = pos
                for character in text:
                    character_end = cell + get_character_cell_size(character)
                    if cuts_start and cell < start < character_end:
                        start = cell
                    if cuts_stop and cell < stop < character_end:
                        stop = character_end
                    cell = character_end
        if after >= stop:
            break
        pos = after
    return start, stop


def _textual_version() -> tuple[int, int] | None:
    try:
        found = re.match(r"(\d+)\.(\d+)", metadata.version("textual"))
    except metadata.PackageNotFoundError:
        return None
    return None if found is None else (int(found[1]), int(found[2]))


def install() -> bool:
    """Patch ``ChopsUpdate.render_segments`` unless done already; return whether it is patched.

    Do nothing (and return False) when Textual is outside ``TEXTUAL_VERSIONS``, or its
    ``ChopsUpdate`` is no longer built from the attributes the copy reads, or someone else has
    replaced the method already.
    """
    global _stock
    try:
        from textual._compositor import ChopsUpdate
    except ImportError:
        return False
    current = ChopsUpdate.__dict__.get("render_segments")
    if current is render_segments:
        return True
    version = _textual_version()
    if version is None or not TEXTUAL_VERSIONS[0] <= version < TEXTUAL_VERSIONS[1]:
        return False
    if current is None or not _looks_as_expected(ChopsUpdate, current):
        return False
    _stock = current
    ChopsUpdate.render_segments = render_segments  # type: ignore[method-assign]
    return True


def _looks_as_expected(cls: type[ChopsUpdate], current: object) -> bool:
    """Check that the method is Textual's own and the three attributes it reads are still there."""
    if getattr(current, "__qualname__", None) != "ChopsUpdate.render_segments":
        return False
    try:
        parameters = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return False
    return list(parameters)[1:] == ["chops", "spans", "chop_ends"]


def stock() -> RenderSegments:
    """Return Textual's own ``ChopsUpdate.render_segments``, patched or not (for comparisons)."""
    if _stock is not None:
        return _stock
    from textual._compositor import ChopsUpdate

    method: RenderSegments = ChopsUpdate.render_segments
    return method
