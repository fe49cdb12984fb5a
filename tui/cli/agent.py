"""``zombietop agent``: serve this host of a fleet (see core/agent.py)."""

from __future__ import annotations

import argparse
import asyncio
import signal

from zombietop.act.executor import Executor
from zombietop.agent import AGENT_INTERVAL_S, Agent
from zombietop.procs import PsutilProbe, this_host
from zombietop.sources import open_sources
from zombietop.tui.cli.context import (
    EXIT_OK,
    add_command,
    context_of,
    open_or_create,
    source_flags,
)


async def cmd_agent(args: argparse.Namespace) -> int:
    ctx = context_of(args)
    host = args.host or this_host()
    async with (
        await open_or_create(ctx.db) as store,
        open_sources(ctx.sources) as sources,
    ):
        agent = Agent(
            store,
            ctx.config,
            host=host,
            interval=args.interval,
            probe=PsutilProbe(host=host),
            executor=Executor(store, ctx.config, host=host, store_path=ctx.db),
            sources=sources,
        )
        if args.once:
            await agent.tick()
            return EXIT_OK
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, stop.set)
        await agent.run(stop)
    return EXIT_OK


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    agent = add_command(
        sub,
        "agent",
        parents=[common, source_flags()],
        summary="serve this host of a fleet: sample its tasks (and its sources' task "
        "instances), carry out actions asked elsewhere",
        about="Serve this host of a fleet that shares one store: every --interval, sample the "
        "processes of the tasks that run here into the store, and carry out the kills and "
        "relaunches that other hosts ask for. Run one on every host that runs tasks, as the "
        "user that runs them.",
        examples=(
            "zombietop agent --db postgresql://zombietop@db.internal/zombietop",
            "zombietop agent --once",
        ),
    )
    agent.add_argument(
        "--host", help="this host's name in the fleet (default: the host name; tasks record it)"
    )
    agent.add_argument(
        "--interval",
        type=float,
        default=AGENT_INTERVAL_S,
        metavar="SECONDS",
        help=f"time between rounds (default {AGENT_INTERVAL_S:g})",
    )
    agent.add_argument("--once", action="store_true", help="do one round and exit")
    agent.set_defaults(handler=cmd_agent)
