"""The one place zombietop touches Textual's private names.

Each shim here exists because the at-rest benchmark (bench/dashboard_rest.py, figures in
docs/benchmarks.md) misses its target without it. Each checks the installed Textual version
(``TESTED``, the minor version pyproject.toml pins) and the shape of what it replaces, and leaves
Textual's public behaviour in place when either check fails: the dashboard then works as before,
only costing more. ``ZOMBIETOP_TEXTUAL_SHIMS=off`` in the environment turns them all off, and
a list of their names (``cropped_updates,quiet_driver``) those alone: to measure without them,
or to rule them out when something looks wrong.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import selectors
import time
from codecs import getincrementaldecoder
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import textual
from rich.cells import cell_len, get_character_cell_size
from rich.control import Control
from textual.driver import Driver

if TYPE_CHECKING:
    from rich.console import Console
    from textual._compositor import ChopsUpdate
    from textual.strip import Strip

TESTED = (8, 2)
"""The Textual minor version these shims were written against. pyproject.toml allows any
Textual from it to the next major version (``textual>=8.2,<9``): on another minor the shims
step aside."""


def enabled(shim: str) -> bool:
    """True when ``shim`` may be installed: the tested Textual, and not switched off."""
    off = {name.strip() for name in os.environ.get("ZOMBIETOP_TEXTUAL_SHIMS", "").split(",")}
    if "off" in off or shim in off:
        return False
    return textual_version() == TESTED


def textual_version() -> tuple[int, int] | None:
    """The installed Textual's major and minor version, or None when it cannot be told."""
    # Read from the name of Textual's installed metadata folder, ``textual-8.2.8.dist-info``
    # (the name the packaging spec gives it), beside the package. importlib.metadata says the
    # same, but importing it costs the dashboard's start about a tenth of Textual's own import.
    site_packages = Path(textual.__file__).parent.parent
    for folder in site_packages.glob("textual-*.dist-info"):
        found = re.fullmatch(r"textual-(\d+)\.(\d+)[^-]*\.dist-info", folder.name)
        if found is not None:
            return int(found[1]), int(found[2])
    return None


# Cropped partial updates -------------------------------------------------------------------
#
# Textual writes a partial update chop by chop, a chop being the part of a line one widget
# covers. A chop that overlaps a dirty span is cropped at the span's end but not at its start:
# it is written from the widget's left edge (``ChopsUpdate.render_segments``, "TODO: crop to x
# extents"). A table cell repainted at column 50 so rewrites 50 columns of its line.
# Upstream: Textualize/textual#5625; this goes once render_segments crops both ends.

RenderSegments = Callable[["ChopsUpdate", "Console"], str]
_stock_render_segments: RenderSegments | None = None


def render_segments(self: ChopsUpdate, console: Console) -> str:
    """Textual 8.2's ``ChopsUpdate.render_segments``, writing each chop only inside the span."""
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

    ``Strip.crop`` turns a wide character it cuts into spaces; written at ``start``, the right
    half of one would also erase its left half, outside the span, on the terminal. A segment
    with zero-width joiners or variation selectors is kept whole instead.
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


def install_cropped_updates() -> bool:
    """Replace ``ChopsUpdate.render_segments`` with ``render_segments``; say whether it is.

    Nothing changes when the shims are off, Textual is not the tested version, its
    ``ChopsUpdate`` is no longer built from the three attributes the copy reads, or someone
    else replaced the method already. It patches Textual for the whole process, so the app
    never calls it: ``tui/launch.py`` does, before it builds the app.
    """
    global _stock_render_segments
    if not enabled("cropped_updates"):
        return False
    try:
        from textual._compositor import ChopsUpdate
    except ImportError:
        return False
    current = ChopsUpdate.__dict__.get("render_segments")
    if current is render_segments:
        return True
    if getattr(current, "__qualname__", None) != "ChopsUpdate.render_segments":
        return False
    try:
        parameters = list(inspect.signature(ChopsUpdate.__init__).parameters)
    except (TypeError, ValueError):
        return False
    if parameters[1:] != ["chops", "spans", "chop_ends"]:
        return False
    _stock_render_segments = current
    ChopsUpdate.render_segments = render_segments  # type: ignore[method-assign]
    return True


def stock_render_segments() -> RenderSegments:
    """Textual's own ``ChopsUpdate.render_segments``, patched or not (for comparisons)."""
    if _stock_render_segments is not None:
        return _stock_render_segments
    from textual._compositor import ChopsUpdate

    method: RenderSegments = ChopsUpdate.render_segments
    return method


