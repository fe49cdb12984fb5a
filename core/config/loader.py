"""Find the config file, read it, and build one checked ``Config`` from it."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from zombietop.config.limits import read_limits
from zombietop.config.otel import read_otel
from zombietop.config.sections import (
    read_agent,
    read_keep_finished,
    read_monitor,
    read_mouse,
    read_notify,
    read_oncall,
    read_schedules,
    read_source_entries,
    read_store_path,
    read_watch,
)
from zombietop.config.serve import read_serve
from zombietop.config.settings import (
    Config,
)
from zombietop.config.values import (
    section_table,
    unknown_key,
)
from zombietop.config.views import read_views
from zombietop.errors import ConfigError, NotARegularFile
from zombietop.locations import store_location
from zombietop.private import read_regular

CONFIG_LIMIT = 1024 * 1024
"""The largest config file zombietop reads, in bytes: the defaults are about 3 KiB."""


SECTIONS = (
    "store",
    "monitor",
    "watch",
    "notify",
    "agent",
    "oncall",
    "schedules",
    "thresholds",
    "timeouts",
    "history",
    "step_types",
    "sources",
    "serve",
    "views",
    "otel",
)


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "zombietop" / "config.toml"


def resolve_config_path(explicit: str | None) -> Path | None:
    """Pick the config file: the flag, then ``ZOMBIETOP_CONFIG``, then the XDG file if present."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("ZOMBIETOP_CONFIG")
    if env:
        return Path(env)
    fallback = default_config_path()
    return fallback if fallback.exists() else None


def load_config(path: Path | None) -> Config:
    """Read, merge and validate a config file; ``None`` gives the validated built-in defaults."""
    if path is None:
        return _build({}, None)
    try:
        raw, info = read_regular(path, limit=CONFIG_LIMIT)
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such config file; create one with `zombietop config init {path}`"
        ) from None
    except NotARegularFile as exc:
        raise ConfigError(
            f"{path}: cannot read it as a config: it {exc.problem}. A config is a TOML file of "
            f"at most {CONFIG_LIMIT // 1024**2} MiB (the defaults are about 3 KiB): give the path "
            "of one, or write one with `zombietop config init PATH`"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config ({exc.strerror})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: not valid TOML ({exc}); fix it, or write fresh defaults with "
            f"`zombietop config init --force {path}`"
        ) from None
    except RecursionError:
        # tomllib recurses once per level of nesting: thousands of levels exhaust the stack.
        raise ConfigError(
            f"{path}: nested too deeply to be a zombietop config (arrays or tables within "
            "each other thousands of levels down); fix it, or write fresh defaults with "
            f"`zombietop config init --force {path}`"
        ) from None
    return replace(_build(data, path), written_at=info.st_mtime)


def _build(data: Mapping[str, Any], path: Path | None) -> Config:
    """Check every section of ``data`` (read from ``path``) in turn, and build the config."""
    for section in data:
        if section not in SECTIONS:
            raise unknown_key(path, "", section, list(SECTIONS))
    defaults, step_types = read_limits(path, data)
    store = section_table(path, data, "store")
    store_path = read_store_path(path, store)
    monitor_table = section_table(path, data, "monitor")
    monitor = read_monitor(path, monitor_table)
    keep_finished = read_keep_finished(path, store, monitor["finished_window"])

    return Config(
        path=path,
        defaults=defaults,
        step_types=step_types,
        store_path=store_location(store_path) if store_path else None,
        keep_finished=keep_finished,
        refresh=monitor["refresh"],
        finished_window=monitor["finished_window"],
        mouse=read_mouse(path, monitor_table),
        copy_lines=int(monitor["copy_lines"]),
        read_at_most=int(monitor["read_at_most"]),
        watch=read_watch(path, section_table(path, data, "watch")),
        notify=read_notify(path, section_table(path, data, "notify")),
        agent=read_agent(path, section_table(path, data, "agent")),
        oncall=read_oncall(path, section_table(path, data, "oncall")),
        schedules=read_schedules(path, section_table(path, data, "schedules")),
        sources=read_source_entries(path, data.get("sources", [])),
        serve=read_serve(path, section_table(path, data, "serve")),
        views=read_views(path, section_table(path, data, "views")),
        otel=read_otel(path, section_table(path, data, "otel")),
    )
