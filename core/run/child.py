"""The command under ``zombietop run``: started, signalled and reaped without a thread.

A thread can fail to start once the command runs: a fork bomb under ``ulimit -u`` takes every
process the user may have, and each thread counts as one. asyncio's own subprocesses start a
thread per child on Python 3.11 (its ``ThreadedChildWatcher``), so the command is started with
``subprocess.Popen`` and reaped on SIGCHLD through the event loop's signal handling instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence


def exit_status(returncode: int) -> int:
    """The shell's convention: a death by signal N exits 128 + N."""
    return returncode if returncode >= 0 else 128 - returncode


class Child:
    """One command, the leader of its own process group, reaped when it exits.

    Made before the command starts (the SIGCHLD handler must be in place first, or an exit
    could go unseen); ``close`` gives the handler back.
    """

    def __init__(self) -> None:
        self._popen: subprocess.Popen[bytes] | None = None
        self._exited = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop.add_signal_handler(signal.SIGCHLD, self._reap)

    def start(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        stdout: int | None,
        stderr: int | None,
    ) -> None:
        """Start ``argv``; raise ``OSError`` when it cannot start."""
        self._popen = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            process_group=0,
            stdout=stdout,
            stderr=stderr,
        )
        self._reap()  # it may have exited before its pid was known here

    @property
    def pid(self) -> int | None:
        """The command's pid (and its group's number); None before it started."""
        return None if self._popen is None else self._popen.pid

    @property
    def returncode(self) -> int | None:
        """None while it runs; then its exit status, or minus the signal that ended it."""
        return None if self._popen is None else self._popen.returncode

    def _reap(self) -> None:
        if self._popen is not None and self._popen.poll() is not None:
            self._exited.set()

    async def wait(self) -> int:
        """Wait for the command to exit; return its ``returncode``."""
        await self._exited.wait()
        assert self._popen is not None and self._popen.returncode is not None
        return self._popen.returncode

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the command's process group, if it still has one."""
        if self._popen is not None and self._popen.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._popen.pid, sig)

    def close(self) -> None:
        self._loop.remove_signal_handler(signal.SIGCHLD)
