"""Open the store, wire the monitor and the executor into the app, and run it until it exits.

Everything that can fail (config, store) fails here, before the screen opens, as a
``ZombietopError`` the command line prints as one line.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import sys
import termios
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from zombietop.act.executor import Executor
from zombietop.act.source_actions import SourceActions
from zombietop.actions import ActionExecutor
from zombietop.config import Config, SourceSettings, View
from zombietop.errors import ZombietopError
from zombietop.identity import real_user
from zombietop.locations import SOURCES_ENV, clean_env, task_file_name
from zombietop.oncall.acks import Desk
from zombietop.printable import printable
from zombietop.private import open_append, state_subdir
from zombietop.procs import PsutilProbe
from zombietop.store import Store, open_store
from zombietop.tui.poller import ThreadedMonitor

if TYPE_CHECKING:
    from textual.app import App

    from zombietop.tui.app import ZombietopApp


def terminal_alive() -> bool:
    """False once the controlling terminal has gone away (a dropped SSH session)."""
    try:
        termios.tcgetattr(sys.__stdin__.fileno() if sys.__stdin__ else 0)
    except (termios.error, OSError, ValueError):
        return False
    return True


WEB_DRIVER = "textual.drivers.web_driver:"
"""How ``$TEXTUAL_DRIVER`` starts when textual-serve runs the dashboard for a browser."""


def web_driven(environ: Mapping[str, str] = os.environ) -> bool:
    """True when Textual's web driver draws this dashboard (``serve --wall``'s viewers)."""
    return environ.get("TEXTUAL_DRIVER", "").startswith(WEB_DRIVER)


def server_alive(parent: int) -> Callable[[], bool]:
    """False once the server that started this process (pid ``parent``) has gone: a wall in a
    browser has no terminal to lose, and must not poll the store for nobody."""
    return lambda: os.getppid() == parent


HANG_UP_GRACE = 3.0
"""Seconds a hung-up dashboard gets to shut down before it is ended outright."""


def hang_up(app: App[None], code: int) -> None:
    """End the app; if shutting down blocks on the dead terminal, end the process."""
    app.exit(return_code=code)
    # Textual's shutdown writes to the terminal; with nobody reading it, that write can block
    # forever. Nothing is lost by leaving now: every store write is already committed.
    timer = threading.Timer(HANG_UP_GRACE, os._exit, args=(code,))
    timer.daemon = True
    timer.start()


YOUNG_COLLECTION = 10_000
"""Container objects allocated (net) before the cyclic collector looks at the young ones.

Python's default, 700, makes the collector run about once a second on a dashboard following
1,000 tasks (each poll builds records, verdicts and views for the tasks that beat); what that
costs is in docs/benchmarks.md. Nearly everything the dashboard frees is freed by its reference
count the moment it is dropped, so the cycles left can wait a few seconds longer.
"""


def settle_collector() -> None:
    """Once the first screen is drawn: tell the cyclic collector that what exists now
    (Textual, the modules, the fleet as first read) lives as long as the dashboard, so no
    collection walks it again, and let it wait for more new objects between collections
    (``YOUNG_COLLECTION``)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION, older, oldest)


def actor() -> str:
    """Who acts from this dashboard: the real uid's name, never ``$USER``."""
    return f"{real_user()}@{socket.gethostname()}"


