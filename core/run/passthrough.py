"""The command's stdout and stderr under ``zombietop run``: copied to ours unchanged, tail kept.

One thread per pipe, so that a slow reader of our stdout (a pager, a full pipe) holds up only
the copy, never the lease renewals on the event loop. A thread that cannot start (the user's
process limit is reached) leaves its pipe to the event loop, which copies it instead.

When our side of a stream fails (the reader of ``zombietop run ... | head -1`` exits, a full
disk behind ``> dump.sql``), the command's pipe is closed too: its next write fails as if it
wrote to the broken stream itself (EPIPE; SIGPIPE ends most commands), instead of running on
with its output thrown away.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import threading
from collections.abc import Callable

from zombietop.output import OutputLog
from zombietop.run.stray_beats import StrayBeats

CHUNK = 1 << 16
"""Bytes read from a pipe at a time."""


class Passthrough:
    """Copy the command's two output pipes to our stdout and stderr, and keep their tail."""

    def __init__(self, log: OutputLog, say: Callable[[str], None]) -> None:
        self.log = log
        self.stray = StrayBeats()
        self.say = say
        out_read, self.stdout = os.pipe()
        err_read, self.stderr = os.pipe()
        self._pumps = (
            _Pump(self, out_read, 1, "stdout"),
            _Pump(self, err_read, 2, "stderr"),
        )

    def start(self) -> None:
        """Start copying once the command holds the write ends (ours are closed here)."""
        os.close(self.stdout)
        os.close(self.stderr)
        loop = asyncio.get_running_loop()
        for pump in self._pumps:
            pump.start(loop)

    async def finish(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the pipes to drain, then close the log."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(pump.done.wait() for pump in self._pumps)), timeout
            )
        for pump in self._pumps:
            pump.stop_on_loop()
        self.log.close()

    def close(self) -> None:
        """Undo a pass-through whose command never started."""
        for fd in (self.stdout, self.stderr, *(pump.source for pump in self._pumps)):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.log.close()


class _Pump:
    """One pipe of the command, copied to one of our streams."""

    def __init__(self, owner: Passthrough, source: int, target: int, name: str) -> None:
        self.owner = owner
        self.source = source
        self.target = target
        self.name = name
        self.done = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_loop = False
        self._at_line_start = True

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        thread = threading.Thread(target=self._run, daemon=True, name=self.name)
        try:
            thread.start()
        except RuntimeError as exc:  # "can't start new thread"
            self.owner.say(
                f"could not start a thread to copy the command's {self.name} ({exc}); "
                "copying it on the main thread, where a slow reader of it delays the "
                "lease renewals"
            )
            self._on_loop = True
            loop.add_reader(self.source, self._readable)

    def _run(self) -> None:
        try:
            while (data := os.read(self.source, CHUNK)) and self._copy(data):
                pass
        finally:
            os.close(self.source)
            assert self._loop is not None
            # The wrapper may have stopped waiting (a background child kept the pipe open).
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self.done.set)

    def _readable(self) -> None:
        data = os.read(self.source, CHUNK)
        if not (data and self._copy(data)):
            self.stop_on_loop()

    def stop_on_loop(self) -> None:
        """Stop a copy the event loop does (nothing for a thread's)."""
        if self._on_loop:
            self._on_loop = False
            assert self._loop is not None
            self._loop.remove_reader(self.source)
            os.close(self.source)
            self.done.set()

    def _copy(self, data: bytes) -> bool:
        """Pass one chunk on and keep it; False once our stream is gone."""
        passed = self._pass_on(data)
        self.owner.log.write(data)
        stray = self.owner.stray
        if not stray.done:
            stray.feed(data, at_line_start=self._at_line_start)
            self._at_line_start = data.endswith(b"\n")
        return passed

    def _pass_on(self, data: bytes) -> bool:
        try:
            _write_all(self.target, data)
        except BrokenPipeError:
            return False  # its reader left (`| head -1`): the command learns it as it writes
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.owner.say(
                    f"could not write the command's {self.name} ({exc.strerror or exc}); "
                    "closing it, so that the command's next write there fails too"
                )
            return False
        return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            # Our stream was made non-blocking by whoever shares it: wait, never drop.
            select.select([], [fd], [])
