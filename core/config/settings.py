"""The settings zombietop reads from config.toml, as frozen dataclasses, with their defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from zombietop.thresholds import (
    COUNT_KEYS,
    THRESHOLD_DEFAULTS,
    TIMEOUT_DEFAULTS,
    Limits,
    default_limits,
)

ZERO_OFF_KEYS = frozenset({"queue_timeout"})
"""Durations that 0 turns off."""
HISTORY_DEFAULTS: dict[str, float] = {
    "history_min_runs": 5,
    "slow_after": 2.0,
    "slow_min": 300.0,
    "too_fast_below": 0.1,
    "drift_after": 1.5,
    "drift_min": 60.0,
    "failing_after": 3.0,
    "failing_min_runs": 20,
}
"""``[history]``: how a run is judged against its job's successful runs (and per step type)."""
DURATION_KEYS = {
    **{k: "thresholds" for k in THRESHOLD_DEFAULTS if k not in COUNT_KEYS},
    **{k: "timeouts" for k in TIMEOUT_DEFAULTS},
}
# Keys only a step type may set: how to resume or compensate work run by another engine.
STEP_ONLY_KEYS = (
    "resume_command",
    "compensate_command",
    "auto_retry",
    "max_retries",
    "retry_backoff",
    "from_source",
    "page_on_failure",
    "runbook",
    "require_lease",
)
MONITOR_DEFAULTS: dict[str, float] = {"refresh": 2.0, "finished_window": 3600.0}
COPY_LINES = 50
"""``[monitor] copy_lines``: how many of a task's last output lines ``c`` copies."""
READ_AT_MOST = 20_000
"""``[monitor] read_at_most``: the most tasks a poll reads whole (``zombietop.judge.quiet``)."""
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
"""``[notify] digest_after``: when one round of the watchdog has more task pages of one kind
than this, each group (by health and host) goes as one digest, not as one page per task."""
METRICS_EXAMPLE = "127.0.0.1:9464"
"""Where ``[watch] metrics`` would serve: this host only, on the port Prometheus lists for us."""


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


# [serve] (zombietop serve) -------------------------------------------------------------------

SERVE_EXAMPLE = "127.0.0.1:8099"
"""Where ``zombietop serve`` listens by default: this host only."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    """``[serve]``: how ``zombietop serve`` answers pings over HTTP."""

    listen: ListenAddress = field(default_factory=lambda: parse_listen(SERVE_EXAMPLE))
    """Where to listen (``HOST:PORT``); off loopback, a ping key is required."""
    ping_key_file: Path | None = None
    """A file of ping keys, one a line, mode 0600; None: only ``$ZOMBIETOP_PING_KEY``."""
    body_limit: int = 100 * 1024
    """Bytes of a ping's body kept as the run's last output (its end)."""
    rate_limit: int = 10
    """Pings one job may send a minute; more are answered 429."""
    max_connections: int = 64
    """Connections open at once, every client together."""
    read_timeout: float = 10.0
    """Seconds a connection has to send its request and read the answer."""
    wall: bool = False
    """Also serve the read-only wall to browsers at ``/wall`` (``serve --wall``)."""
    wall_token_file: Path | None = None
    """The wall's tokens, one per line, mode 0600; None: only ``$ZOMBIETOP_WALL_TOKEN``."""
    wall_viewers: int = 8
    """Browsers watching the wall at once; each runs a wall process of its own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchSettings:
    """``[watch]``: how the headless watchdog runs."""

    interval: float = WATCH_DEFAULTS["interval"]
    """How often the watchdog reads the store and judges every task."""
    digest_every: float = WATCH_DEFAULTS["digest_every"]
    """How often the watchdog sends the digest of the tasks that warn (spinning ones)."""
    stage_kill_factor: float = STAGE_KILL_FACTOR
    """Kill a task still in one stage after this many stage timeouts; 0 never kills."""
    metrics: ListenAddress | None = None
    """Serve Prometheus metrics here (at `/metrics`) while the watchdog runs; unset: none."""
    renotify: float = WATCH_DEFAULTS["renotify"]
    """Page an open incident nobody acked or silenced again after this long; 0 never does."""
    group_by_upstream: bool = True
    """One page per root cause: a task queued behind an upstream with an open incident is not
    paged itself, and the upstream's page lists it (``zombietop.watch.root_causes``)."""


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
    """The step its runs have; for a schedule of a job, the job's name."""
    job: str | None = None
    """The job its runs belong to (``job = "..."``): a run of the job counts as its run."""
    cron: str
    """Five fields: minute hour day-of-month month day-of-week."""
    tz: str = "UTC"
    """An IANA zone the cron times are read in (so 02:30 stays 02:30 across a DST change)."""
    grace: float = SCHEDULE_GRACE
    """How long after a fire time a run may start before the schedule is missed."""
    max_runtime: float | None = None
    """A run still going after this long shows ``running_long`` (None: only overlap does)."""


VIEW_ROWS = ("runs", "jobs")
"""What a saved view's rows are: the task table with one row per run, or one row per job."""


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """``[views.NAME]``: a saved view of the dashboard, picked with ``v``, ``1``-``9`` or
    ``--view NAME``."""

    name: str
    rows: str = "runs"
    """``"runs"``: the task table, one row per run; ``"jobs"``: the jobs view, one row per job."""
    filter: str = ""
    """Show only the rows whose task id, stage or health (jobs: name or last outcome) hold it."""
    sort: str | None = None
    """The order: for runs one of `s`'s (``"urgency"``, ``"oldest heartbeat"``, ...), for jobs
    ``"urgency"``, ``"name"``, ``"success rate"``, ``"p95"`` or ``"last run"``."""
    columns: tuple[str, ...] = ()
    """The columns to show, in the table's order (empty: all); the task or job column always
    shows."""


PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
"""PagerDuty's Events API v2 (the EU service's is ``https://events.eu.pagerduty.com/...``)."""
PAGERDUTY_KEY_ENV = "ZOMBIETOP_PAGERDUTY_KEY"


@dataclass(frozen=True, slots=True, kw_only=True)
class PagerDutySettings:
    """``[notify.pagerduty]``: a service's Events API v2 integration."""

    routing_key_file: Path | None = None
    """A file (0600) holding the integration's routing key; else ``$ZOMBIETOP_PAGERDUTY_KEY``."""
    url: str = PAGERDUTY_URL
    """Where events go: PagerDuty's own endpoint, its EU one, or a proxy."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifySettings:
    """``[notify]``: where pages go. Every configured channel gets every page."""

    command: tuple[str, ...] | None = None
    """A program to run per page: an argument list; the page line on stdin and in
    ``$ZOMBIETOP_PAGE``."""
    webhook: str | None = None
    """An http(s) URL each page is POSTed to as JSON, ``{"text": line}`` (Slack's shape)."""
    apprise: tuple[str, ...] = ()
    """Apprise URLs (``opsgenie://KEY``, ``mailto://...``): the long tail of services."""
    pagerduty: PagerDutySettings | None = None
    """PagerDuty's Events API v2: the table ``[notify.pagerduty]`` below."""
    retry_backoff: float = NOTIFY_DEFAULTS["retry_backoff"]
    """Wait before a failed delivery is tried again, doubling for each try after."""
    timeout: float = NOTIFY_DEFAULTS["timeout"]
    """How long one delivery may take before it counts as failed."""
    max_attempts: int = NOTIFY_MAX_ATTEMPTS
    """Deliveries of one page to one channel before it is given up."""
    digest_after: int = NOTIFY_DIGEST_AFTER
    """Past this many task pages of one kind in one look, each group (by health and host)
    goes as one digest."""

    @property
    def configured(self) -> bool:
        return bool(self.command or self.webhook or self.apprise or self.pagerduty)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """``[agent]``: whom the agent on this host acts for besides its own user."""

    allow: tuple[str, ...] = ()
    """OS user names whose requests the agent carries out; its own user's always are."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OtelSettings:
    """``[otel]``: the traces zombietop's runs belong to, and what the watchdog sends to an
    OpenTelemetry collector (with ``zombietop[otel]``)."""

    trace_url: str | None = None
    """A link template to one trace in your tracing tool, with ``{trace_id}`` in it
    (``https://tempo.example/trace/{trace_id}``): pages and the detail view link to it."""
    endpoint: str | None = None
    """Where the watchdog sends spans, log records and metrics over OTLP/HTTP
    (``http://127.0.0.1:4318``, to which ``/v1/traces`` and its kin are added). Unset, the
    standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (and per-signal) variables turn export on."""
    queue_size: int = 2048
    """How many spans, and how many log records, may wait to be sent; past it they are
    dropped and counted (``zombietop_otel_dropped_total``): export never holds up a look."""
    timeout: float = 10.0
    """How long one export waits for the collector."""
    metrics_interval: float = 30.0
    """How often the metrics are sent."""

    def link(self, trace_id: str) -> str | None:
        """The link to one trace, None without ``trace_url``."""
        return None if self.trace_url is None else self.trace_url.replace("{trace_id}", trace_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSettings:
    """One ``[[sources]]`` entry (or ``--source URL``): an engine's database to watch read-only."""

    url: str
    """The engine's database or broker (``airflow+postgresql://...``; see the sources page)."""
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
    """How often the dashboard reads the store."""
    finished_window: float = MONITOR_DEFAULTS["finished_window"]
    """How long a finished task stays on screen."""
    mouse: bool = True
    """The dashboard takes the mouse (a click selects a row, a double click opens it); false
    leaves it to the terminal, to select and copy text (as ``--no-mouse`` does)."""
    copy_lines: int = COPY_LINES
    """How many of a task's last output lines ``c`` copies in the detail view's output pane."""
    read_at_most: int = READ_AT_MOST
    """The most tasks a poll reads whole: a store with more active tasks than this counts the
    ones it proves quiet and reads the others, the longest silent first, up to this many (a
    store that can count them, ``Store.counts_quiet``: PostgreSQL)."""
    watch: WatchSettings = field(default_factory=WatchSettings)
    notify: NotifySettings = field(default_factory=NotifySettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    oncall: OnCallSettings = field(default_factory=OnCallSettings)
    schedules: tuple[Schedule, ...] = ()
    sources: tuple[SourceSettings, ...] = ()
    serve: ServeSettings = field(default_factory=ServeSettings)
    views: tuple[View, ...] = ()
    """``[views.NAME]``, in the file's order (``1`` picks the first)."""
    otel: OtelSettings = field(default_factory=OtelSettings)
    written_at: float | None = None
    """When the config file was last written (its mtime), None without one: a schedule it
    holds cannot have been configured later, so its fire times since then are judged."""

    def limits_for(self, step_type: str | None) -> Limits:
        """Return the effective limits for a step type (the global set when it has none)."""
        if step_type is not None and step_type in self.step_types:
            return self.step_types[step_type]
        return self.defaults


def default_config() -> Config:
    return Config(path=None, defaults=default_limits())
