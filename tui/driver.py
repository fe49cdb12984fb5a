"""Textual's Linux driver, with an input thread that sleeps while nobody types.

Textual 8.2 waits for input with a 0.1 s timeout: to send a lone Escape once no sequence
follows it (``ESCDELAY``) and to notice the app leaving. That is ten wake-ups a second for as
long as the dashboard runs, 0.12% of a core at rest, an eighth of all it spends. Here the
thread waits that way only for a second after the last input, time enough for any Escape
timeout; then it sleeps until a key arrives or the app tells it to stop, through a pipe it
watches beside the terminal. Told so, it goes back to Textual's way of waiting, so the app
leaves as quickly as it does with Textual's own driver.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import time
from codecs import getincrementaldecoder
from typing import Any

from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

TICK = 0.1
"""Textual's own wait: how often a half-read key sequence is looked at again."""

AWAKE_AFTER_INPUT = 1.0
"""Seconds to keep waiting Textual's way after the last input (an Escape times out in 0.1)."""


class QuietLinuxDriver(LinuxDriver):
    """``LinuxDriver`` whose input thread sleeps between keys instead of waking ten times a
    second."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stop_read, self._stop_write = os.pipe()
        os.set_blocking(self._stop_read, False)
        os.set_blocking(self._stop_write, False)

    def disable_input(self) -> None:
        # Wake the input thread first, so that it waits Textual's way again and sees the exit
        # event that the stock method sets and then joins it on.
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