# A quiet input thread ---------------------------------------------------------------------
#
# Textual's Linux driver waits for input with a 0.1 s timeout, to send a lone Escape once no
# sequence follows it and to notice the app leaving: ten wake-ups a second for as long as the
# dashboard runs. Here the thread waits that way only for a second after the last input; then
# it sleeps until a key arrives or the app tells it to stop, through a pipe it watches beside
# the terminal. Upstream: no issue filed yet; this goes once LinuxDriver.run_input_thread
# blocks while idle.

TICK = 0.1
"""Textual's own wait: how often a half-read key sequence is looked at again."""

AWAKE_AFTER_INPUT = 1.0
"""Seconds to keep waiting Textual's way after the last input (an Escape times out in 0.1)."""


def quiet_driver(driver: type[Driver]) -> type[Driver]:
    """``QuietLinuxDriver`` in place of Textual's own Linux driver; any other driver as it is
    (a ``TEXTUAL_DRIVER`` of the user's, another platform, the shims off, another Textual).

    The web driver (``serve --wall``'s viewers, ``$TEXTUAL_DRIVER``) is such another: it reads
    textual-serve's packets from a pipe, not a terminal, and waits for them without a timeout
    already. Cropped updates stay on there: they change only which cells the output rewrites,
    which xterm.js in the browser reads as a terminal does, and send fewer bytes."""
    if driver.__module__ != "textual.drivers.linux_driver" or not enabled("quiet_driver"):
        return driver
    quiet = _quiet_linux_driver()
    return driver if quiet is None else quiet


def _quiet_linux_driver() -> type[Driver] | None:
    """The quiet driver class, or None when Textual's driver is not shaped as it expects."""
    try:
        from textual._parser import ParseError
        from textual._xterm_parser import XTermParser
        from textual.drivers.linux_driver import LinuxDriver
    except ImportError:
        return None
    own = LinuxDriver.__dict__
    # The attributes the thread reads are set in the constructors: look for their names there.
    set_up = {*LinuxDriver.__init__.__code__.co_names, *Driver.__init__.__code__.co_names}
    if (
        not all(name in own for name in ("run_input_thread", "disable_input", "close"))
        or not {"fileno", "exit_event", "_debug"} <= set_up
        or list(inspect.signature(own["run_input_thread"]).parameters) != ["self"]
        or list(inspect.signature(XTermParser).parameters) != ["debug"]
    ):
        return None

    class QuietLinuxDriver(LinuxDriver):
        """``LinuxDriver`` whose input thread sleeps between keys."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._stop_read, self._stop_write = os.pipe()
            os.set_blocking(self._stop_read, False)
            os.set_blocking(self._stop_write, False)

        def disable_input(self) -> None:
            # Wake the input thread first, so that it waits Textual's way again and sees the
            # exit event that the stock method sets and then joins it on.
            with contextlib.suppress(OSError):
                os.write(self._stop_write, b"\0")
            super().disable_input()
            with contextlib.suppress(OSError):  # BlockingIOError once it is empty
                while os.read(self._stop_read, 64):  # input may be enabled again (a suspend)
                    pass

        def close(self) -> None:
            super().close()
            for fd in (self._stop_read, self._stop_write):
                with contextlib.suppress(OSError):
                    os.close(fd)

        def run_input_thread(self) -> None:
            """Read keys and mouse events and hand them to the app, as Textual's driver does."""
            selector = selectors.SelectSelector()
            selector.register(self.fileno, selectors.EVENT_READ)
            selector.register(self._stop_read, selectors.EVENT_READ)
            parser = XTermParser(self._debug)
            decode = getincrementaldecoder("utf-8")().decode
            told_to_stop = False
            last_input = time.monotonic()
            try:
                while not self.exit_event.is_set():
                    awake = told_to_stop or time.monotonic() - last_input < AWAKE_AFTER_INPUT
                    ready = selector.select(TICK if awake else None)
                    for key, _ in ready:
                        if key.fd == self._stop_read:
                            told_to_stop = True
                            continue
                        data = decode(os.read(self.fileno, 4096))
                        if not data:
                            continue  # half a character, or the end of a piped input
                        last_input = time.monotonic()
                        for event in parser.feed(data):
                            self.process_message(event)
                    for event in parser.tick():
                        self.process_message(event)
            finally:
                selector.close()
                with contextlib.suppress(EOFError, ParseError):
                    for _ in parser.feed(""):
                        pass

    return QuietLinuxDriver
