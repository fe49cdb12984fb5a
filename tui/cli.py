"""The ``zombietop`` command line. Every failure is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from zombietop import __version__
from zombietop.config import (
    Config,
    SourceSettings,
    load_config,
    resolve_config_path,
    write_defaults,
)
from zombietop.durations import parse_duration
from zombietop.errors import HeartbeatParseError, ZombietopError
from zombietop.heartbeat_line import BeatLine, format_timestamp, parse_line
from zombietop.model import ProcessSample
from zombietop.monitor import Monitor, Snapshot
from zombietop.output import last_outputs
from zombietop.printable import printable
from zombietop.procs import PsutilProbe
from zombietop.sources import check_source_url, open_sources
from zombietop.sqlite_store import SCHEMA_VERSION
from zombietop.store import default_store_path, open_store, store_location
from zombietop.tui.agent import add_parser as agent_parser
from zombietop.tui.watch import add_parser as watch_parser

EXIT_OK, EXIT_ERROR = 0, 2
EXIT_UNKNOWN = 3
"""``status`` speaks the Nagios plugin API: a usage error there is UNKNOWN, not 2."""
STATUS_SAMPLE_GAP = 0.5
"""Seconds between the two process samples ``status`` takes, so CPU% is never unknown."""

STATUS_EPILOG = """\
exit status (the Nagios plugin API): 0 OK; 1 WARNING (a task spinning or over a budget, a
schedule running long); 2 CRITICAL (a task dead, stalled or reclaimable, a schedule missed);
3 UNKNOWN (the store or config cannot be read, or a usage error). Every other command exits 2
on a usage error or a failure."""


class Parser(argparse.ArgumentParser):
    """argparse, with the exit status of a usage error chosen per command."""

    usage_exit = EXIT_ERROR
    commands: argparse._SubParsersAction[Parser]
    """The subcommands' parsers, on the top-level parser."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(self.usage_exit, f"{self.prog}: error: {message}\n")


@dataclass(frozen=True, slots=True)
class Context:
    """What every command needs: the validated config and where the store is."""

    config: Config
    db: Path | str
    """A SQLite file or a ``postgresql://`` URL."""
    sources: tuple[SourceSettings, ...] = ()
    """``[[sources]]`` and every ``--source``: engines' databases watched read-only."""


def resolve_store_path(flag: str | None, config: Config) -> Path | str:
    """``--db``, then ``ZOMBIETOP_DB``, then ``[store] path``, then the XDG state directory."""
    if flag:
        return store_location(flag)
    env = os.environ.get("ZOMBIETOP_DB")
    if env:
        return store_location(env)
    if config.store_path is not None:
        return config.store_path
    return default_store_path()


def _context(args: argparse.Namespace) -> Context:
    config = load_config(resolve_config_path(getattr(args, "config", None)))
    flags = tuple(SourceSettings(url=check_source_url(url)) for url in getattr(args, "source", []))
    return Context(
        config=config,
        db=resolve_store_path(getattr(args, "db", None), config),
        sources=(*config.sources, *flags),
    )


# Commands --------------------------------------------------------------------------------


async def cmd_status(args: argparse.Namespace) -> int:
    """One snapshot; the exit status follows the Nagios plugin API (``status.Level``)."""
    from zombietop.tui.status import (
        Level,
        level,
        nagios_output,
        nagios_unknown,
        render_table,
        snapshot_to_json,
        watchdog_words,
    )

    if args.output is not None and not args.prometheus:
        print("zombietop: status: --output PATH writes --prometheus only", file=sys.stderr)
        return Level.UNKNOWN
    try:
        ctx = _context(args)
        async with (
            await open_store(ctx.db, read_only=True) as store,
            open_sources(ctx.sources) as sources,
        ):
            probe = PsutilProbe()  # so a task whose process died shows as dead
            monitor = Monitor(
                store, ctx.config, probe=probe, include_finished=args.all, sources=sources
            )
            snapshot = await monitor.poll()
            if any(_first_sight(view.process) for view in snapshot.tasks):
                # CPU% is a delta: as top -n 1 does, sample twice a moment apart.
                await asyncio.sleep(STATUS_SAMPLE_GAP)
                snapshot = await monitor.poll()
            if snapshot.error:
                raise ZombietopError(snapshot.error)
            outputs = last_outputs(store, (view.task for view in snapshot.tasks), monitor.host)
            watchdog = await store.watchdog_lease()
    except ZombietopError as exc:
        if args.nagios:
            print(nagios_unknown(str(exc)))
        else:
            print(printable(f"zombietop: {exc}"), file=sys.stderr)
        if args.prometheus:
            # node_exporter still learns something: zombietop_store_up 0.
            _print_prometheus(Snapshot(taken_at=None, error=str(exc)), args.output)
        return Level.UNKNOWN
    if args.prometheus:
        if not _print_prometheus(snapshot, args.output):
            return Level.UNKNOWN
    elif args.json:
        print(json.dumps(snapshot_to_json(snapshot, outputs, watchdog), indent=2))
    elif args.nagios:
        print(nagios_output(snapshot, outputs))
    else:
        # Said once a watchdog has held the store; a store never watched stays as it was.
        words = None if watchdog is None else watchdog_words(watchdog, snapshot.taken_at)
        print(render_table(snapshot, outputs=outputs, watchdog=words))
    return level(snapshot)


