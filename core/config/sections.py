"""Read the sections beside the thresholds and timeouts: [store] keep_finished, [watch],
[oncall], [schedules], [notify], [agent] and [[sources]]."""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from zombietop.config.settings import (
    COPY_LINES,
    METRICS_EXAMPLE,
    MONITOR_DEFAULTS,
    NOTIFY_DEFAULTS,
    ONCALL_DEFAULTS,
    PAGERDUTY_KEY_ENV,
    PAGERDUTY_URL,
    READ_AT_MOST,
    SCHEDULE_GRACE,
    STORE_DEFAULTS,
    WATCH_DEFAULTS,
    AgentSettings,
    NotifySettings,
    OnCallSettings,
    PagerDutySettings,
    Schedule,
    SourceSettings,
    WatchSettings,
    parse_listen,
)
from zombietop.config.values import (
    check_bound,
    read_command,
    read_duration,
    read_whole,
    unknown_key,
    where,
)
from zombietop.durations import format_duration
from zombietop.errors import ConfigError, SourceError
from zombietop.redact import redact_url

SOURCE_KEYS = ("url", "heartbeat_timeout")


def read_store_path(path: Path | None, store: Mapping[str, Any]) -> str | None:
    """``[store] path`` as written (None: not set); ``read_keep_finished`` reads the rest."""
    for key in store:
        if key not in ("path", *STORE_DEFAULTS):
            raise unknown_key(path, "store", key, ["path", *STORE_DEFAULTS])
    store_path = store.get("path")
    if store_path is not None and (not isinstance(store_path, str) or not store_path):
        raise ConfigError(f"{where(path)} [store]: path must be a non-empty string")
    return store_path


MONITOR_COUNTS = {"copy_lines": COPY_LINES, "read_at_most": READ_AT_MOST}
"""``[monitor]``'s keys that are whole numbers, and their defaults."""
MONITOR_SWITCHES = {"mouse": True}
"""``[monitor]``'s keys that are true or false, and their defaults."""


def read_monitor(path: Path | None, table: Mapping[str, Any]) -> dict[str, float]:
    """``[monitor]``: refresh and finished_window, in seconds, and copy_lines and read_at_most,
    counts (``read_mouse`` reads mouse)."""
    values = {**MONITOR_DEFAULTS, **{key: float(n) for key, n in MONITOR_COUNTS.items()}}
    for key, value in table.items():
        if key in MONITOR_SWITCHES:
            continue
        if key in MONITOR_COUNTS:
            values[key] = read_whole(path, "monitor", key, value, family="monitor")
            continue
        if key not in MONITOR_DEFAULTS:
            known = [*MONITOR_DEFAULTS, *MONITOR_COUNTS, *MONITOR_SWITCHES]
            raise unknown_key(path, "monitor", key, known)
        values[key] = read_duration(path, "monitor", key, value, family="monitor")
    return values


def read_mouse(path: Path | None, table: Mapping[str, Any]) -> bool:
    """``[monitor] mouse``: true (the default) or false."""
    value = table.get("mouse", MONITOR_SWITCHES["mouse"])
    if not isinstance(value, bool):
        raise ConfigError(
            f"{where(path)} [monitor]: mouse = {value!r} must be true or false (false leaves "
            "the mouse to the terminal, to select and copy text)"
        )
    return value


def read_keep_finished(path: Path | None, store: Mapping[str, Any], window: float) -> float:
    """``[store] keep_finished``: zero (keep every task) or at least ``[monitor]
    finished_window``, so that no task leaves the store while the dashboard still shows it."""
    if "keep_finished" not in store:
        return max(STORE_DEFAULTS["keep_finished"], window)
    value = store["keep_finished"]
    keep = read_duration(path, "store", "keep_finished", value, family="store", zero=True)
    if 0 < keep < window:
        raise ConfigError(
            f"{where(path)} [store]: keep_finished = {value!r} must be at least [monitor] "
            f'finished_window = "{format_duration(window)}" (or "0s": keep every task), '
            "so that no finished task leaves the store while dashboards still show it"
        )
    return keep


