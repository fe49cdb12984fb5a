"""What every command starts from: the config, the store, the sources, and the exit statuses."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from zombietop.config import Config, SourceSettings, load_config, resolve_config_path
from zombietop.durations import parse_duration
from zombietop.locations import SOURCES_ENV, default_store_path, store_location
from zombietop.sources import check_source_url
from zombietop.store import Store, open_store

EXIT_OK, EXIT_NOT_DONE, EXIT_ERROR = 0, 1, 2
"""Done; asked but not (yet) done (a kill an agent must carry out); failed or misused."""
EXIT_UNKNOWN = 3
"""``status`` speaks the Nagios plugin API: a usage error there is UNKNOWN, not 2."""

P = TypeVar("P", bound=argparse.ArgumentParser)


class Parser(argparse.ArgumentParser):
    """argparse, with the exit status of a usage error chosen per command."""

    usage_exit = EXIT_ERROR
    commands: argparse._SubParsersAction[Parser]
    """The subcommands' parsers, on the top-level parser."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(self.usage_exit, f"{self.prog}: error: {message}\n")


def duration(text: str) -> float:
    """The argparse type of a duration flag (``90s``, ``30m``, ``1h30m``): its seconds."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def store_flags() -> argparse.ArgumentParser:
    """``--db`` and ``--config``, for the commands that open the store or read the config."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        metavar="PATH|URL",
        help="the store: a SQLite file or a postgresql:// URL "
        "(default: $ZOMBIETOP_DB, [store] path, or the XDG state dir)",
    )
    flags.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="config file (default: $ZOMBIETOP_CONFIG or ~/.config/zombietop/config.toml)",
    )
    return flags


def source_flags() -> argparse.ArgumentParser:
    """``--source``, only for the commands that read engines' databases: elsewhere it would be
    taken and ignored."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--source",
        action="append",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="also read an engine's tasks from its database, read-only (repeatable), e.g. "
        "airflow+sqlite:///PATH or airflow+postgresql://USER@HOST/DB",
    )
    return flags


def add_command(
    sub: argparse._SubParsersAction[P],
    name: str,
    *,
    summary: str,
    about: str,
    examples: tuple[str, ...],
    **options: Any,
) -> P:
    """Register one subcommand: ``summary`` is its line in ``zombietop --help``; ``about`` and
    ``examples`` (command lines, without the prompt) open its own ``--help``."""
    heading = "examples:" if len(examples) > 1 else "example:"
    text = "\n\n".join(
        [textwrap.fill(about, width=79), heading + "".join(f"\n  {line}" for line in examples)]
    )
    return sub.add_parser(
        name,
        help=summary,
        description=text,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **options,
    )


@dataclass(frozen=True, slots=True)
class Context:
    """What every command needs: the validated config and where the store is."""

    config: Config
    db: Path | str
    """A SQLite file or a ``postgresql://`` URL."""
    sources: tuple[SourceSettings, ...] = ()
    """``[[sources]]``, every ``--source`` and ``ZOMBIETOP_SOURCES``: engines' databases
    watched read-only."""


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


async def open_or_create(location: Path | str) -> Store:
    """Open the store at ``location``, creating it when it is missing; say where a new one is,
    once, on stderr, since a store nobody watches is easy to make by a typo."""
    store = await open_store(location, create=True)
    if store.created:
        print(f"zombietop: created a new store at {store.describe()}", file=sys.stderr)
    return store


def context_of(args: argparse.Namespace) -> Context:
    """The config (``--config``), store (``--db``) and sources (``--source``) a command names."""
    config = load_config(resolve_config_path(getattr(args, "config", None)))
    urls = [*getattr(args, "source", []), *os.environ.get(SOURCES_ENV, "").split()]
    flags = tuple(SourceSettings(url=check_source_url(url)) for url in urls)
    return Context(
        config=config,
        db=resolve_store_path(getattr(args, "db", None), config),
        sources=(*config.sources, *flags),
    )
