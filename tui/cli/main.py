"""The ``zombietop`` command line. Every failure is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import select
import signal
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from zombietop import __version__
from zombietop.errors import ZombietopError
from zombietop.printable import ERROR_LIMIT, bounded
from zombietop.tui.cli import dashboard
from zombietop.tui.cli.context import EXIT_ERROR, Parser, source_flags, store_flags

COMMANDS: dict[str, tuple[str, ...]] = {
    "zombietop.tui.cli.status": ("status",),
    "zombietop.tui.cli.init": ("init",),
    "zombietop.tui.cli.beat": ("beat",),
    "zombietop.tui.cli.watch": ("watch",),
    "zombietop.tui.cli.agent": ("agent",),
    "zombietop.tui.cli.config_cmd": ("config",),
    "zombietop.tui.cli.jobs": ("run", "resume", "discard", "kill"),
    "zombietop.tui.cli.history": ("history",),
    "zombietop.tui.cli.job_list": ("jobs",),
    "zombietop.tui.cli.oncall": ("ack", "unack", "note", "silence", "silences", "unsilence"),
    "zombietop.tui.cli.handover": ("handover", "incident"),
    "zombietop.tui.cli.serve": ("serve",),
    "zombietop.tui.demo.command": ("demo",),
}
"""The modules of the subcommands, in the order ``zombietop --help`` lists them, and the
commands each registers with ``add_parser(sub, common)``. A command line that names one
imports only that module: each brings its own engine modules (the watchdog, the agent, the
runner), which ``zombietop status`` would otherwise load at every start for nothing."""


EXIT_EPILOG = """\
exit status: `status` follows the Nagios plugin API (0 OK, 1 WARNING,
2 CRITICAL, 3 UNKNOWN); `run` exits with its command's status; `resume`,
`discard` and `kill` exit 1 when the action was not done (refused, not
confirmed, or left for another host's agent). Every other command exits 0 when
it did what was asked or there was nothing to do (as `unack` of a task with no
ack), and 2 on a usage error or a failure.

`zombietop COMMAND --help` says what each command does, with an example."""


def build_parser(command: str | None = None, *, commands: bool = True) -> Parser:
    """The parser of every command, or of ``command``'s module only when it names one; with
    ``commands=False``, of the dashboard alone (its flags, and no subcommand's module)."""
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
    dashboard.add_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = sub
    for module in _modules(command) if commands else []:
        module.add_parser(sub, common)
    return parser


def _modules(command: str | None) -> list[ModuleType]:
    names = [name for name, commands in COMMANDS.items() if command in commands] or COMMANDS
    return [importlib.import_module(name) for name in names]


def command_named(argv: Sequence[str] | None) -> str | None:
    """The command ``argv`` names (its first word that is not a top-level flag or a flag's
    value), or None for none: the dashboard, ``--help``, or a misspelt one."""
    finder = _Finder(add_help=False, parents=[store_flags(), source_flags()])
    dashboard.add_flags(finder)
    finder.add_argument("command", nargs="?")
    try:
        found, _ = finder.parse_known_args(argv)
    except _Misused:  # a top-level flag misused: the whole parser says how
        return None
    return found.command if isinstance(found.command, str) else None


class _Misused(Exception):
    pass


class _Finder(argparse.ArgumentParser):
    """A parser that only looks: it raises where argparse would print and exit."""

    def error(self, message: str) -> NoReturn:
        raise _Misused(message)


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
    command = command_named(argv)
    # The dashboard (no command) loads no subcommand's module; its --help lists them all.
    asked_help = any(arg in ("-h", "--help") for arg in (sys.argv[1:] if argv is None else argv))
    parser = build_parser(command, commands=command is not None or asked_help)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # Left over by a subcommand's parser: the error (and its exit status) is that command's.
        # The command's name comes from argv: `run` keeps its own argv in `args.command`.
        named = parser.commands.choices.get(command or "", parser)
        named.error(f"unrecognized arguments: {' '.join(unknown)}")
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
