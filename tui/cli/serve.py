"""``zombietop serve``: answer pings over HTTP, in healthchecks' URL shape.

Only the command line and the wiring: the keys, the routes and what a ping does to the store
live in core (``zombietop.serve``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from dataclasses import replace
from datetime import UTC, datetime

from zombietop.config import ListenAddress, parse_listen
from zombietop.extras import require
from zombietop.printable import printable
from zombietop.procs import this_host
from zombietop.tui.cli.context import EXIT_OK, add_command, context_of, open_or_create


def _log(line: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"{stamp} {printable(line)}", flush=True)


async def cmd_serve(args: argparse.Namespace) -> int:
    require("`zombietop serve`", "aiohttp")
    if args.metrics:
        require("`zombietop serve --metrics`", "prometheus_client")
    from zombietop.serve.keys import load_keys, load_wall_tokens
    from zombietop.serve.pings import PingBook
    from zombietop.serve.server import PingServer, check_listen, check_wall

    ctx = context_of(args)
    config = ctx.config
    if args.listen is not None:
        config = replace(config, serve=replace(config.serve, listen=args.listen))
    keys = load_keys(config.serve.ping_key_file)
    check_listen(config.serve.listen, keys)
    wall = None
    if args.wall or config.serve.wall:
        require("`zombietop serve --wall`", "textual", "textual_serve")
        from zombietop.tui.web_wall import WallSite

        tokens = load_wall_tokens(config.serve.wall_token_file)
        check_wall(config.serve.listen, tokens)
        wall = WallSite(
            db=ctx.db, config_path=config.path, tokens=tokens, viewers=config.serve.wall_viewers
        )
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    # A ping may be the first thing a store hears of: create it, as `zombietop run` does.
    async with await open_or_create(ctx.db) as store:
        book = PingBook(store, config, host=this_host())
        served = await PingServer.start(
            book,
            keys,
            config.serve.listen,
            config.serve,
            metrics=args.metrics,
            mount=None if wall is None else wall.mount,
        )
        if keys:
            _log(
                f"serving pings for {store.describe()} at http://{served.address}/ping/ "
                f"({len(keys)} ping key(s))"
            )
        else:
            # Without a key every ping is refused as a wrong key is: say so, not "serving".
            _log(
                f"no ping key: every ping to http://{served.address}/ping/ is refused (404) "
                "until one is set in [serve] ping_key_file or $ZOMBIETOP_PING_KEY "
                "(make one with `openssl rand -hex 16`)"
            )
        if args.metrics:
            _log(f"serving its metrics at http://{served.address}/metrics")
        if wall is not None:
            # The token is never printed: whoever reads this log need not be a viewer.
            guard = "?token=TOKEN" if wall.tokens else " (no token: this host only)"
            _log(f"serving the wall at http://{served.address}/wall{guard}")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, stop.set)
        try:
            await stop.wait()
        finally:
            await served.close()
    return EXIT_OK


def _listen(text: str) -> ListenAddress:
    try:
        return parse_listen(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    serve = add_command(
        sub,
        "serve",
        parents=[common],
        summary="answer pings over HTTP (healthchecks' URLs) from hosts without zombietop",
        about="Listen for pings in healthchecks' URL shape, /ping/KEY/JOB[/start|/fail|/log|"
        "/beat|/EXIT], so a crontab reports its runs with one curl. A start opens a run of the "
        "job with a lease of its lease_ttl, a beat records progress, an end finishes it. "
        "Loopback only unless a ping key is set ([serve] ping_key_file or $ZOMBIETOP_PING_KEY). "
        "With --wall, also the read-only wall for browsers at /wall, one `zombietop --wall` "
        "per viewer; loopback only unless a wall token is set.",
        examples=(
            "zombietop serve",
            "ZOMBIETOP_PING_KEY=$(cat /etc/zombietop/key) zombietop serve --listen 0.0.0.0:8099",
            "zombietop serve --wall    # then open http://127.0.0.1:8099/wall",
        ),
    )
    serve.add_argument(
        "--listen",
        type=_listen,
        metavar="HOST:PORT",
        help="where to listen (a bare PORT listens on 127.0.0.1 only); overrides [serve] listen",
    )
    serve.add_argument(
        "--metrics",
        action="store_true",
        help="also serve the ping server's Prometheus metrics at /metrics on the same port",
    )
    serve.add_argument(
        "--wall",
        action="store_true",
        help="also serve the read-only wall to browsers at /wall (a token guards it: "
        "[serve] wall_token_file or $ZOMBIETOP_WALL_TOKEN); or [serve] wall = true",
    )
    serve.set_defaults(handler=cmd_serve)
