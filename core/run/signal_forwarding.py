"""The signals ``zombietop run`` passes on: SIGTERM, SIGINT and SIGHUP go to the command's
process group, and a command that ignores them for the kill grace gets SIGKILL.

The handlers are in place before the command starts: a signal that comes while it starts is
forwarded once its pid is known, never left to kill the wrapper and orphan the command.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

from zombietop.run.child import Child

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def forwarded_signals() -> tuple[signal.Signals, ...]:
    """Return the signals of ``FORWARDED`` that this process was not started ignoring.

    A signal ignored on entry stays ignored, by the wrapper and (inherited) by its command, as
    a shell does it: ``nohup zombietop run ...`` lives through a hangup, and ``zombietop run ...
    &`` in a script ignores SIGINT like everything else started there. Forwarding such a signal
    anyway would reach a command that cannot trap it (the shell drops a trap on a signal ignored
    on entry), and the grace would end in a SIGKILL.
    """
    return tuple(sig for sig in FORWARDED if signal.getsignal(sig) != signal.SIG_IGN)


class SignalForwarding:
    """Forward the wrapper's signals to one command, and remember which came."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self.forwarded: set[int] = set()
        """The signals forwarded so far."""
        self._handled: tuple[signal.Signals, ...] = ()
        self._loop: asyncio.AbstractEventLoop | None = None

    def install(self, child: Child, grace: float) -> None:
        """Forward each signal that comes from now on to ``child``, started or not."""
        self._loop = asyncio.get_running_loop()
        self._handled = forwarded_signals()
        for sig in self._handled:
            self._loop.add_signal_handler(sig, self._forward, child, sig, grace)

    def remove(self) -> None:
        """Give the signals back to the loop's defaults."""
        if self._loop is not None:
            for sig in self._handled:
                self._loop.remove_signal_handler(sig)

    def pass_early(self, child: Child) -> None:
        """Send the command the signals that came while it started."""
        for early in sorted(self.forwarded):
            child.signal_group(early)

    def stopped_by(self) -> str | None:
        """Who stopped the command, when a forwarded signal did; else None."""
        if self.forwarded:
            return f"{self.names()} (forwarded by zombietop run)"
        return None

    def names(self) -> str:
        return ", ".join(signal.Signals(s).name for s in sorted(self.forwarded))

    def _forward(self, child: Child, sig: int, grace: float) -> None:
        first = not self.forwarded
        self.forwarded.add(sig)
        child.signal_group(sig)  # nothing yet if it has not started: it gets it as it does
        if first:
            # Whoever stops us will not wait forever: neither do we, or the command outlives us.
            asyncio.get_running_loop().call_later(grace, self._kill_group, child)

    def _kill_group(self, child: Child) -> None:
        if child.pid is not None and child.returncode is None:
            self._say(f"the command ignored {self.names()} for the grace; sending SIGKILL")
            child.signal_group(signal.SIGKILL)