async def launch_dashboard(
    config: Config,
    db: Path | str,
    *,
    read_only: bool,
    wall: bool,
    refresh: float | None,
    sources: Sequence[SourceSettings] = (),
    mouse: bool = True,
    view: View | None = None,
) -> int:
    """Open the store at ``db`` (a SQLite file or a ``postgresql://`` URL), run the dashboard
    over it until it exits (starting in ``view``), hand over the kills still in their grace,
    and return the exit status."""
    from zombietop.tui.app import ZombietopApp
    from zombietop.tui.textual_compat import install_cropped_updates

    if refresh is not None and refresh <= 0:
        raise ZombietopError(
            f"--refresh {refresh:g}: give a positive number of seconds, e.g. --refresh 1"
        )
    read_only = read_only or wall
    web = web_driven()
    async with await open_store(db, read_only=read_only) as store:
        if not web and not sys.stdout.isatty():
            raise ZombietopError(
                "the dashboard needs a terminal; use `zombietop status` from scripts"
            )
        store_executor = None if read_only else Executor(store, config)
        executor: ActionExecutor | None = store_executor
        # The monitor reads through its own connection on its own thread; ``store`` here is
        # the executor's (and proves the path before the screen opens).
        source = await ThreadedMonitor.open(
            db, config, read_only=read_only, probe=PsutilProbe(), sources=sources
        )
        monitor = source.monitor

        def source_name(task_id: str) -> str | None:
            # An ack on a source's task is kept by that source's name (``Store.ack_task``).
            owner = monitor.source_of.get(task_id)
            return None if owner is None else owner.name

        if sources and store_executor is not None:
            # Tasks of a read-only source: their actions never reach the store's executor.
            executor = SourceActions(source.monitor, store_executor)
        try:
            # Partial updates then write the changed cells, not every line from its left edge.
            # It patches Textual for the whole process: done here, where the process is the
            # dashboard's, not in the app, which tests and tools build too.
            install_cropped_updates()
            app = ZombietopApp(
                source,
                executor=executor,
                refresh=refresh if refresh is not None else config.refresh,
                wall=wall,
                store_label=store.describe(),
                actor=actor(),
                terminal_alive=server_alive(os.getppid()) if web else terminal_alive,
                desk=None if read_only else Desk(store, config.oncall, source_of=source_name),
                oncall=config.oncall,
                mouse=mouse and config.mouse,
                copy_lines=config.copy_lines,
                views=config.views,
                schedules=config.schedules,
                view=view,
            )
            app.on_terminal_lost = lambda: hang_up(app, 129)
            app.on_first_snapshot = settle_collector
            await run_until_hung_up(app)
        finally:
            await source.close()
        if store_executor is not None:
            await hand_over_pending_kills(store, store_executor, db, config, sources)
    return app.return_code or 0


async def run_until_hung_up(app: ZombietopApp) -> None:
    """Run ``app``; a hang-up (a dropped SSH session) or TERM ends it cleanly instead of
    leaving it reading a dead terminal."""
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGHUP, hang_up, app, 128 + signal.SIGHUP)
    loop.add_signal_handler(signal.SIGTERM, hang_up, app, 128 + signal.SIGTERM)
    try:
        await app.run_async(mouse=app.mouse)
    finally:
        for signum in (signal.SIGHUP, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def hand_over_pending_kills(
    store: Store,
    executor: Executor,
    db: Path | str,
    config: Config,
    sources: Sequence[SourceSettings] = (),
) -> list[int]:
    """Leave a background ``zombietop kill`` to finish each kill still in its grace; return pids.

    A SIGKILL that is owed must not depend on somebody keeping a dashboard open. The finisher
    reads the same sources (a source's task is killed only as its source says it runs): the
    config's through ``--config``, the ``--source`` ones through ``ZOMBIETOP_SOURCES``, so
    no password shows in its command line.
    """
    env = clean_env()
    flags = [entry.url for entry in sources if entry not in config.sources]
    if flags:
        env[SOURCES_ENV] = "\n".join(flags)
    finishers = []
    for kill in await store.open_kills(executor.host):
        log = state_subdir(db, "logs") / f"kill-{task_file_name(kill.task_id)}.log"
        out = open_append(log)
        argv = [sys.executable, "-m", "zombietop.tui", "--db", str(db)]
        if config.path is not None:
            argv += ["--config", str(config.path)]
        argv += [
            "kill",
            kill.task_id,
            "--yes",
            "--reason",
            "finish a kill left pending by a dashboard",
        ]
        # Spawned in its own session, fire and forget: the dashboard is about to exit.
        pid = os.posix_spawn(
            sys.executable,
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, out, 1),
                (os.POSIX_SPAWN_DUP2, out, 2),
            ],
            setsid=True,
        )
        os.close(out)
        finishers.append(pid)
        print(
            printable(
                f"zombietop: the kill of {kill.task_id} is still in its grace; pid {pid} "
                f"finishes it in the background (log: {log})"
            ),
            file=sys.stderr,
        )
    return finishers
