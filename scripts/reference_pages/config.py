"""docs/reference/config.md: every config key with its default and bounds, from the config's
own tables (``zombietop.config``) and the bounds (``zombietop.bounds``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference_pages.markdown import attribute_docs, first_paragraph, header, table
from zombietop.bounds import BOUNDS, Bound
from zombietop.config import (
    RULES,
    SCHEDULE_KEYS,
    SECTIONS,
    SOURCE_KEYS,
    STEP_ONLY_KEYS,
    THRESHOLD_DEFAULTS,
    TIMEOUT_DEFAULTS,
    VIEW_KEYS,
    AgentSettings,
    Config,
    Limits,
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
)
from zombietop.config.otel import OTEL_KEYS
from zombietop.config.serve import SERVE_KEYS, WHOLE_RANGES
from zombietop.config.settings import HISTORY_DEFAULTS


@dataclasses.dataclass(frozen=True)
class Section:
    """One table of the config file, as this page shows it."""

    name: str
    owner: type
    """The dataclass whose fields hold the section's values (and whose docstrings say them)."""
    keys: Sequence[str]
    family: str
    """The section's line in ``BOUNDS``."""
    fields: dict[str, str] = dataclasses.field(default_factory=dict)
    """Key -> the owner's field, where the two names differ."""
    intro: str = ""


SECTION_LIST = (
    Section(
        "thresholds",
        Limits,
        list(THRESHOLD_DEFAULTS),
        "limits",
        intro="Detection: when a task is called stalled, reclaimable or spinning.",
    ),
    Section(
        "timeouts",
        Limits,
        list(TIMEOUT_DEFAULTS),
        "limits",
        intro="The layered budgets: request < stage < task, and the grace of a kill.",
    ),
    Section(
        "history",
        Limits,
        list(HISTORY_DEFAULTS),
        "history",
        intro="How a run is judged against its job's latest successful runs.",
    ),
    Section(
        "step_types.NAME",
        Limits,
        list(STEP_ONLY_KEYS),
        "step_types",
        intro="Per step type (a job's runs have their job's name as their step type): any key "
        "of `[thresholds]`, `[timeouts]` and `[history]`, over the global value, plus these "
        "keys, which only a step type may set.",
    ),
    Section(
        "store",
        Config,
        ["path", "keep_finished"],
        "store",
        fields={"path": "store_path"},
        intro="The store. `--db` and `$ZOMBIETOP_DB` come before `path`.",
    ),
    Section(
        "monitor",
        Config,
        ["refresh", "finished_window", "mouse", "copy_lines", "read_at_most"],
        "monitor",
    ),
    Section(
        "watch",
        WatchSettings,
        [f.name for f in dataclasses.fields(WatchSettings)],
        "watch",
        intro=first_paragraph(WatchSettings.__doc__),
    ),
    Section(
        "oncall",
        OnCallSettings,
        [f.name for f in dataclasses.fields(OnCallSettings)],
        "oncall",
        intro=first_paragraph(OnCallSettings.__doc__),
    ),
    Section(
        "schedules.NAME",
        Schedule,
        [k for k in SCHEDULE_KEYS],
        "schedules",
        intro=first_paragraph(Schedule.__doc__),
    ),
    Section(
        "notify",
        NotifySettings,
        [f.name for f in dataclasses.fields(NotifySettings)],
        "notify",
        intro=first_paragraph(NotifySettings.__doc__),
    ),
    Section(
        "notify.pagerduty",
        PagerDutySettings,
        [f.name for f in dataclasses.fields(PagerDutySettings)],
        "notify",
        intro=first_paragraph(PagerDutySettings.__doc__),
    ),
    Section(
        "agent",
        AgentSettings,
        [f.name for f in dataclasses.fields(AgentSettings)],
        "agent",
        intro=first_paragraph(AgentSettings.__doc__),
    ),
    Section(
        "[sources]",
        SourceSettings,
        list(SOURCE_KEYS),
        "sources",
        intro=first_paragraph(SourceSettings.__doc__),
    ),
    Section(
        "otel",
        OtelSettings,
        list(OTEL_KEYS),
        "otel",
        intro=first_paragraph(OtelSettings.__doc__),
    ),
    Section(
        "serve",
        ServeSettings,
        list(SERVE_KEYS),
        "serve",
        intro=first_paragraph(ServeSettings.__doc__),
    ),
    Section(
        "views.NAME",
        View,
        list(VIEW_KEYS),
        "views",
        intro=first_paragraph(View.__doc__),
    ),
)
"""Every section, in the order the page lists them."""


