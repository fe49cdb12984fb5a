"""Open the store, wire the monitor and the executor into the app, and run it until it exits.

Everything that can fail (config, store) fails here, before the screen opens, as a
``ZombietopError`` the command line prints as one line.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import signal
import socket
import sys
import termios
from pathlib import Path

from core.actions import ActionExecutor
from core.config import Config
from core.errors import ZombietopError
from core.monitor import Monitor
from core.store import open_store


def terminal_alive() -> bool:
    """False once the controlling terminal has gone away (a dropped SSH session)."""
    try:
        termios.tcgetattr(sys.__stdin__.fileno() if sys.__stdin__ else 0)
    except (termios.error, OSError, ValueError):
        return False
    return True


def actor() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


async def run_dashboard(
    config: Config, db: Path, *, read_only: bool, wall: bool, refresh: float | None
) -> int:
    """Run the dashboard on ``db``; return the exit status."""
    from tui.app import ZombietopApp

    if refresh is not None and refresh <= 0:
        raise ZombietopError(
            f"--refresh {refresh:g}: give a positive number of seconds, e.g. --refresh 1"
        )
    if not sys.stdout.isatty():
        raise ZombietopError("the dashboard needs a terminal; use `zombietop status` from scripts")
    read_only = read_only or wall
    async with await open_store(db, read_only=read_only) as store:
        monitor = Monitor(store, config)
        executor: ActionExecutor | None = None
        if not read_only:
            try:
                from core.executor import Executor
            except ModuleNotFoundError:
                raise ZombietopError(
                    "this zombietop has no action executor (core.executor); run with --read-only"
                ) from None
            executor = Executor(store, config)
        app = ZombietopApp(
            monitor,
            executor=executor,
            refresh=refresh if refresh is not None else config.refresh,
            wall=wall,
            store_label=store.describe(),
            actor=actor(),
            terminal_alive=terminal_alive,
        )
        loop = asyncio.get_running_loop()
        # Hang-up (a dropped SSH session) and TERM end the app cleanly instead of leaving it
        # reading a dead terminal.
        for signum in (signal.SIGHUP, signal.SIGTERM):
            loop.add_signal_handler(signum, app.exit)
        try:
            await app.run_async()
        finally:
            for signum in (signal.SIGHUP, signal.SIGTERM):
                loop.remove_signal_handler(signum)
    return app.return_code or 0