def _first_sight(process: ProcessSample | None) -> bool:
    """True for a live process sampled once: its CPU% needs a second look."""
    return process is not None and not process.gone and process.cpu_percent is None


def _print_prometheus(snapshot: Snapshot, output: Path | None) -> bool:
    """The watchdog's metrics, once: to ``output`` atomically, or to stdout. False (and the
    reason on stderr) when ``output`` cannot be written."""
    from zombietop.metrics import Metrics

    metrics = Metrics()
    # No watchdog here: every task that pages has (or is about to have) an incident.
    metrics.update(snapshot, incidents_open=snapshot.paging)
    if output is not None:
        try:
            metrics.write_textfile(output)
        except ZombietopError as exc:
            print(printable(f"zombietop: {exc}"), file=sys.stderr)
            return False
        return True
    text = metrics.render().decode()
    if sys.stdout.isatty():
        # Label values hold untrusted text verbatim (the format escapes only \\, " and
        # newlines): a person reading it on a terminal gets its control characters escaped.
        text = "\n".join(printable(line) for line in text.splitlines()) + "\n"
    sys.stdout.write(text)
    return True


async def cmd_init(args: argparse.Namespace) -> int:
    ctx = _context(args)
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
    ctx = _context(args)
    task_id = args.task or os.environ.get("ZOMBIETOP_TASK")
    if not task_id:
        raise ZombietopError(
            "which task? pass --task ID (or run under `zombietop run`, which sets ZOMBIETOP_TASK)"
        )
    try:
        beat = _beat_from_args(args)
    except HeartbeatParseError as exc:
        raise ZombietopError(str(exc)) from None
    owner = os.environ.get("ZOMBIETOP_LEASE_OWNER")
    token_text = os.environ.get("ZOMBIETOP_LEASE_TOKEN")
    token = int(token_text) if token_text and token_text.isdigit() else None
    async with await open_store(ctx.db) as store:
        await store.record_heartbeat(task_id, beat, owner=owner if token else None, token=token)
    return EXIT_OK


async def cmd_dashboard(args: argparse.Namespace) -> int:
    from zombietop.tui.dashboard import run_dashboard

    ctx = _context(args)
    return await run_dashboard(
        ctx.config,
        ctx.db,
        read_only=args.read_only,
        wall=args.wall,
        refresh=args.refresh,
        sources=ctx.sources,
    )


def cmd_config(args: argparse.Namespace) -> int:
    if args.config_command == "init":
        target = (
            Path(args.path) if args.path else resolve_config_path(None) or _default_config_target()
        )
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


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        metavar="PATH|URL",
        help="the store: a SQLite file or a postgresql:// URL "
        "(default: $ZOMBIETOP_DB, [store] path, or the XDG state dir)",
    )
    common.add_argument(
        "--source",
        action="append",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="also watch an engine's database, read-only (repeatable): "
        "airflow+sqlite:///PATH or airflow+postgresql://USER@HOST/DB",
    )
    common.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="config file (default: $ZOMBIETOP_CONFIG or ~/.config/zombietop/config.toml)",
    )
    parser = Parser(
        prog="zombietop",
        description="top for zombie jobs: find tasks that say running but are not.",
        epilog="Exit status: `status` follows the Nagios plugin API (0 OK, 1 WARNING, "
        "2 CRITICAL, 3 UNKNOWN); every other command exits 0 on success and 2 on a usage "
        "error or a failure.",
        parents=[common],
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

    status = sub.add_parser(
        "status",
        parents=[common],
        help="print one snapshot; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (Nagios)",
        description="Print one snapshot of the store, for scripts and monitoring systems.",
        epilog=STATUS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        "(for node_exporter's textfile collector)",
    )
    status.add_argument(
        "--output",
        type=Path,
        metavar="PATH",
        help="with --prometheus: write to PATH atomically (e.g. "
        "/var/lib/prometheus/node-exporter/zombietop.prom) instead of stdout",
    )
    status.add_argument(
        "--all", action="store_true", help="include every finished task, not just recent ones"
    )
    status.set_defaults(handler=cmd_status)

    init = sub.add_parser("init", parents=[common], help="create (or upgrade) the store")
    init.set_defaults(handler=cmd_init)

    beat = sub.add_parser("beat", parents=[common], help="record one heartbeat from a shell script")
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

    config = sub.add_parser("config", parents=[common], help="write or check a config file")
    config_sub = config.add_subparsers(dest="config_command", metavar="init|check", required=True)
    config_init = config_sub.add_parser("init", help="write the defaults (tomli-w)")
    config_init.add_argument(
        "path", nargs="?", help="where (default: ~/.config/zombietop/config.toml)"
    )
    config_init.add_argument("--force", action="store_true", help="overwrite an existing file")
    config_check = config_sub.add_parser("check", help="validate a config file")
    config_check.add_argument(
        "path", nargs="?", help="the file (default: the one zombietop would use)"
    )
    config.set_defaults(handler=cmd_config)

    from zombietop.tui.commands import add_commands  # run, resume, discard, kill

    add_commands(sub, common)

    from zombietop.tui.oncall_cli import add_parser as oncall_parser  # ack, silence, ...

    oncall_parser(sub, common)

    from zombietop.tui.demo import add_parser as demo_parser

    demo_parser(sub, common)
    return parser


def _eta(text: str) -> str:
    try:
        parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def main(argv: Sequence[str] | None = None) -> int:
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
        print(printable(f"zombietop: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
