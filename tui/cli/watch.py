"""``zombietop watch``: the headless watchdog, in a loop or once from cron.

Only the command line and the wiring: the watchdog, its systemd ping and its metrics
endpoint live in core (``zombietop.watch.watchdog``, ``sd_notify``, ``metrics_endpoint``).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from zombietop.act.executor import Executor
from zombietop.config import ListenAddress, parse_listen
from zombietop.errors import ZombietopError
from zombietop.extras import require
from zombietop.judge.monitor import Monitor
from zombietop.paging.channels import build_notifiers
from zombietop.paging.notify import LogNotifier, Notifier
from zombietop.printable import printable
from zombietop.procs import PsutilProbe
from zombietop.sources import open_sources
from zombietop.store import open_store
from zombietop.tui.cli.context import (
    EXIT_ERROR,
    EXIT_OK,
    add_command,
    context_of,
    source_flags,
)
from zombietop.watch.sd_notify import SystemdNotifier, SystemdPing
from zombietop.watch.watchdog import LookReport, Watchdog


def _log(line: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"{stamp} {printable(line)}", flush=True)


async def cmd_watch(args: argparse.Namespace) -> int:
    ctx = context_of(args)
    config = ctx.config
    if args.interval is not None:
        config = replace(config, watch=replace(config.watch, interval=args.interval))
    if args.metrics is not None and args.once:
        raise ZombietopError(
            "watch: --metrics serves while the watchdog runs, and --once exits at once; "
            "from cron, write the metrics with `zombietop status --prometheus --output PATH`"
        )
    # [watch] metrics is for the long-running watchdog; a --once run from cron leaves it be.
    address = None if args.once else args.metrics or config.watch.metrics
    if address is not None:
        served_for = "`zombietop watch --metrics`" if args.metrics else "[watch] metrics"
        require(served_for, "prometheus_client", "aiohttp")
    notifiers: list[Notifier] = [] if args.dry_run else build_notifiers(config.notify)
    if not notifiers and not args.dry_run:
        _log("no [notify] channel configured: pages are only logged here and recorded as events")
        notifiers = [LogNotifier(_log)]
    async with (
        await open_store(ctx.db, read_only=args.dry_run) as store,
        open_sources(ctx.sources) as sources,
    ):
        executor = None if args.dry_run else Executor(store, config)
        # Verdicts are reused until they can change; the watchdog reads ages as of each tick.
        monitor = Monitor(
            store,
            config,
            probe=PsutilProbe(),
            reuse_verdicts=True,
            sources=sources,
            source_deadline=config.watch.interval,
            count_flips=False,  # its FlapWatch counts the flips it sees
        )
        dog = Watchdog(
            monitor, config, executor=executor, notifiers=notifiers, dry_run=args.dry_run, log=_log
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, stop.set)
        mode = "once" if args.once else f"every {config.watch.interval:g}s"
        _log(
            f"watching {store.describe()}"
            + "".join(f" and {s.name} (read-only)" for s in sources)
            + f" {mode}"
            + (" (dry run: nothing sent, nothing changed)" if args.dry_run else "")
        )
        endpoint = metrics = None
        if address is not None:
            # prometheus-client and aiohttp take a while to import: only `--metrics` pays for them.
            from zombietop.watch.metrics import Metrics
            from zombietop.watch.metrics_endpoint import MetricsEndpoint, MetricsUpdate

            metrics = Metrics([notifier.kind for notifier in dog.outbox.notifiers])
            if dog.otel is not None:
                metrics.otel_dropped = dog.otel.telemetry.dropped
            endpoint = await MetricsEndpoint.start(metrics, address)
            _log(f"serving Prometheus metrics at {endpoint.url}{endpoint.reach}")
        systemd = SystemdNotifier.from_env()
        ping = SystemdPing(systemd)
        after_tick: Callable[[LookReport], None] = ping
        if endpoint is not None:
            after_tick = MetricsUpdate(dog, endpoint, then=after_tick)
        try:
            await dog.run(once=args.once, stop=stop, after_tick=after_tick)
        finally:
            systemd.notify(STOPPING="1")
            systemd.close()
            if endpoint is not None:
                await endpoint.close()
    if args.once and ping.last is not None and ping.last.blind:
        # Cron must hear that this look saw nothing: the store could not be read.
        return EXIT_ERROR
    return EXIT_OK


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    watch = add_command(
        sub,
        "watch",
        parents=[common, source_flags()],
        summary="the headless watchdog: quarantine and page",
        about="Look at the store every [watch] interval: quarantine the tasks that are dead, "
        "stalled or reclaimable, page once per incident through [notify] (again every "
        "[watch] renotify while nobody acks or silences it), and page the all-clear. Run it "
        "under systemd, or once a minute from cron with --once.",
        examples=(
            "zombietop watch",
            "zombietop watch --once",
            "zombietop watch --metrics 127.0.0.1:9464",
        ),
    )
    watch.add_argument("--once", action="store_true", help="look once and exit (for cron)")
    watch.add_argument(
        "--dry-run", action="store_true", help="print pages instead of sending them; change nothing"
    )
    watch.add_argument(
        "--interval", type=float, metavar="SECONDS", help="override [watch] interval"
    )
    watch.add_argument(
        "--metrics",
        type=_listen,
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (a bare PORT listens on "
        "127.0.0.1 only); overrides [watch] metrics",
    )
    watch.set_defaults(handler=cmd_watch)


def _listen(text: str) -> ListenAddress:
    try:
        return parse_listen(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
