"""What every command starts from: the config, the store, the sources, and the exit statuses."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from zombietop.config import Config, SourceSettings, load_config, resolve_config_path
from zombietop.locations import (
    SOURCES_ENV,
    check_source_url,
    default_store_path,
    store_location,
)

EXIT_OK, EXIT_NOT_DONE, EXIT_ERROR = 0, 1, 2
"""Done; asked but not (yet) done (a kill an agent must carry out); failed or misused."""
EXIT_UNKNOWN = 3
"""``status`` speaks the Nagios plugin API: a usage error there is UNKNOWN, not 2."""


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
