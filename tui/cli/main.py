"""The ``zombietop`` command line. Every failure is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from zombietop import __version__
from zombietop.config import (
    load_config,
    resolve_config_path,
    write_defaults,
)
from zombietop.durations import parse_duration
from zombietop.errors import HeartbeatParseError, LeaseLost, ZombietopError
from zombietop.extras import require
from zombietop.heartbeat_line import BeatLine, format_timestamp, parse_line
from zombietop.printable import ERROR_LIMIT, bounded, printable
from zombietop.store import open_store
from zombietop.store.sqlite import SCHEMA_VERSION
from zombietop.tui.cli.agent import add_parser as agent_parser
from zombietop.tui.cli.context import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNKNOWN,
    add_command,
    context_of,
    source_flags,
    store_flags,
)
from zombietop.tui.cli.status import cmd_status
from zombietop.tui.cli.watch import add_parser as watch_parser

STATUS_EPILOG = """\
exit status (the Nagios plugin API): 0 OK; 1 WARNING (a task spinning or over a
budget, a schedule running long); 2 CRITICAL (a task dead, stalled or
reclaimable, a schedule missed); 3 UNKNOWN (the store or config cannot be read,
or a usage error). With --prometheus: 0 once the metrics are written (the store's
state is in them), 3 when they cannot be."""


class Parser(argparse.ArgumentParser):
    """argparse, with the exit status of a usage error chosen per command."""

    usage_exit = EXIT_ERROR
    commands: argparse._SubParsersAction[Parser]
    """The subcommands' parsers, on the top-level parser."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(self.usage_exit, f"{self.prog}: error: {message}\n")


# Commands --------------------------------------------------------------------------------


async def cmd_init(args: argparse.Namespace) -> int:
    ctx = context_of(args)
    async with await open_store(ctx.db, create=True) as store:
        where = store.describe()
    print(f"store ready at {where} (schema v{SCHEMA_VERSION})")
    return EXIT_OK


def _counter(text: str) -> tuple[str, float]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not key=value (e.g. rows=8200000)")
    try:
        return key, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"counter {key!r}: {value!r} is not a number") from None


def _beat_from_args(args: argparse.Namespace) -> BeatLine:
    if args.line:
        return parse_line(args.line)
    parts: list[str] = []
    if args.stage:
        parts.append(f'stage="{_escape(args.stage)}"')
    if args.progress is not None:
        parts.append(f"p={args.progress:g}")
    if args.eta:
        parts.append(f"eta={args.eta}")
    for key, value in args.counter or []:
        parts.append(f"{key}={value:g}")
    if args.checkpoint:
        parts.append(f'checkpoint="{_escape(args.checkpoint)}"')
    if args.request:
        parts.append(f'req="{_escape(args.request)}"')
    if not parts:
        raise ZombietopError(
            "nothing to beat: give --stage/--progress (or --line 'stage=... p=...')"
        )
    # This host's clock: against the time the store records the beat, it measures the skew.
    parts.append(f"at={format_timestamp(time.time())}")
    # Through the parser, so a flag beat follows exactly the rules a heartbeat-file line does.
    return parse_line(" ".join(parts))


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


async def cmd_beat(args: argparse.Namespace) -> int:
    ctx = context_of(args)
    task_id = args.task or os.environ.get("ZOMBIETOP_TASK")
    if not task_id:
        raise ZombietopError(
            "which task? pass --task ID (or run under `zombietop run`, which sets ZOMBIETOP_TASK)"
        )
    try:
        beat = _beat_from_args(args)
    except HeartbeatParseError as exc:
        raise ZombietopError(str(exc)) from None
    owner, token = _lease_of_the_run(task_id)
    async with await open_store(ctx.db) as store:
        try:
            await store.record_heartbeat(task_id, beat, owner=owner, token=token)
        except LeaseLost as exc:
            raise ZombietopError(
                f"not recording a heartbeat for {task_id}: {exc}. The run this beat speaks for "
                "was resumed, discarded or reclaimed, or has ended: only its current attempt "
                "may beat"
            ) from None
    return EXIT_OK


def _lease_of_the_run(task_id: str) -> tuple[str, int]:
    """Return the lease ``zombietop run`` hands its command, which fences every beat.

    A beat without it is refused: anyone who can write the store could otherwise make a
    stalled task look alive.
    """
    owner = os.environ.get("ZOMBIETOP_LEASE_OWNER", "")
    token = os.environ.get("ZOMBIETOP_LEASE_TOKEN", "")
    if owner and token.isdigit():
        return owner, int(token)
    found = "are not set" if not (owner or token) else f"are {owner!r} and {token!r}"
    raise ZombietopError(
        f"not recording a heartbeat for {task_id}: a beat must carry the lease of its run, and "
        f"ZOMBIETOP_LEASE_OWNER and ZOMBIETOP_LEASE_TOKEN {found}. Call `zombietop beat` inside "
        "the command that `zombietop run` wraps (it sets both), or append the line to "
        '"$ZOMBIETOP_HEARTBEAT_FILE" there'
    )


