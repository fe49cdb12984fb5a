"""Thresholds and layered timeouts: load, merge per step type, validate, say where each came from.

Durations are parsed here, once, and are plain float seconds everywhere else.
"""

from __future__ import annotations

import difflib
import os
import tomllib
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from zombietop.bounds import BOUNDS
from zombietop.durations import format_duration, parse_duration
from zombietop.errors import ConfigError, NotARegularFile, SourceError
from zombietop.extras import require
from zombietop.locations import store_location
from zombietop.private import read_regular
from zombietop.redact import redact_url

DEFAULT_SOURCE = "default"
CONFIG_LIMIT = 1024 * 1024
"""The largest config file zombietop reads, in bytes: the defaults are about 3 KiB."""

THRESHOLD_DEFAULTS: dict[str, float] = {
    "heartbeat_interval": 10.0,
    "heartbeat_timeout": 120.0,
    "lease_ttl": 300.0,
    "progress_timeout": 1800.0,
    "start_grace": 60.0,
}
TIMEOUT_DEFAULTS: dict[str, float] = {
    "request": 90.0,
    "stage": 900.0,
    "task": 21600.0,
    "kill_grace": 30.0,
}
DURATION_KEYS = {
    **{k: "thresholds" for k in THRESHOLD_DEFAULTS},
    **{k: "timeouts" for k in TIMEOUT_DEFAULTS},
}
# Keys only a step type may set: how to resume or compensate work run by another engine.
STEP_ONLY_KEYS = (
    "resume_command",
    "compensate_command",
    "auto_retry",
    "max_retries",
    "retry_backoff",
)
MONITOR_DEFAULTS: dict[str, float] = {"refresh": 2.0, "finished_window": 3600.0}
STORE_DEFAULTS: dict[str, float] = {"keep_finished": 30 * 86400.0}
"""``[store] keep_finished``: how long a finished task stays (0: for ever); see retention."""
WATCH_DEFAULTS: dict[str, float] = {
    "interval": 30.0,
    "digest_every": 86400.0,
    "renotify": 1800.0,
}
ONCALL_DEFAULTS: dict[str, float] = {"ack_for": 7200.0, "max_silence": 7 * 86400.0}
SCHEDULE_GRACE = 300.0
STAGE_KILL_FACTOR = 2.0
NOTIFY_DEFAULTS: dict[str, float] = {"retry_backoff": 10.0, "timeout": 10.0}
NOTIFY_MAX_ATTEMPTS = 8
NOTIFY_DIGEST_AFTER = 20
"""``[notify] digest_after``: past this many task pages of one kind in one look, each group
(by health and host) goes as one digest instead of one page per task."""
METRICS_EXAMPLE = "127.0.0.1:9464"
"""Where ``[watch] metrics`` would serve: this host only, on the port Prometheus lists for us."""
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
    "step_types",
    "sources",
)
SOURCE_KEYS = ("url", "heartbeat_timeout")


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """One effective set of thresholds and timeouts (global, or a step type after merging)."""

    heartbeat_interval: float
    heartbeat_timeout: float
    lease_ttl: float
    progress_timeout: float
    start_grace: float
    request: float
    stage: float
    task: float
    kill_grace: float
    resume_command: tuple[str, ...] | None = None
    compensate_command: tuple[str, ...] | None = None
    auto_retry: bool = False
    max_retries: int = 3
    """With auto_retry: how many attempts in all before the watchdog leaves it to a human."""
    retry_backoff: float = 60.0
    """With auto_retry: wait before the first retry, doubling for each one after."""
    step_type: str | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    """Key -> where its value came from: ``default``, or a file and section."""

    def source(self, key: str) -> str:
        return self.sources.get(key, DEFAULT_SOURCE)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenAddress:
    """Where an HTTP endpoint listens: a host (or address) and a port (0: any free port)."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_listen(text: str) -> ListenAddress:
    """Read ``HOST:PORT``, ``[IPV6]:PORT`` or a bare ``PORT`` (which listens on loopback only).

    Raise ``ValueError`` saying what a good one looks like.
    """
    example = f"e.g. {METRICS_EXAMPLE} (this host only) or 0.0.0.0:9464 (every interface)"
    host, sep, port_text = text.strip().rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", text.strip()
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: put an IPv6 address in brackets, e.g. [::1]:9464")
    if not host or any(c.isspace() or c in "[]/" for c in host):
        raise ValueError(f"{text!r} is not HOST:PORT; give the host too, {example}")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 0 to 65535, {example}")
    return ListenAddress(host=host, port=int(port_text))


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchSettings:
    """``[watch]``: how the headless watchdog runs."""

    interval: float = WATCH_DEFAULTS["interval"]
    digest_every: float = WATCH_DEFAULTS["digest_every"]
    stage_kill_factor: float = STAGE_KILL_FACTOR
    """Kill a task still in one stage after this many stage timeouts; 0 never kills."""
    metrics: ListenAddress | None = None
    """Serve Prometheus metrics here while the watchdog runs; None serves none."""
    renotify: float = WATCH_DEFAULTS["renotify"]
    """Page an open incident nobody acked or silenced again after this long; 0 never does."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OnCallSettings:
    """``[oncall]``: acks and silences."""

    ack_for: float = ONCALL_DEFAULTS["ack_for"]
    """How long an ack lasts when nobody says (the dashboard's and ``zombietop ack``'s default)."""
    max_silence: float = ONCALL_DEFAULTS["max_silence"]
    """The longest a silence may last: every silence ends, so none is forgotten for good."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """``[schedules.NAME]``: a step expected to start at cron times."""

    name: str
    step: str
    cron: str
    """Five fields: minute hour day-of-month month day-of-week."""
    tz: str = "UTC"
    """An IANA zone the cron times are read in (so 02:30 stays 02:30 across a DST change)."""
    grace: float = SCHEDULE_GRACE
    """How long after a fire time a run may start before the schedule is missed."""
    max_runtime: float | None = None
    """A run still going after this long shows ``running_long`` (None: only overlap does)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifySettings:
    """``[notify]``: where pages go. Every configured channel gets every page."""

    command: tuple[str, ...] | None = None
    webhook: str | None = None
    apprise: tuple[str, ...] = ()
    retry_backoff: float = NOTIFY_DEFAULTS["retry_backoff"]
    timeout: float = NOTIFY_DEFAULTS["timeout"]
    max_attempts: int = NOTIFY_MAX_ATTEMPTS
    digest_after: int = NOTIFY_DIGEST_AFTER

    @property
    def configured(self) -> bool:
        return bool(self.command or self.webhook or self.apprise)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """``[agent]``: whom the agent on this host acts for besides its own user."""

    allow: tuple[str, ...] = ()
    """OS user names whose requests the agent carries out; its own user's always are."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSettings:
    """One ``[[sources]]`` entry (or ``--source URL``): an engine's database to watch read-only."""

    url: str
    heartbeat_timeout: float | None = None
    """None: the engine's own default (Airflow's task_instance_heartbeat_timeout, 300 s)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Everything zombietop reads from ``config.toml``."""

    path: Path | None
    defaults: Limits
    step_types: Mapping[str, Limits] = field(default_factory=dict)
    store_path: Path | str | None = None
    """A SQLite file, or a ``postgresql://`` URL (kept as a string)."""
    keep_finished: float = STORE_DEFAULTS["keep_finished"]
    """Seconds a finished task stays in the store before it is pruned (0: never pruned)."""
    refresh: float = MONITOR_DEFAULTS["refresh"]
    finished_window: float = MONITOR_DEFAULTS["finished_window"]
    watch: WatchSettings = field(default_factory=WatchSettings)
    notify: NotifySettings = field(default_factory=NotifySettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    oncall: OnCallSettings = field(default_factory=OnCallSettings)
    schedules: tuple[Schedule, ...] = ()
    sources: tuple[SourceSettings, ...] = ()
    written_at: float | None = None
    """When the config file was last written (its mtime), None without one: a schedule it
    holds cannot have been configured later, so its fire times since then are judged."""

    def limits_for(self, step_type: str | None) -> Limits:
        """Return the effective limits for a step type (the global set when it has none)."""
        if step_type is not None and step_type in self.step_types:
            return self.step_types[step_type]
        return self.defaults


def default_limits() -> Limits:
    values = {**THRESHOLD_DEFAULTS, **TIMEOUT_DEFAULTS}
    return Limits(
        heartbeat_interval=values["heartbeat_interval"],
        heartbeat_timeout=values["heartbeat_timeout"],
        lease_ttl=values["lease_ttl"],
        progress_timeout=values["progress_timeout"],
        start_grace=values["start_grace"],
        request=values["request"],
        stage=values["stage"],
        task=values["task"],
        kill_grace=values["kill_grace"],
    )


def default_config() -> Config:
    return Config(path=None, defaults=default_limits())


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


def _where(path: Path | None) -> str:
    return str(path) if path is not None else "built-in defaults"


def _unknown(path: Path | None, section: str, key: str, known: list[str]) -> ConfigError:
    # A prefix ("resume" for "resume_command") beats a mere likeness ("request").
    hint = [k for k in known if k.startswith(key)] or difflib.get_close_matches(key, known, n=1)
    suggestion = f"did you mean {hint[0]!r}? " if hint else ""
    where = f"[{section}]" if section else "top level"
    return ConfigError(
        f"{_where(path)} {where}: unknown key {key!r}; {suggestion}"
        f"known keys: {', '.join(sorted(known))}"
    )


def _table(path: Path | None, data: Mapping[str, Any], section: str) -> Mapping[str, Any]:
    value = data.get(section, {})
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{_where(path)}: [{section}] must be a table, not {type(value).__name__}"
        )
    return value