def top_level(section: Section) -> str:
    """The name ``SECTIONS`` knows the section by (``step_types.NAME`` is ``step_types``)."""
    return section.name.strip("[]").split(".")[0]


def render() -> str:
    lines = header(
        "Configuration",
        "core/config/ or core/bounds.py",
        "zombietop reads one TOML file: `--config PATH`, else `$ZOMBIETOP_CONFIG`, else "
        "`~/.config/zombietop/config.toml` when it exists. `zombietop config init` writes the "
        "defaults with comments; `zombietop config check` validates a file. Unknown keys are "
        "errors, and so is a value outside its bounds. Durations are written "
        '`"90s"`, `"15m"`, `"1h30m"` (units ms, s, m, h, d).',
    )
    missing = sorted(set(SECTIONS) - {top_level(s) for s in SECTION_LIST})
    if missing:
        raise RuntimeError(f"reference_pages.config lists no section {missing}")
    lines += ["Sections: " + ", ".join(f"[`{s.name}`](#{anchor(s)})" for s in SECTION_LIST), ""]
    for section in SECTION_LIST:
        lines += [f"## `[{section.name}]`", ""]
        if section.intro:
            lines += [_sentence(section.intro), ""]
        lines += table(["key", "type", "default", "bounds", "means"], _rows(section))
    lines += ["## Rules between keys", ""]
    lines += [
        "Loading checks every effective set (the global one, and each step type after "
        "merging) and refuses to start, naming both keys and both values, unless:",
        "",
    ]
    lines += table(
        ["rule", "why"],
        [
            (
                f"`{inner}`{f' x {factor:g}' if factor != 1 else ''} {'<' if strict else '<='} "
                f"`{outer}`",
                why,
            )
            for inner, outer, factor, strict, why in RULES
        ],
    )
    return "\n".join(lines)


def _sentence(intro: str) -> str:
    """An owner's docstring without the section's name it starts with (``[watch]: how``)."""
    head, colon, rest = intro.partition(": ")
    if colon and head.startswith("`["):
        return rest[:1].upper() + rest[1:]
    return intro


def anchor(section: Section) -> str:
    """The heading's anchor as MkDocs makes it (``[step_types.NAME]`` -> ``step_typesname``)."""
    return "".join(c for c in section.name.lower() if c.isalnum() or c in "_-")


def _rows(section: Section) -> list[tuple[str, ...]]:
    docs = attribute_docs(section.owner)
    fields = {f.name: f for f in dataclasses.fields(section.owner)}
    rows: list[tuple[str, ...]] = []
    for key in section.keys:
        name = section.fields.get(key, key)
        found = fields[name]
        bound = BOUNDS.get(section.family, {}).get(key)
        duration = bound.duration if bound is not None else False
        rows.append(
            (
                f"`{key}`",
                _type(str(found.type), duration),
                _default(section, key, found),
                _bounds(key, bound),
                docs.get(name, ""),
            )
        )
    return rows


def _default(section: Section, key: str, found: dataclasses.Field[Any]) -> str:
    if section.name in ("thresholds", "timeouts"):
        value: Any = {**THRESHOLD_DEFAULTS, **TIMEOUT_DEFAULTS}[key]
    elif found.default is not dataclasses.MISSING:
        value = found.default
    elif found.default_factory is not dataclasses.MISSING:
        value = found.default_factory()
    else:
        return "required"
    bound = BOUNDS.get(section.family, {}).get(key)
    return _written(value, bound)


def _written(value: Any, bound: Bound | None) -> str:
    """A value as the config file writes it."""
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return "`[" + ", ".join(f'"{v}"' for v in value) + "]`"
    if isinstance(value, (str, Path, ListenAddress)):
        return f'`"{value}"`'
    if bound is not None:
        return f"`{bound.as_written(value)}`"
    return f"`{value:g}`"


def _bounds(key: str, bound: Bound | None) -> str:
    if bound is not None:
        return f"`{bound.as_written(bound.low)}` to `{bound.as_written(bound.high)}`"
    if key in WHOLE_RANGES:
        low, high = WHOLE_RANGES[key]
        return f"`{low}` to `{high}`"
    return ""


def _type(annotation: str, duration: bool) -> str:
    """The kind of value a key takes, read from its field's annotation."""
    kinds = (
        ("Path | str", "path or URL"),
        ("bool", "true or false"),
        ("tuple[str", "list of strings"),
        ("Path", "path"),
        ("ListenAddress", "HOST:PORT"),
        ("PagerDutySettings", "table"),
        ("int", "whole number"),
        ("float", "duration" if duration else "number"),
        ("str", "string"),
    )
    return next((kind for prefix, kind in kinds if annotation.startswith(prefix)), annotation)