async def cmd_dashboard(args: argparse.Namespace) -> int:
    require("the dashboard", "textual", "rich")
    from zombietop.tui.launch import launch_dashboard

    ctx = context_of(args)
    return await launch_dashboard(
        ctx.config,
        ctx.db,
        read_only=args.read_only,
        wall=args.wall,
        refresh=args.refresh,
        sources=ctx.sources,
    )


def cmd_config(args: argparse.Namespace) -> int:
    if args.config_command == "init":
        chosen = args.path or getattr(args, "config", None)
        target = Path(chosen) if chosen else resolve_config_path(None) or _default_config_target()
        write_defaults(target, force=args.force)
        print(f"wrote default config to {target}")
        return EXIT_OK
    path = Path(args.path) if args.path else resolve_config_path(getattr(args, "config", None))
    config = load_config(path)
    where = str(path) if path else "built-in defaults (no config file found)"
    print(f"{where}: ok")
    for name, limits in [("defaults", config.defaults), *config.step_types.items()]:
        changed = sorted(k for k, v in limits.sources.items() if v != "default")
        note = f" ({len(changed)} set in file: {', '.join(changed)})" if changed else ""
        print(printable(f"  {name}: valid{note}"))
    return EXIT_OK


def _default_config_target() -> Path:
    from zombietop.config import default_config_path

    return default_config_path()


# Parser ----------------------------------------------------------------------------------


EXIT_EPILOG = """\
exit status: `status` follows the Nagios plugin API (0 OK, 1 WARNING,
2 CRITICAL, 3 UNKNOWN); `run` exits with its command's status; `resume`,
`discard` and `kill` exit 1 when the action was not done (refused, not
confirmed, or left for another host's agent). Every other command exits 0 when
it did what was asked or there was nothing to do (as `unack` of a task with no
ack), and 2 on a usage error or a failure.

`zombietop COMMAND --help` says what each command does, with an example."""