def read_agent(path: Path | None, table: Mapping[str, Any]) -> AgentSettings:
    """``[agent]``: the users the agent acts for."""
    for key in table:
        if key != "allow":
            raise unknown_key(path, "agent", key, ["allow"])
    allow = table.get("allow", [])
    if not isinstance(allow, list) or not all(
        isinstance(name, str) and name and name.strip() == name and ":" not in name
        for name in allow
    ):
        raise ConfigError(
            f"{where(path)} [agent]: allow must be a list of OS user names such as "
            f'["alice", "deploy"], not {allow!r}'
        )
    return AgentSettings(allow=tuple(allow))


def read_source_entries(path: Path | None, entries: Any) -> tuple[SourceSettings, ...]:
    """``[[sources]]``: each engine database to watch, its URL checked."""
    # Imported only for a config that names sources: a job reads its config too, and needs none.
    from zombietop.sources import check_source_url

    example = '[[sources]]\nurl = "airflow+postgresql://zombietop@db/airflow"'
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise ConfigError(
            f"{where(path)}: sources must be an array of tables, one per source:\n{example}"
        )
    found = []
    for n, entry in enumerate(entries, 1):
        section = f"sources #{n}"
        for key in entry:
            if key not in SOURCE_KEYS:
                raise unknown_key(path, section, key, list(SOURCE_KEYS))
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise ConfigError(f"{where(path)} [{section}]: url is required, e.g.\n{example}")
        try:
            check_source_url(url)
        except SourceError as exc:
            raise ConfigError(f"{where(path)} [{section}]: {exc}") from None
        timeout = entry.get("heartbeat_timeout")
        found.append(
            SourceSettings(
                url=url,
                heartbeat_timeout=None
                if timeout is None
                else read_duration(path, section, "heartbeat_timeout", timeout, family="sources"),
            )
        )
    return tuple(found)


def read_watch(path: Path | None, table: Mapping[str, Any]) -> WatchSettings:
    """``[watch]``: how the watchdog runs."""
    known = [*WATCH_DEFAULTS, "stage_kill_factor", "metrics", "group_by_upstream"]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise unknown_key(path, "watch", key, known)
        if key == "metrics":
            if not isinstance(value, str):
                raise ConfigError(
                    f"{where(path)} [watch]: metrics must be a string such as "
                    f'"{METRICS_EXAMPLE}", not {value!r}'
                )
            try:
                values[key] = parse_listen(value)
            except ValueError as exc:
                raise ConfigError(f"{where(path)} [watch]: metrics: {exc}") from None
        elif key == "stage_kill_factor":
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not (value == 0 or value > 1)
            ):
                raise ConfigError(
                    f"{where(path)} [watch]: stage_kill_factor must be 0 (never kill) or a number "
                    f"above 1 (kill at that many stage timeouts), not {value!r}"
                )
            check_bound(path, "watch", key, value, value, "watch")
            values[key] = float(value)
        elif key == "renotify":
            values[key] = read_duration(path, "watch", key, value, family="watch", zero=True)
        elif key == "group_by_upstream":
            if not isinstance(value, bool):
                raise ConfigError(
                    f"{where(path)} [watch]: group_by_upstream must be true or false, not {value!r}"
                )
            values[key] = value
        else:
            values[key] = read_duration(path, "watch", key, value, family="watch")
    return WatchSettings(**values)


def read_oncall(path: Path | None, table: Mapping[str, Any]) -> OnCallSettings:
    """``[oncall]``: how long acks and silences last."""
    values: dict[str, float] = {}
    for key, value in table.items():
        if key not in ONCALL_DEFAULTS:
            raise unknown_key(path, "oncall", key, list(ONCALL_DEFAULTS))
        values[key] = read_duration(path, "oncall", key, value, family="oncall")
    settings = OnCallSettings(**values)
    if settings.ack_for > settings.max_silence:
        raise ConfigError(
            f'{where(path)} [oncall]: ack_for = "{format_duration(settings.ack_for)}" must be '
            f'at most max_silence = "{format_duration(settings.max_silence)}" '
            "(an ack is never meant to outlast the longest silence)"
        )
    return settings


SCHEDULE_KEYS = ["step", "job", "cron", "tz", "grace", "max_runtime"]


def read_schedules(path: Path | None, table: Mapping[str, Any]) -> tuple[Schedule, ...]:
    """``[schedules.NAME]``: each schedule, its zone and cron checked."""
    return tuple(_schedule(path, name, entry) for name, entry in table.items())


