"""Thresholds and layered timeouts: load, merge per step type, validate, say where each came from.

Durations are parsed here, once, and are plain float seconds everywhere else. The package has a
module per concern: ``settings`` (the dataclasses and their defaults), ``values`` (one value
read and checked), ``limits`` (thresholds and timeouts, and the rules between them),
``sections`` (every other section), ``views`` (the dashboard's saved views), ``loader``
(the file) and ``defaults_file`` (``config init``). Import the names from here.
"""

from __future__ import annotations

from zombietop.config.defaults_file import render_defaults, write_defaults
from zombietop.config.limits import RULES, validate
from zombietop.config.loader import (
    CONFIG_LIMIT,
    SECTIONS,
    default_config_path,
    load_config,
    resolve_config_path,
)
from zombietop.config.sections import SCHEDULE_KEYS, SOURCE_KEYS
from zombietop.config.settings import (
    DURATION_KEYS,
    METRICS_EXAMPLE,
    MONITOR_DEFAULTS,
    NOTIFY_DEFAULTS,
    NOTIFY_DIGEST_AFTER,
    NOTIFY_MAX_ATTEMPTS,
    ONCALL_DEFAULTS,
    PAGERDUTY_KEY_ENV,
    PAGERDUTY_URL,
    SCHEDULE_GRACE,
    STAGE_KILL_FACTOR,
    STEP_ONLY_KEYS,
    STORE_DEFAULTS,
    WATCH_DEFAULTS,
    AgentSettings,
    Config,
    ListenAddress,
    NotifySettings,
    OnCallSettings,
    OtelSettings,
    PagerDutySettings,
    Schedule,
    ServeSettings,
    SourceSettings,
    View,
    WatchSettings,
    default_config,
    parse_listen,
)
from zombietop.config.views import VIEW_KEYS
from zombietop.errors import ConfigError
from zombietop.thresholds import (
    DEFAULT_SOURCE,
    THRESHOLD_DEFAULTS,
    TIMEOUT_DEFAULTS,
    Limits,
    default_limits,
)

__all__ = [
    "CONFIG_LIMIT",
    "DEFAULT_SOURCE",
    "DURATION_KEYS",
    "METRICS_EXAMPLE",
    "MONITOR_DEFAULTS",
    "NOTIFY_DEFAULTS",
    "NOTIFY_DIGEST_AFTER",
    "NOTIFY_MAX_ATTEMPTS",
    "ONCALL_DEFAULTS",
    "PAGERDUTY_KEY_ENV",
    "PAGERDUTY_URL",
    "RULES",
    "SCHEDULE_GRACE",
    "SCHEDULE_KEYS",
    "SECTIONS",
    "SOURCE_KEYS",
    "STAGE_KILL_FACTOR",
    "STEP_ONLY_KEYS",
    "STORE_DEFAULTS",
    "THRESHOLD_DEFAULTS",
    "TIMEOUT_DEFAULTS",
    "VIEW_KEYS",
    "WATCH_DEFAULTS",
    "AgentSettings",
    "Config",
    "ConfigError",
    "Limits",
    "ListenAddress",
    "NotifySettings",
    "OnCallSettings",
    "OtelSettings",
    "PagerDutySettings",
    "Schedule",
    "ServeSettings",
    "SourceSettings",
    "View",
    "WatchSettings",
    "default_config",
    "default_config_path",
    "default_limits",
    "load_config",
    "parse_listen",
    "render_defaults",
    "resolve_config_path",
    "validate",
    "write_defaults",
]