def build_parser() -> argparse.ArgumentParser:
    common = store_flags()
    parser = Parser(
        prog="zombietop",
        description="top for zombie jobs: find tasks that say running but are not.\n"
        "With no command, zombietop opens the dashboard on the store.",
        epilog=EXIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common, source_flags()],
    )
    parser.add_argument("--version", action="version", version=f"zombietop {__version__}")
    # With no subcommand, zombietop is the dashboard.
    parser.add_argument(
        "--read-only", action="store_true", help="dashboard: open the store read-only, no actions"
    )
    parser.add_argument(
        "--wall", action="store_true", help="dashboard: wall screen (read-only, large counts)"
    )
    parser.add_argument(
        "--refresh", type=float, metavar="SECONDS", help="dashboard: seconds between polls"
    )
    parser.set_defaults(handler=cmd_dashboard)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = sub

    status = add_command(
        sub,
        "status",
        parents=[common, source_flags()],
        summary="print one snapshot; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (Nagios)",
        about="Print one snapshot of the store, for scripts and monitoring systems: a table "
        "(cut to the terminal's width on a terminal, whole rows in a pipe or a file), then the "
        "page line of every task that needs a human.",
        examples=(
            "zombietop status",
            "zombietop status --nagios",
            "zombietop status --json --all",
        ),
        epilog=STATUS_EPILOG,
    )
    status.usage_exit = EXIT_UNKNOWN
    form = status.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    form.add_argument(
        "--nagios",
        action="store_true",
        help="the Nagios plugin output: a summary line with performance data",
    )
    form.add_argument(
        "--prometheus",
        action="store_true",
        help="the Prometheus text format, as `watch --metrics` serves it "
        "(for node_exporter's textfile collector); exits 0 once written",
    )
    status.add_argument(
        "--output",
        type=Path,
        metavar="PATH",
        help="with --prometheus: write to PATH atomically (e.g. "
        "/var/lib/prometheus/node-exporter/zombietop.prom) instead of stdout",
    )
    status.add_argument(
        "--all",
        action="store_true",
        help="include every finished task, not just those of the last [monitor] "
        "finished_window (1h by default): the older ones follow, newest first, as read",
    )
    status.set_defaults(handler=cmd_status)

    init = add_command(
        sub,
        "init",
        parents=[common],
        summary="create (or upgrade) the store",
        about="Create the store, or upgrade an older one to this version's schema. "
        "`zombietop run` and `zombietop agent` create it too; a PostgreSQL database must exist "
        "first (createdb).",
        examples=(
            "zombietop init",
            "zombietop init --db postgresql://zombietop@db.internal/zombietop",
        ),
    )
    init.set_defaults(handler=cmd_init)

    beat = add_command(
        sub,
        "beat",
        parents=[common],
        summary="record one heartbeat from inside a command that `zombietop run` wraps",
        about="Record one heartbeat of a task, from a shell script that `zombietop run` wraps. "
        "The task and its lease come from the environment the wrapper sets; a beat without "
        "the run's lease is refused, so nobody outside the run can make a stalled task look "
        "alive.",
        examples=(
            "zombietop beat --stage transform --progress 61",
            "zombietop beat --line 'stage=load p=90 eta=5m'",
        ),
    )
    beat.add_argument("--task", help="task id (default: $ZOMBIETOP_TASK)")
    beat.add_argument("--stage", help="current stage, e.g. transform")
    beat.add_argument("--progress", type=float, help="percent done, 0-100")
    beat.add_argument(
        "--counter",
        type=_counter,
        action="append",
        metavar="KEY=N",
        help="a monotonic counter (repeatable)",
    )
    beat.add_argument("--checkpoint", help="last durable checkpoint")
    beat.add_argument("--eta", type=_eta, help="time left, e.g. 42m")
    beat.add_argument("--request", metavar="NAME", help="the outbound request now in flight")
    beat.add_argument("--line", help="a whole heartbeat line instead of the flags")
    beat.set_defaults(handler=cmd_beat)

    watch_parser(sub, common)
    agent_parser(sub, common)

    config = add_command(
        sub,
        "config",
        parents=[_config_flag()],
        summary="write or check a config file",
        about="Write the default config (config init) or check a config file (config check). "
        "Without PATH, both use the file zombietop reads: --config, then $ZOMBIETOP_CONFIG, "
        "then ~/.config/zombietop/config.toml.",
        examples=("zombietop config init", "zombietop config check ./config.toml"),
    )
    config_sub = config.add_subparsers(dest="config_command", metavar="init|check", required=True)
    config_init = add_command(
        config_sub,
        "init",
        summary="write the default config to a file",
        about="Write the default config, every key with its default value, to PATH. An "
        "existing file is kept unless you pass --force.",
        examples=("zombietop config init", "zombietop config init ./config.toml --force"),
    )
    config_init.add_argument(
        "path",
        nargs="?",
        help="where (default: --config, $ZOMBIETOP_CONFIG or ~/.config/zombietop/config.toml)",
    )
    config_init.add_argument("--force", action="store_true", help="overwrite an existing file")
    config_check = add_command(
        config_sub,
        "check",
        summary="validate a config file",
        about="Check a config file: every key known, every value valid, every set of "
        "timeouts in order. An error names the file, the section, the keys and the values.",
        examples=("zombietop config check", "zombietop config check ./config.toml"),
    )
    config_check.add_argument(
        "path", nargs="?", help="the file (default: the one zombietop would use)"
    )
    config.set_defaults(handler=cmd_config)

    from zombietop.tui.cli.jobs import add_commands  # run, resume, discard, kill

    add_commands(sub, common)

    from zombietop.tui.cli.oncall import add_parser as oncall_parser  # ack, silence, ...

    oncall_parser(sub, common)

    from zombietop.tui.demo import add_parser as demo_parser

    demo_parser(sub)
    return parser


def _config_flag() -> argparse.ArgumentParser:
    """``--config`` alone: ``zombietop config`` reads no store."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="the config file, when PATH is not given "
        "(default: $ZOMBIETOP_CONFIG or ~/.config/zombietop/config.toml)",
    )
    return flags


def _eta(text: str) -> str:
    try:
        parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


EXIT_PIPE = 128 + signal.SIGPIPE
"""What a shell sees from a command whose reader closed the pipe early (``| head -1``)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. A reader that closes stdout early ends it quietly, as SIGPIPE ends
    ``cat``: no traceback, exit status 141."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        # Python flushes stdout once more at exit: let what is still buffered go nowhere.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_PIPE


def _stdout_closed() -> bool:
    """True when nothing reads stdout any more (the pipe's reader is gone)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # Left over by a subcommand's parser: the error (and its exit status) is that command's.
        command = parser.commands.choices.get(getattr(args, "command", None) or "", parser)
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_ERROR
    try:
        result = handler(args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return int(result)
    except ZombietopError as exc:
        print(bounded(f"zombietop: {exc}", limit=ERROR_LIMIT), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
