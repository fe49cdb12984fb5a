"""``zombietop watch``: the headless watchdog, in a loop or once from cron."""

from __future__ import annotations

import argparse
import asyncio
import signal
from dataclasses import replace
from datetime import UTC, datetime

from core.executor import Executor
from core.monitor import Monitor
from core.notify import build_notifiers
from core.procs import PsutilProbe
from core.store import open_store
from core.watchdog import Watchdog


def _log(line: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"{stamp} {line}", flush=True)


async def cmd_watch(args: argparse.Namespace) -> int:
    from tui.cli import EXIT_OK, _context

    ctx = _context(args)
    config = ctx.config
    if args.interval is not None:
        config = replace(config, watch=replace(config.watch, interval=args.interval))
    notifiers = [] if args.dry_run else build_notifiers(config.notify)
    if not notifiers and not args.dry_run:
        _log("no [notify] channel configured: pages are only logged here and recorded as events")
    async with await open_store(ctx.db, read_only=args.dry_run) as store:
        executor = None if args.dry_run else Executor(store, config)
        # Verdicts are reused until they can change; the watchdog reads ages as of each tick.
        monitor = Monitor(store, config, probe=PsutilProbe(), reuse_verdicts=True)
        dog = Watchdog(
            monitor, config, executor=executor, notifiers=notifiers, dry_run=args.dry_run, log=_log
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, stop.set)
        mode = "once" if args.once else f"every {config.watch.interval:g}s"
        _log(
            f"watching {store.describe()} {mode}"
            + (" (dry run: nothing sent, nothing changed)" if args.dry_run else "")
        )
        await dog.run(once=args.once, stop=stop)
    return EXIT_OK


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    watch = sub.add_parser(
        "watch", parents=[common], help="the headless watchdog: quarantine and page"
    )
    watch.add_argument("--once", action="store_true", help="look once and exit (for cron)")
    watch.add_argument(
        "--dry-run", action="store_true", help="print pages instead of sending them; change nothing"
    )
    watch.add_argument(
        "--interval", type=float, metavar="SECONDS", help="override [watch] interval"
    )
    watch.set_defaults(handler=cmd_watch)