def _given(value: Any) -> str:
    """A value as the config file spells it: ``"1ms"``, ``1000000000000``."""
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _check_bound(
    path: Path | None, section: str, key: str, value: Any, number: float, family: str
) -> None:
    problem = BOUNDS[family][key].problem(number)
    if problem is not None:
        raise ConfigError(f"{_where(path)} [{section}]: {key} = {_given(value)} {problem}")


def _duration(
    path: Path | None, section: str, key: str, value: Any, *, family: str, zero: bool = False
) -> float:
    """Read a duration and check it against its bound (``BOUNDS[family][key]``); with
    ``zero``, 0 also passes: it turns the setting off."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(
            f'{_where(path)} [{section}]: {key} must be a duration such as "90s", not {value!r}'
        )
    try:
        seconds = parse_duration(value) if isinstance(value, str) else float(value)
    except ValueError as exc:
        raise ConfigError(f"{_where(path)} [{section}]: {key}: {exc}") from None
    if seconds < 0 or (seconds == 0 and not zero):
        allowed = "zero (off) or longer" if zero else "longer than zero"
        raise ConfigError(f"{_where(path)} [{section}]: {key} must be {allowed}, not {value!r}")
    if not (zero and seconds == 0):
        _check_bound(path, section, key, value, seconds, family)
    return seconds


def _whole(path: Path | None, section: str, key: str, value: Any, *, family: str) -> int:
    minimum = int(BOUNDS[family][key].low)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(
            f"{_where(path)} [{section}]: {key} must be a whole number >= {minimum}, not {value!r}"
        )
    _check_bound(path, section, key, value, value, family)
    return value


def _command(path: Path | None, section: str, key: str, value: Any) -> tuple[str, ...]:
    example = '["my-engine", "resume", "{task_id}"]'
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{_where(path)} [{section}]: {key} must be a non-empty list of strings "
            f"(an argument list, never a shell string), e.g. {example}"
        )
    if not value[0].strip():
        raise ConfigError(
            f"{_where(path)} [{section}]: {key} = {_given(value[0])}, ...: its first string is "
            f"the program to run and must name one, e.g. {example}"
        )
    if any("\x00" in v for v in value):
        raise ConfigError(
            f"{_where(path)} [{section}]: {key} holds a NUL character, which no program can "
            "take in its arguments; remove it"
        )
    return tuple(value)


def _apply(
    base: Limits, path: Path | None, section: str, table: Mapping[str, Any], allowed: list[str]
) -> Limits:
    changes: dict[str, Any] = {}
    sources = dict(base.sources)
    label = f"{_where(path)} [{section}]"
    for key, value in table.items():
        if key not in allowed:
            raise _unknown(path, section, key, allowed)
        if key in DURATION_KEYS:
            changes[key] = _duration(path, section, key, value, family="limits")
        elif key == "retry_backoff":
            changes[key] = _duration(path, section, key, value, family="step_types")
        elif key == "max_retries":
            changes[key] = _whole(path, section, key, value, family="step_types")
        elif key == "auto_retry":
            if not isinstance(value, bool):
                raise ConfigError(f"{label}: auto_retry must be true or false, not {value!r}")
            changes[key] = value
        else:
            changes[key] = _command(path, section, key, value)
        sources[key] = label
    return replace(base, **changes, sources=sources)


def _build(data: Mapping[str, Any], path: Path | None) -> Config:
    for section in data:
        if section not in SECTIONS:
            raise _unknown(path, "", section, list(SECTIONS))
    limits = default_limits()
    limits = _apply(
        limits, path, "thresholds", _table(path, data, "thresholds"), list(THRESHOLD_DEFAULTS)
    )
    limits = _apply(
        limits, path, "timeouts", _table(path, data, "timeouts"), list(TIMEOUT_DEFAULTS)
    )
    validate(limits, path, None)

    step_types: dict[str, Limits] = {}
    allowed = [*DURATION_KEYS, *STEP_ONLY_KEYS]
    for name, table in _table(path, data, "step_types").items():
        section = f"step_types.{name}"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{_where(path)}: [{section}] must be a table of overrides")
        merged = _apply(replace(limits, step_type=name), path, section, table, allowed)
        validate(merged, path, name)
        step_types[name] = merged

    store = _table(path, data, "store")
    for key in store:
        if key not in ("path", *STORE_DEFAULTS):
            raise _unknown(path, "store", key, ["path", *STORE_DEFAULTS])
    store_path = store.get("path")
    if store_path is not None and (not isinstance(store_path, str) or not store_path):
        raise ConfigError(f"{_where(path)} [store]: path must be a non-empty string")

    monitor = _table(path, data, "monitor")
    values = dict(MONITOR_DEFAULTS)
    for key, value in monitor.items():
        if key not in MONITOR_DEFAULTS:
            raise _unknown(path, "monitor", key, list(MONITOR_DEFAULTS))
        values[key] = _duration(path, "monitor", key, value, family="monitor")
    keep_finished = _keep_finished(path, store, values["finished_window"])

    return Config(
        path=path,
        defaults=limits,
        step_types=step_types,
        store_path=store_location(store_path) if store_path else None,
        keep_finished=keep_finished,
        refresh=values["refresh"],
        finished_window=values["finished_window"],
        watch=_watch(path, _table(path, data, "watch")),
        notify=_notify(path, _table(path, data, "notify")),
        agent=_agent(path, _table(path, data, "agent")),
        oncall=_oncall(path, _table(path, data, "oncall")),
        schedules=_schedules(path, _table(path, data, "schedules")),
        sources=_sources(path, data.get("sources", [])),
    )


def _keep_finished(path: Path | None, store: Mapping[str, Any], window: float) -> float:
    """``[store] keep_finished``: zero (keep every task) or at least ``[monitor]
    finished_window``, so that no task leaves the store while the dashboard still shows it."""
    if "keep_finished" not in store:
        return max(STORE_DEFAULTS["keep_finished"], window)
    value = store["keep_finished"]
    keep = _duration(path, "store", "keep_finished", value, family="store", zero=True)
    if 0 < keep < window:
        raise ConfigError(
            f"{_where(path)} [store]: keep_finished = {value!r} must be at least [monitor] "
            f'finished_window = "{format_duration(window)}" (or "0s": keep every task), '
            "so that no finished task leaves the store while dashboards still show it"
        )
    return keep


def _agent(path: Path | None, table: Mapping[str, Any]) -> AgentSettings:
    for key in table:
        if key != "allow":
            raise _unknown(path, "agent", key, ["allow"])
    allow = table.get("allow", [])
    if not isinstance(allow, list) or not all(
        isinstance(name, str) and name and name.strip() == name and ":" not in name
        for name in allow
    ):
        raise ConfigError(
            f"{_where(path)} [agent]: allow must be a list of OS user names such as "
            f'["alice", "deploy"], not {allow!r}'
        )
    return AgentSettings(allow=tuple(allow))


def _sources(path: Path | None, entries: Any) -> tuple[SourceSettings, ...]:
    # Imported only for a config that names sources: a job reads its config too, and needs none.
    from zombietop.sources import check_source_url

    example = '[[sources]]\nurl = "airflow+postgresql://zombietop@db/airflow"'
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise ConfigError(
            f"{_where(path)}: sources must be an array of tables, one per source:\n{example}"
        )
    found = []
    for n, entry in enumerate(entries, 1):
        section = f"sources #{n}"
        for key in entry:
            if key not in SOURCE_KEYS:
                raise _unknown(path, section, key, list(SOURCE_KEYS))
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise ConfigError(f"{_where(path)} [{section}]: url is required, e.g.\n{example}")
        try:
            check_source_url(url)
        except SourceError as exc:
            raise ConfigError(f"{_where(path)} [{section}]: {exc}") from None
        timeout = entry.get("heartbeat_timeout")
        found.append(
            SourceSettings(
                url=url,
                heartbeat_timeout=None
                if timeout is None
                else _duration(path, section, "heartbeat_timeout", timeout, family="sources"),
            )
        )
    return tuple(found)


def _watch(path: Path | None, table: Mapping[str, Any]) -> WatchSettings:
    known = [*WATCH_DEFAULTS, "stage_kill_factor", "metrics"]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise _unknown(path, "watch", key, known)
        if key == "metrics":
            if not isinstance(value, str):
                raise ConfigError(
                    f"{_where(path)} [watch]: metrics must be a string such as "
                    f'"{METRICS_EXAMPLE}", not {value!r}'
                )
            try:
                values[key] = parse_listen(value)
            except ValueError as exc:
                raise ConfigError(f"{_where(path)} [watch]: metrics: {exc}") from None
        elif key == "stage_kill_factor":
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not (value == 0 or value > 1)
            ):
                raise ConfigError(
                    f"{_where(path)} [watch]: stage_kill_factor must be 0 (never kill) or a number "
                    f"above 1 (kill at that many stage timeouts), not {value!r}"
                )
            _check_bound(path, "watch", key, value, value, "watch")
            values[key] = float(value)
        elif key == "renotify":
            values[key] = _duration(path, "watch", key, value, family="watch", zero=True)
        else:
            values[key] = _duration(path, "watch", key, value, family="watch")
    return WatchSettings(**values)


def _oncall(path: Path | None, table: Mapping[str, Any]) -> OnCallSettings:
    values: dict[str, float] = {}
    for key, value in table.items():
        if key not in ONCALL_DEFAULTS:
            raise _unknown(path, "oncall", key, list(ONCALL_DEFAULTS))
        values[key] = _duration(path, "oncall", key, value, family="oncall")
    settings = OnCallSettings(**values)
    if settings.ack_for > settings.max_silence:
        raise ConfigError(
            f'{_where(path)} [oncall]: ack_for = "{format_duration(settings.ack_for)}" must be '
            f'at most max_silence = "{format_duration(settings.max_silence)}" '
            "(an ack is never meant to outlast the longest silence)"
        )
    return settings


SCHEDULE_KEYS = ["step", "cron", "tz", "grace", "max_runtime"]


def _schedules(path: Path | None, table: Mapping[str, Any]) -> tuple[Schedule, ...]:
    return tuple(_schedule(path, name, entry) for name, entry in table.items())


def _schedule(path: Path | None, name: str, table: Any) -> Schedule:
    section = f"schedules.{name}"
    label = f"{_where(path)} [{section}]"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{_where(path)}: [{section}] must be a table with step and cron")
    for key in table:
        if key not in SCHEDULE_KEYS:
            raise _unknown(path, section, key, SCHEDULE_KEYS)
    for key in ("step", "cron"):
        if key not in table:
            raise ConfigError(
                f'{label}: {key} is missing; a schedule needs step = "..." and cron = "m h dom mon '
                'dow", e.g. cron = "30 2 * * *"'
            )
        if not isinstance(table[key], str) or not table[key].strip():
            raise ConfigError(f"{label}: {key} must be a non-empty string, not {table[key]!r}")
    tz = table.get("tz", "UTC")
    zone = _zone(label, tz)
    cron = table["cron"].strip()
    _cron(label, cron, zone)
    grace = _duration(
        path, section, "grace", table.get("grace", SCHEDULE_GRACE), family="schedules"
    )
    max_runtime = table.get("max_runtime")
    return Schedule(
        name=name,
        step=table["step"],
        cron=cron,
        tz=tz,
        grace=grace,
        max_runtime=None
        if max_runtime is None
        else _duration(path, section, "max_runtime", max_runtime, family="schedules"),
    )


def _zone(label: str, tz: Any) -> zoneinfo.ZoneInfo:
    if not isinstance(tz, str) or not tz:
        raise ConfigError(f'{label}: tz must be an IANA zone name such as "Europe/Berlin"')
    try:
        return zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f'{label}: tz = {tz!r} is not an IANA time zone; use a name such as "UTC", '
            '"Europe/Berlin" or "America/New_York"'
        ) from None


def _cron(label: str, cron: str, zone: zoneinfo.ZoneInfo) -> None:
    fields = cron.split()
    if len(fields) != 5:
        raise ConfigError(
            f"{label}: cron = {cron!r} has {len(fields)} fields; give five: minute hour "
            'day-of-month month day-of-week, e.g. "30 2 * * *"'
        )
    # Imported here, not at the top: a job loads this module for its thresholds only, and
    # importing the SDK should not pay for the cron parser.
    from cronsim import CronSim, CronSimError

    try:
        CronSim(cron, datetime.now(zone))
    except CronSimError as exc:
        raise ConfigError(
            f"{label}: cron = {cron!r} is not a cron expression ({exc}); the five fields are "
            'minute hour day-of-month month day-of-week, e.g. "30 2 * * *"'
        ) from None


def _notify(path: Path | None, table: Mapping[str, Any]) -> NotifySettings:
    known = ["command", "webhook", "apprise", *NOTIFY_DEFAULTS, "max_attempts", "digest_after"]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise _unknown(path, "notify", key, known)
        if key == "command":
            values[key] = _command(path, "notify", key, value)
        elif key == "webhook":
            if not isinstance(value, str) or not value.startswith(("http://", "https://")):
                raise ConfigError(
                    f"{_where(path)} [notify]: webhook must be an http(s) URL, not "
                    + (repr(redact_url(value)) if isinstance(value, str) else repr(value))
                )
            values[key] = value
        elif key == "apprise":
            if not isinstance(value, list) or not all(
                isinstance(v, str) and "://" in v for v in value
            ):
                raise ConfigError(
                    f"{_where(path)} [notify]: apprise must be a list of apprise URLs such as "
                    '["pagerduty://KEY@ROUTING", "mailto://user:pass@example.com"]'
                )
            values[key] = tuple(value)
        elif key in ("max_attempts", "digest_after"):
            values[key] = _whole(path, "notify", key, value, family="notify")
        else:
            values[key] = _duration(path, "notify", key, value, family="notify")
    return NotifySettings(**values)


# (inner, outer, factor, strict, why): factor * inner must be < outer (or <= when not strict).
RULES: tuple[tuple[str, str, float, bool, str], ...] = (
    ("request", "stage", 1.0, True, "a request must time out before its stage does"),
    ("stage", "task", 1.0, True, "a stage must time out before its task does"),
    (
        "heartbeat_interval",
        "heartbeat_timeout",
        2.0,
        False,
        "a task must be able to miss one beat without being called stalled",
    ),
    (
        "heartbeat_timeout",
        "lease_ttl",
        1.0,
        True,
        "a silent task must be quarantined before its lease can be reclaimed",
    ),
    ("heartbeat_timeout", "progress_timeout", 1.0, True, "silence must be noticed before slowness"),
    ("kill_grace", "stage", 1.0, True, "a kill's grace must fit inside a stage"),
)


def validate(limits: Limits, path: Path | None, step_type: str | None) -> None:
    """Raise ``ConfigError`` naming the file, section, both keys and values of a broken rule."""
    section = f"step_types.{step_type}" if step_type else None
    for inner, outer, factor, strict, why in RULES:
        a = getattr(limits, inner)
        b = getattr(limits, outer)
        ok = factor * a < b if strict else factor * a <= b
        if ok:
            continue
        where = section or DURATION_KEYS[inner]
        scaled = f" x {factor:g}" if factor != 1.0 else ""
        relation = "shorter than" if strict else "at most"
        raise ConfigError(
            f'{_where(path)} [{where}]: {inner} = "{format_duration(a)}"{scaled}'
            f"{_origin(limits, inner, path, where)} must be {relation} "
            f'{outer} = "{format_duration(b)}"{_origin(limits, outer, path, where)} ({why})'
        )


def _origin(limits: Limits, key: str, path: Path | None, section: str) -> str:
    source = limits.source(key)
    if source == f"{_where(path)} [{section}]":
        return ""
    if source == DEFAULT_SOURCE:
        return " (default)"
    return " (from [" + source.rsplit("[", 1)[-1] + ")"


def render_defaults() -> str:
    """Return the default config as TOML (written with tomli-w), with comments between sections."""
    require("`zombietop config init`", "tomli_w")
    import tomli_w

    thresholds = {k: format_duration(v) for k, v in THRESHOLD_DEFAULTS.items()}
    timeouts = {k: format_duration(v) for k, v in TIMEOUT_DEFAULTS.items()}
    monitor = {k: format_duration(v) for k, v in MONITOR_DEFAULTS.items()}
    watch: dict[str, Any] = {k: format_duration(v) for k, v in WATCH_DEFAULTS.items()}
    watch["stage_kill_factor"] = STAGE_KILL_FACTOR
    watch["renotify"] = watch.pop("renotify")
    oncall = {k: format_duration(v) for k, v in ONCALL_DEFAULTS.items()}
    store = {k: format_duration(v) for k, v in STORE_DEFAULTS.items()}
    return "\n".join(
        [
            '# zombietop configuration. Durations: ms, s, m, h, d ("90s", "15m", "1h30m").',
            "# `zombietop config check` validates this file; unknown keys are errors.",
            "",
            "# The store: path is a SQLite file or a postgresql:// URL (--db and $ZOMBIETOP_DB",
            "# come first; with none, a file in the XDG state dir). Finished tasks older than",
            "# keep_finished leave it with their events and heartbeats, a few at a time, unless",
            "# something still needs them (an open incident, a task waiting behind them, a kill,",
            "# an ack); the watchdog prunes, or the agents where no watchdog runs. At least",
            '# [monitor] finished_window; "0s": keep every task.',
            tomli_w.dumps({"store": store}) + '# path = "/var/lib/zombietop/zombietop.db"\n',
            "# How often the dashboard and the watchdog poll the store, and how long",
            "# finished tasks stay on screen.",
            tomli_w.dumps({"monitor": monitor}),
            "# The headless watchdog (`zombietop watch`): how often it looks, how often it sends",
            "# the digest of spinning tasks, after how many stage timeouts in one stage it kills",
            "# gracefully (the first overrun only pages; 0 never kills), how often an open",
            '# incident nobody acked or silenced is paged again ("2nd notice"; "0s": never), and',
            "# where it serves Prometheus metrics (HOST:PORT, at /metrics; off unless set).",
            tomli_w.dumps({"watch": watch}) + f'# metrics = "{METRICS_EXAMPLE}"\n',
            "# The on-call loop: how long an ack lasts unless told (`zombietop ack --for`, the",
            "# dashboard's `a`), and the longest a silence may be set for (every silence ends).",
            tomli_w.dumps({"oncall": oncall}),
            "# Schedules: a step expected to start at cron times (five fields, read in tz, an",
            "# IANA zone, default UTC). No task of the step started within grace of a fire time:",
            "# missed (paged like a stall, status exits 2). A run still going at the next fire",
            "# time, or past max_runtime (optional): running_long.",
            "# [schedules.nightly-export]",
            '# step = "export"',
            '# cron = "30 2 * * *"',
            '# tz = "Europe/Berlin"',
            '# grace = "10m"',
            '# max_runtime = "3h"',
            "",
            "# Where pages go; every channel configured gets every page, retried with backoff.",
            "# [notify]",
            '# command = ["/usr/local/bin/page-oncall"]  # the line on stdin, in $ZOMBIETOP_PAGE',
            '# webhook = "https://hooks.slack.com/services/..."   # JSON POST, {"text": line}',
            '# apprise = ["pagerduty://KEY@ROUTING", "mailto://user:pass@example.com"]',
            "# digest_after = 20  # past this many task pages at one look: digests by health, host",
            "",
            "# `zombietop agent` carries out what other hosts ask only for its own OS user and",
            "# for the users listed here; every request it refuses is an event.",
            "# [agent]",
            '# allow = ["deploy"]',
            "",
            "# Detection. heartbeat_interval: how often `zombietop run` and the SDK beat, renew.",
            "# No heartbeat for heartbeat_timeout -> stalled; lease not renewed for lease_ttl ->",
            "# reclaimable; no progress for progress_timeout -> spinning; no first heartbeat",
            "# within start_grace -> stalled. Rules: heartbeat_interval x 2 <= heartbeat_timeout",
            "# < lease_ttl, and heartbeat_timeout < progress_timeout.",
            tomli_w.dumps({"thresholds": thresholds}),
            "# Layered budgets, inner strictly shorter than outer: request < stage < task.",
            "# A stage overrun pages and a second overrun kills (SIGTERM, kill_grace, SIGKILL);",
            "# a task overrun is only logged, because a checkpoint can resume it.",
            tomli_w.dumps({"timeouts": timeouts}),
            "# Per step type, any key above plus resume_command / compensate_command",
            "# (argument lists with {task_id} and {checkpoint}), and auto_retry = true for",
            "# idempotent work the watchdog may retry by itself (max_retries attempts in all,",
            "# retry_backoff before the first, doubling after):",
            "#",
            "# [step_types.export]",
            '# stage = "45m"',
            '# resume_command = ["my-engine", "resume", "{task_id}", "--from", "{checkpoint}"]',
            "",
        ]
    )


def write_defaults(path: Path, *, force: bool = False) -> None:
    """Write the default config to ``path``; refuse to overwrite unless ``force``."""
    if path.exists() and not path.is_file():
        # Writing to a FIFO would block until someone reads it, and a device is no config.
        raise ConfigError(f"{path} is not a regular file; give the path of a file to write")
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists; pass --force to overwrite it")
    text = render_defaults()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write config ({exc.strerror})") from None
