"""Thresholds and timeouts: the global set and each step type's, each section applied over
the values before it, and the rules between them checked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from zombietop.config.settings import (
    DURATION_KEYS,
    HISTORY_DEFAULTS,
    STEP_ONLY_KEYS,
    ZERO_OFF_KEYS,
)
from zombietop.config.values import (
    check_bound,
    check_runbook,
    read_command,
    read_duration,
    read_whole,
    section_table,
    unknown_key,
    where,
)
from zombietop.durations import format_duration
from zombietop.errors import ConfigError
from zombietop.thresholds import (
    DEFAULT_SOURCE,
    THRESHOLD_DEFAULTS,
    TIMEOUT_DEFAULTS,
    Limits,
    default_limits,
)


def apply_section(
    base: Limits, path: Path | None, section: str, table: Mapping[str, Any], allowed: list[str]
) -> Limits:
    """Return ``base`` with the keys of ``table`` (the section ``section``) over it, each value
    checked and noted as coming from that section."""
    changes: dict[str, Any] = {}
    sources = dict(base.sources)
    label = f"{where(path)} [{section}]"
    for key, value in table.items():
        if key not in allowed:
            raise unknown_key(path, section, key, allowed)
        if key in DURATION_KEYS:
            zero = key in ZERO_OFF_KEYS
            changes[key] = read_duration(path, section, key, value, family="limits", zero=zero)
        elif key == "retry_backoff":
            changes[key] = read_duration(path, section, key, value, family="step_types")
        elif key == "max_retries":
            changes[key] = read_whole(path, section, key, value, family="step_types")
        elif key == "flap_threshold":
            changes[key] = read_whole(path, section, key, value, family="limits")
        elif key in ("auto_retry", "from_source", "page_on_failure", "require_lease"):
            if not isinstance(value, bool):
                raise ConfigError(f"{label}: {key} must be true or false, not {value!r}")
            changes[key] = value
        elif key in HISTORY_DEFAULTS:
            changes[key] = _history_value(path, section, key, value)
        elif key == "runbook":
            changes[key] = check_runbook(path, section, value)
        else:
            changes[key] = read_command(path, section, key, value)
        sources[key] = label
    return replace(base, **changes, sources=sources)


def _history_value(path: Path | None, section: str, key: str, value: Any) -> float:
    """One of the ``[history]`` keys: a count, a duration (0 allowed), or a factor."""
    if key in ("history_min_runs", "failing_min_runs"):
        return read_whole(path, section, key, value, family="history")
    if key in ("slow_min", "drift_min"):
        return read_duration(path, section, key, value, family="history", zero=True)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(
            f"{where(path)} [{section}]: {key} must be a number such as "
            f"{HISTORY_DEFAULTS[key]:g}, not {value!r}"
        )
    check_bound(path, section, key, value, value, "history")
    return float(value)


def read_limits(path: Path | None, data: Mapping[str, Any]) -> tuple[Limits, dict[str, Limits]]:
    """The global limits ([thresholds] and [timeouts] over the defaults) and each step type's
    ([step_types.NAME] over the global ones), each set checked against ``RULES``."""
    limits = default_limits()
    limits = apply_section(
        limits,
        path,
        "thresholds",
        section_table(path, data, "thresholds"),
        list(THRESHOLD_DEFAULTS),
    )
    limits = apply_section(
        limits, path, "timeouts", section_table(path, data, "timeouts"), list(TIMEOUT_DEFAULTS)
    )
    limits = apply_section(
        limits, path, "history", section_table(path, data, "history"), list(HISTORY_DEFAULTS)
    )
    limits = idle_within_task(limits)
    validate(limits, path, None)

    step_types: dict[str, Limits] = {}
    allowed = [*DURATION_KEYS, "flap_threshold", *HISTORY_DEFAULTS, *STEP_ONLY_KEYS]
    for name, table in section_table(path, data, "step_types").items():
        section = f"step_types.{name}"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where(path)}: [{section}] must be a table of overrides")
        merged = apply_section(replace(limits, step_type=name), path, section, table, allowed)
        if merged.from_source:
            merged = one_stage(merged, path, section, "stage" in table)
        merged = idle_within_task(merged)
        validate(merged, path, name)
        step_types[name] = merged
    return limits, step_types


def idle_within_task(limits: Limits) -> Limits:
    """``limits`` with a default ``idle_timeout`` cut to a task budget shorter than it: a config
    that only sets a short ``task`` stays valid. An ``idle_timeout`` someone set is checked."""
    if limits.source("idle_timeout") != DEFAULT_SOURCE or limits.idle_timeout <= limits.task:
        return limits
    sources = {**limits.sources, "idle_timeout": "default, cut to the task budget"}
    return replace(limits, idle_timeout=limits.task, sources=sources)


def one_stage(limits: Limits, path: Path | None, section: str, own_stage: bool) -> Limits:
    """The limits of a ``from_source = true`` step type: a task instance is one stage, so a
    stage the section does not set is the task budget (as the source itself judges it), and
    zombietop never retries a source's task on its own."""
    if limits.auto_retry:
        raise ConfigError(
            f"{where(path)} [{section}]: auto_retry = true with from_source = true: zombietop "
            "never retries a source's task on its own (the engine retries it); remove one"
        )
    if own_stage:
        return limits
    own = f"{where(path)} [{section}]"
    sources = {**limits.sources, "stage": f"{own} from_source = true: the task budget"}
    return replace(limits, stage=limits.task, sources=sources)


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
    ("idle_timeout", "task", 1.0, False, "an idle task must be noticed before its task ends"),
    (
        "heartbeat_timeout",
        "flap_window",
        1.0,
        True,
        "a stall and its end must fit in the flap window for their flips to count together",
    ),
)


def validate(limits: Limits, path: Path | None, step_type: str | None) -> None:
    """Raise ``ConfigError`` naming the file, section, both keys and values of a broken rule."""
    section = f"step_types.{step_type}" if step_type else None
    for inner, outer, factor, strict, why in RULES:
        if limits.from_source and (inner, outer) == ("stage", "task"):
            # One stage per task instance: the stage may last the whole task.
            strict, why = False, "a source's task instance is one stage, at most its task"
        a = getattr(limits, inner)
        b = getattr(limits, outer)
        ok = factor * a < b if strict else factor * a <= b
        if ok:
            continue
        named = section or DURATION_KEYS[inner]
        scaled = f" x {factor:g}" if factor != 1.0 else ""
        relation = "shorter than" if strict else "at most"
        raise ConfigError(
            f'{where(path)} [{named}]: {inner} = "{format_duration(a)}"{scaled}'
            f"{_origin(limits, inner, path, named)} must be {relation} "
            f'{outer} = "{format_duration(b)}"{_origin(limits, outer, path, named)} ({why})'
        )


def _origin(limits: Limits, key: str, path: Path | None, section: str) -> str:
    source = limits.source(key)
    own = f"{where(path)} [{section}]"
    if source == own:
        return ""
    if source.startswith(own + " "):
        return f" ({source.removeprefix(own + ' ')})"
    if source == DEFAULT_SOURCE:
        return " (default)"
    return " (from [" + source.rsplit("[", 1)[-1] + ")"
