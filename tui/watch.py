"""``zombietop watch``: the headless watchdog, in a loop or once from cron."""

from __future__ import annotations

import argparse
import asyncio
import signal
from dataclasses import replace
from datetime import UTC, datetime

from zombietop.executor import Executor
from zombietop.monitor import Monitor
from zombietop.notify import Notifier, build_notifiers
from zombietop.procs import PsutilProbe
from zombietop.sd_notify import SystemdNotifier
from zombietop.store import open_store
from zombietop.watchdog import LogNotifier, TickReport, Watchdog


def _log(line: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"{stamp} {line}", flush=True)


async def cmd_watch(args: argparse.Namespace) -> int:
    from zombietop.tui.cli import EXIT_ERROR, EXIT_OK, _context

    ctx = _context(args)
    config = ctx.config
    if args.interval is not None:
        config = replace(config, watch=replace(config.watch, interval=args.interval))
    notifiers: list[Notifier] = [] if args.dry_run else build_notifiers(config.notify)
    if not notifiers and not args.dry_run:
        _log("no [notify] channel configured: pages are only logged here and recorded as events")
        notifiers = [LogNotifier(_log)]
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
        systemd = SystemdNotifier.from_env()
        ping = SystemdPing(systemd)
        try:
            await dog.run(once=args.once, stop=stop, after_tick=ping)
        finally:
            systemd.notify(STOPPING="1")
            systemd.close()
    if args.once and ping.last is not None and ping.last.blind:
        # Cron must hear that this look saw nothing: the store could not be read.
        return EXIT_ERROR
    return EXIT_OK


class SystemdPing:
    """After each look: ``READY=1`` the first time, ``WATCHDOG=1`` always, and the counts.

    ``WATCHDOG=1`` comes only from a look that finished, so a watchdog wedged in a round
    misses its unit's ``WatchdogSec`` and systemd restarts it.
    """

    def __init__(self, systemd: SystemdNotifier) -> None:
        self.systemd = systemd
        self.ready = False
        self.last: TickReport | None = None

    def __call__(self, report: TickReport) -> None:
        self.last = report
        fields = {"WATCHDOG": "1", "STATUS": status_line(report)}
        if not self.ready:
            fields = {"READY": "1", **fields}
            self.ready = True
        self.systemd.notify(**fields)


def status_line(report: TickReport) -> str:
    """What ``systemctl status`` shows: what this look found, or why it found nothing."""
    if not report.active:
        return report.withheld or "standby"
    if report.withheld is not None:
        return f"withholding verdicts: {report.withheld}"
    found = ", ".join(f"{n} {health}" for health, n in report.counts.items() if n)
    paging = sum(n for health, n in report.counts.items() if health.pages)
    return f"{paging} needing a human; {found or 'no tasks'}"


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
