"""Read one value of a config file and check it (a duration, a whole number, a command, a
runbook's link template), with errors that name the file, the section and the key."""

from __future__ import annotations

import difflib
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zombietop.bounds import BOUNDS
from zombietop.durations import parse_duration
from zombietop.errors import ConfigError


def where(path: Path | None) -> str:
    """Name the file a value came from, as errors start: its path, or the built-in defaults."""
    return str(path) if path is not None else "built-in defaults"


def unknown_key(path: Path | None, section: str, key: str, known: list[str]) -> ConfigError:
    """Make the error for a key zombietop does not know, with the nearest known key."""
    # A prefix ("resume" for "resume_command") beats a mere likeness ("request").
    hint = [k for k in known if k.startswith(key)] or difflib.get_close_matches(key, known, n=1)
    suggestion = f"did you mean {hint[0]!r}? " if hint else ""
    place = f"[{section}]" if section else "top level"
    return ConfigError(
        f"{where(path)} {place}: unknown key {key!r}; {suggestion}"
        f"known keys: {', '.join(sorted(known))}"
    )


def section_table(path: Path | None, data: Mapping[str, Any], section: str) -> Mapping[str, Any]:
    """Return the table ``[section]`` of ``data`` (empty when the file has none)."""
    value = data.get(section, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where(path)}: [{section}] must be a table, not {type(value).__name__}")
    return value


def _given(value: Any) -> str:
    """A value as the config file spells it: ``"1ms"``, ``1000000000000``."""
    return f'"{value}"' if isinstance(value, str) else repr(value)


def check_bound(
    path: Path | None, section: str, key: str, value: Any, number: float, family: str
) -> None:
    """Refuse ``number`` (read from ``value``) outside its bound, ``BOUNDS[family][key]``."""
    problem = BOUNDS[family][key].problem(number)
    if problem is not None:
        raise ConfigError(f"{where(path)} [{section}]: {key} = {_given(value)} {problem}")


def read_duration(
    path: Path | None, section: str, key: str, value: Any, *, family: str, zero: bool = False
) -> float:
    """Read a duration and check it against its bound (``BOUNDS[family][key]``); with
    ``zero``, 0 also passes: it turns the setting off."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(
            f'{where(path)} [{section}]: {key} must be a duration such as "90s", not {value!r}'
        )
    try:
        seconds = parse_duration(value) if isinstance(value, str) else float(value)
    except ValueError as exc:
        raise ConfigError(f"{where(path)} [{section}]: {key}: {exc}") from None
    if seconds < 0 or (seconds == 0 and not zero):
        allowed = "zero (off) or longer" if zero else "longer than zero"
        raise ConfigError(f"{where(path)} [{section}]: {key} must be {allowed}, not {value!r}")
    if not (zero and seconds == 0):
        check_bound(path, section, key, value, seconds, family)
    return seconds


def read_whole(path: Path | None, section: str, key: str, value: Any, *, family: str) -> int:
    """Read a whole number and check it against its bound (``BOUNDS[family][key]``)."""
    minimum = int(BOUNDS[family][key].low)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(
            f"{where(path)} [{section}]: {key} must be a whole number >= {minimum}, not {value!r}"
        )
    check_bound(path, section, key, value, value, family)
    return value


def read_command(path: Path | None, section: str, key: str, value: Any) -> tuple[str, ...]:
    """Read an argument list: strings, the first naming a program (never a shell string)."""
    example = '["my-engine", "resume", "{task_id}"]'
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{where(path)} [{section}]: {key} must be a non-empty list of strings "
            f"(an argument list, never a shell string), e.g. {example}"
        )
    if not value[0].strip():
        raise ConfigError(
            f"{where(path)} [{section}]: {key} = {_given(value[0])}, ...: its first string is "
            f"the program to run and must name one, e.g. {example}"
        )
    if any("\x00" in v for v in value):
        raise ConfigError(
            f"{where(path)} [{section}]: {key} holds a NUL character, which no program can "
            "take in its arguments; remove it"
        )
    return tuple(value)


RUNBOOK_FIELDS = (
    "task_id",
    "run_id",
    "step",
    "step_type",
    "job",
    "stage",
    "host",
    "attempt",
    "state",
)
"""The placeholders a runbook may hold: the task's fields, and the stage of its last beat."""


def placeholders(template: str) -> list[str]:
    """The names of the template's placeholders, in order; ``ValueError`` for a bad brace."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def check_runbook(path: Path | None, section: str, value: object) -> str:
    """Read a ``runbook`` template: a string whose every placeholder is a task field."""
    place = f"{where(path)} [{section}]"
    example = '"https://wiki/runbooks/{step_type}#{stage}"'
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{place}: runbook must be a link template such as {example}")
    try:
        names = placeholders(value)
    except ValueError as exc:
        raise ConfigError(
            f"{place}: runbook = {value!r} is not a template ({exc}); write a literal brace "
            "as {{ or }}"
        ) from None
    for name in names:
        if name not in RUNBOOK_FIELDS:
            raise ConfigError(
                f"{place}: runbook has the unknown placeholder {{{name}}}; the known ones are "
                + ", ".join(f"{{{field}}}" for field in RUNBOOK_FIELDS)
            )
    return value
