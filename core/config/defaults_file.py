"""``zombietop config init``: the default config as a TOML file, with comments."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from zombietop.config.settings import (
    COPY_LINES,
    HISTORY_DEFAULTS,
    METRICS_EXAMPLE,
    MONITOR_DEFAULTS,
    ONCALL_DEFAULTS,
    READ_AT_MOST,
    STAGE_KILL_FACTOR,
    STORE_DEFAULTS,
    WATCH_DEFAULTS,
)
from zombietop.durations import format_duration
from zombietop.errors import ConfigError
from zombietop.extras import require
from zombietop.thresholds import (
    COUNT_KEYS,
    THRESHOLD_DEFAULTS,
    TIMEOUT_DEFAULTS,
)


def render_defaults() -> str:
    """Return the default config as TOML (written with tomli-w), with comments between sections."""
    require("`zombietop config init`", "tomli_w")
    import tomli_w

    return "\n".join(
        [*_runtime_sections(tomli_w.dumps), *COMMENTED_EXAMPLES, *_limit_sections(tomli_w.dumps)]
    )


Dumps = Callable[[Mapping[str, Any]], str]
"""``tomli_w.dumps``, passed in: tomli-w is an extra, imported only by ``config init``."""


def _runtime_sections(dumps: Dumps) -> list[str]:
    """The head, then [store], [monitor], [watch] and [oncall], with their defaults."""
    monitor: dict[str, Any] = {k: format_duration(v) for k, v in MONITOR_DEFAULTS.items()}
    monitor["copy_lines"] = COPY_LINES
    monitor["read_at_most"] = READ_AT_MOST
    watch: dict[str, Any] = {k: format_duration(v) for k, v in WATCH_DEFAULTS.items()}
    watch["stage_kill_factor"] = STAGE_KILL_FACTOR
    watch["renotify"] = watch.pop("renotify")
    watch["group_by_upstream"] = True
    oncall = {k: format_duration(v) for k, v in ONCALL_DEFAULTS.items()}
    store = {k: format_duration(v) for k, v in STORE_DEFAULTS.items()}
    return [
        '# zombietop configuration. Durations: ms, s, m, h, d ("90s", "15m", "1h30m").',
        "# `zombietop config check` validates this file; unknown keys are errors.",
        "",
        "# The store: path is a SQLite file or a postgresql:// URL (--db and $ZOMBIETOP_DB",
        "# come first; with none, a file in the XDG state dir). Finished tasks older than",
        "# keep_finished leave it with their events and heartbeats, a few at a time, unless",
        "# something still needs them (an open incident, a task waiting behind them, a kill,",
        "# an ack); the watchdog prunes, or the agents where no watchdog runs. At least",
        '# [monitor] finished_window; "0s": keep every task.',
        dumps({"store": store}) + '# path = "/var/lib/zombietop/zombietop.db"\n',
        "# How often the dashboard and the watchdog poll the store, how long finished",
        "# tasks stay on screen, how many of a task's last output lines `c` copies in the",
        "# detail view, and the most tasks a poll of a PostgreSQL store reads whole: past",
        "# that many active tasks, those it proves healthy or queued with nothing to say are",
        "# counted, not read (a SQLite store is read whole: its polls read what changed).",
        dumps({"monitor": monitor}),
        "# The headless watchdog (`zombietop watch`): how often it looks, how often it sends",
        "# the digest of spinning tasks, after how many stage timeouts in one stage it kills",
        "# gracefully (the first overrun only pages; 0 never kills), how often an open",
        '# incident nobody acked or silenced is paged again ("2nd notice"; "0s": never),',
        "# whether a task queued behind an upstream with an open incident is left out of the",
        "# pages (the upstream's page lists it), and where it serves Prometheus metrics",
        "# (HOST:PORT, at /metrics; off unless set).",
        dumps({"watch": watch}) + f'# metrics = "{METRICS_EXAMPLE}"\n',
        "# The on-call loop: how long an ack lasts unless told (`zombietop ack --for`, the",
        "# dashboard's `a`), and the longest a silence may be set for (every silence ends).",
        dumps({"oncall": oncall}),
    ]


COMMENTED_EXAMPLES = (
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
    '# apprise = ["opsgenie://KEY", "mailto://user:pass@example.com"]',
    "# digest_after = 20  # past this many task pages at one look: digests by health, host",
    "# PagerDuty (Events API v2): trigger, acknowledge on an ack here, resolve at the all-clear.",
    "# [notify.pagerduty]",
    '# routing_key_file = "/etc/zombietop/pagerduty.key"  # mode 0600; or $ZOMBIETOP_PAGERDUTY_KEY',
    "",
    "# `zombietop agent` carries out what other hosts ask only for its own OS user and",
    "# for the users listed here; every request it refuses is an event.",
    "# [agent]",
    '# allow = ["deploy"]',
    "",
)
"""[schedules], [notify] and [agent] have no defaults: the file shows an example of each,
commented out."""


def _limit_sections(dumps: Dumps) -> list[str]:
    """[thresholds] and [timeouts] with their defaults, and an example of [step_types]."""
    thresholds: dict[str, object] = {
        k: int(v) if k in COUNT_KEYS else format_duration(v) for k, v in THRESHOLD_DEFAULTS.items()
    }
    timeouts = {k: format_duration(v) for k, v in TIMEOUT_DEFAULTS.items()}
    return [
        "# Detection. heartbeat_interval: how often `zombietop run` and the SDK beat, renew.",
        "# No heartbeat for heartbeat_timeout -> stalled; lease not renewed for lease_ttl ->",
        "# reclaimable; no progress for progress_timeout -> spinning; no first heartbeat",
        "# within start_grace -> stalled. Rules: heartbeat_interval x 2 <= heartbeat_timeout",
        "# < lease_ttl, and heartbeat_timeout < progress_timeout. Queued or scheduled for",
        "# queue_timeout -> the flag queued_too_long, paged once (0: off; an engine's tasks",
        "# wait at most 30m unless a section here says). A task process that used no CPU",
        "# and did no I/O for idle_timeout while its supervisor beats -> stalled",
        "# (idle_timeout <= task). A task whose health goes into or out of one that pages",
        "# more than flap_threshold times within flap_window is flapping: one notice, then",
        "# no page until it stays without a flip for flap_window (heartbeat_timeout <",
        "# flap_window).",
        dumps({"thresholds": thresholds}),
        "# Layered budgets, inner strictly shorter than outer: request < stage < task.",
        "# A stage overrun pages and a second overrun kills (SIGTERM, kill_grace, SIGKILL);",
        "# a task overrun is only logged, because a checkpoint can resume it.",
        dumps({"timeouts": timeouts}),
        "# Each run judged against its job's latest successful runs, once the job has",
        "# history_min_runs of them: a run still going past slow_after x their median (and",
        "# at least slow_min past it) is slower_than_usual; one that succeeds in under",
        "# too_fast_below x the median finished_too_fast (0 turns that off). A job whose",
        "# latest history_min_runs start intervals spread drift_after x as much as the ones",
        "# before (and drift_min more) runs_late_usually; one whose runs failed failing_after",
        "# x as often in the last day as in 30 days (with failing_min_runs runs in them) is",
        "# failing_more. All four warn, and are paged once.",
        dumps(
            {
                "history": {
                    "history_min_runs": int(HISTORY_DEFAULTS["history_min_runs"]),
                    "slow_after": HISTORY_DEFAULTS["slow_after"],
                    "slow_min": format_duration(HISTORY_DEFAULTS["slow_min"]),
                    "too_fast_below": HISTORY_DEFAULTS["too_fast_below"],
                    "drift_after": HISTORY_DEFAULTS["drift_after"],
                    "drift_min": format_duration(HISTORY_DEFAULTS["drift_min"]),
                    "failing_after": HISTORY_DEFAULTS["failing_after"],
                    "failing_min_runs": int(HISTORY_DEFAULTS["failing_min_runs"]),
                }
            }
        ),
        "# Per step type (a job's runs have their job's name as their step type), any key",
        "# above plus resume_command / compensate_command (argument lists with {task_id}",
        "# and {checkpoint}), auto_retry = true for idempotent work the watchdog may retry",
        "# by itself (max_retries attempts in all, retry_backoff before the first, doubling",
        "# after), page_on_failure = false for jobs whose failures page someone else,",
        "# require_lease = true or false (does `zombietop run` refuse to run the command when",
        "# the store cannot be used; by default only --task and --after runs refuse), and",
        "# from_source = true for a step type whose tasks come from a source (an Airflow DAG):",
        "# a task instance is one stage, so its stage may last its whole task (stage <= task)",
        "# and is the task budget unless the section sets one; runbook = a link template",
        "# filled with the task's fields ({task_id} {run_id} {step} {step_type} {job} {stage}",
        "# {host} {attempt} {state}), the last field of its pages:",
        "#",
        "# [step_types.export]",
        '# stage = "45m"',
        '# resume_command = ["my-engine", "resume", "{task_id}", "--from", "{checkpoint}"]',
        '# runbook = "https://wiki/runbooks/{step_type}#{stage}"',
        "",
    ]


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