def _schedule(path: Path | None, name: str, table: Any) -> Schedule:
    section = f"schedules.{name}"
    label = f"{where(path)} [{section}]"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where(path)}: [{section}] must be a table with step and cron")
    for key in table:
        if key not in SCHEDULE_KEYS:
            raise unknown_key(path, section, key, SCHEDULE_KEYS)
    if "step" in table and "job" in table:
        raise ConfigError(
            f'{label}: give one of step = "..." (the step its runs have) or job = "..." (the '
            "job its runs belong to, as in `zombietop run --job`), not both"
        )
    what = "job" if "job" in table else "step"
    for key in (what, "cron"):
        if key not in table:
            raise ConfigError(
                f'{label}: {key} is missing; a schedule needs step = "..." (or job = "...") and '
                'cron = "m h dom mon dow", e.g. cron = "30 2 * * *"'
            )
        if not isinstance(table[key], str) or not table[key].strip():
            raise ConfigError(f"{label}: {key} must be a non-empty string, not {table[key]!r}")
    tz = table.get("tz", "UTC")
    zone = _zone(label, tz)
    cron = table["cron"].strip()
    _cron(label, cron, zone)
    grace = read_duration(
        path, section, "grace", table.get("grace", SCHEDULE_GRACE), family="schedules"
    )
    max_runtime = table.get("max_runtime")
    return Schedule(
        name=name,
        step=table[what],
        job=table.get("job"),
        cron=cron,
        tz=tz,
        grace=grace,
        max_runtime=None
        if max_runtime is None
        else read_duration(path, section, "max_runtime", max_runtime, family="schedules"),
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


def read_notify(path: Path | None, table: Mapping[str, Any]) -> NotifySettings:
    """``[notify]``: the channels pages go to, and how they are retried."""
    known = [
        "command",
        "webhook",
        "apprise",
        "pagerduty",
        *NOTIFY_DEFAULTS,
        "max_attempts",
        "digest_after",
    ]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise unknown_key(path, "notify", key, known)
        if key == "command":
            values[key] = read_command(path, "notify", key, value)
        elif key == "webhook":
            if not isinstance(value, str) or not value.startswith(("http://", "https://")):
                raise ConfigError(
                    f"{where(path)} [notify]: webhook must be an http(s) URL, not "
                    + (repr(redact_url(value)) if isinstance(value, str) else repr(value))
                )
            values[key] = value
        elif key == "apprise":
            if not isinstance(value, list) or not all(
                isinstance(v, str) and "://" in v for v in value
            ):
                raise ConfigError(
                    f"{where(path)} [notify]: apprise must be a list of apprise URLs such as "
                    '["pagerduty://KEY@ROUTING", "mailto://user:pass@example.com"]'
                )
            values[key] = tuple(value)
        elif key == "pagerduty":
            values[key] = read_pagerduty(path, value)
        elif key in ("max_attempts", "digest_after"):
            values[key] = read_whole(path, "notify", key, value, family="notify")
        else:
            values[key] = read_duration(path, "notify", key, value, family="notify")
    return NotifySettings(**values)


def read_pagerduty(path: Path | None, table: object) -> PagerDutySettings:
    """``[notify.pagerduty]``: where the routing key is kept, and where events go.

    The key itself never sits in the config file (which is read by whoever runs zombietop,
    and shown by ``zombietop config``): a file of its own, 0600, or the environment.
    """
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where(path)} [notify]: pagerduty must be a table, [notify.pagerduty]")
    known = ["routing_key_file", "url"]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "routing_key":
            raise ConfigError(
                f"{where(path)} [notify.pagerduty]: the routing key is a secret and is not read "
                "from the config file; put it in a file only you can read (chmod 600) and name "
                f"it with routing_key_file, or set ${PAGERDUTY_KEY_ENV}"
            )
        if key not in known:
            raise unknown_key(path, "notify.pagerduty", key, known)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where(path)} [notify.pagerduty]: {key} must be a string")
        if key == "url":
            if not value.startswith(("http://", "https://")):
                raise ConfigError(
                    f"{where(path)} [notify.pagerduty]: url must be an http(s) URL such as "
                    f"{PAGERDUTY_URL}, not {redact_url(value)!r}"
                )
            values[key] = value
        else:
            values[key] = Path(value).expanduser()
    return PagerDutySettings(**values)
