"""The heartbeat line: ``stage=transform p=61 eta=42m rows=8200000 at=2026-11-29T03:42:00Z``.

One line per beat, ``key=value`` pairs separated by spaces; a value with spaces, quotes or ``=``
is double-quoted with backslash escapes. Known keys:

- ``stage``: the step's current phase
- ``p``: percent done, 0 to 100
- ``eta``: a duration (``42m``)
- ``at``: when the job wrote the line, ISO 8601 with a zone (``2026-11-29T03:42:00Z``)
- ``checkpoint``: the last durable checkpoint (a path, an offset, a row number)
- ``req`` and ``req_at``: the outbound request in flight and when it started
- ``trace``: a trace id for correlation

Every other key is a counter and must be a number (``rows=8200000``). Anything else raises
``HeartbeatParseError`` carrying the line; nothing else ever escapes ``parse_line``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from zombietop.durations import format_duration, parse_duration
from zombietop.errors import HeartbeatParseError

MAX_LINE = 8192
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*\Z")
_BARE = re.compile(r'[^\s"=\\]+\Z')
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
"""C0 controls but tab (a separator), DEL and C1: a terminal command, never a value."""
STRING_KEYS = ("stage", "checkpoint", "req", "trace")
KNOWN_KEYS = frozenset({"stage", "p", "eta", "at", "checkpoint", "req", "req_at", "trace"})


@dataclass(frozen=True, slots=True, kw_only=True)
class BeatLine:
    """One parsed heartbeat line; every field is optional."""

    stage: str | None = None
    progress: float | None = None
    eta_s: float | None = None
    at: float | None = None
    checkpoint: str | None = None
    request: str | None = None
    request_at: float | None = None
    trace: str | None = None
    counters: Mapping[str, float] = field(default_factory=dict)


def _tokens(line: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(line)
    while i < n:
        if line[i].isspace():
            i += 1
            continue
        eq = line.find("=", i)
        space = next((j for j in range(i, n) if line[j].isspace()), n)
        if eq == -1 or eq > space:
            word = line[i:space]
            raise HeartbeatParseError(line, f"{word!r} is not key=value")
        key = line[i:eq]
        i = eq + 1
        if i < n and line[i] == '"':
            chars: list[str] = []
            i += 1
            while True:
                if i >= n:
                    raise HeartbeatParseError(line, f"unterminated quote in the value of {key!r}")
                ch = line[i]
                if ch == "\\" and i + 1 < n:
                    chars.append(line[i + 1])
                    i += 2
                    continue
                if ch == '"':
                    i += 1
                    break
                chars.append(ch)
                i += 1
            if i < n and not line[i].isspace():
                raise HeartbeatParseError(line, f"text right after the closing quote of {key!r}")
            value = "".join(chars)
        else:
            end = next((j for j in range(i, n) if line[j].isspace()), n)
            value = line[i:end]
            if '"' in value:
                raise HeartbeatParseError(line, f"stray quote in the value of {key!r}")
            i = end
        pairs.append((key, value))
    return pairs


def _number(line: str, key: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise HeartbeatParseError(line, f"{key}={value!r} is not a number") from None
    if not math.isfinite(number):
        raise HeartbeatParseError(line, f"{key}={value!r} is not a finite number")
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _timestamp(line: str, key: str, value: str) -> float:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise HeartbeatParseError(
            line, f"{key}={value!r} is not an ISO 8601 time such as 2026-11-29T03:42:00Z"
        ) from None
    if moment.tzinfo is None:
        raise HeartbeatParseError(line, f"{key}={value!r} has no zone; end it with Z for UTC")
    return moment.timestamp()


def parse_line(line: str) -> BeatLine:
    """Parse one heartbeat line; raise ``HeartbeatParseError`` (and only that) when malformed."""
    if not isinstance(line, str):
        raise HeartbeatParseError(repr(line), "a heartbeat line must be text")
    line = line.rstrip("\r\n")
    if len(line) > MAX_LINE:
        raise HeartbeatParseError(line, f"longer than {MAX_LINE} characters")
    if _CONTROL.search(line):
        raise HeartbeatParseError(line, "control characters in the line")
    pairs = _tokens(line)
    if not pairs:
        raise HeartbeatParseError(
            line, "empty line; expected key=value pairs such as stage=load p=40"
        )
    fields: dict[str, object] = {}
    counters: dict[str, float] = {}
    seen: set[str] = set()
    for key, value in pairs:
        if not _KEY.match(key):
            raise HeartbeatParseError(
                line, f"{key!r} is not a valid key (letters, digits, _ . : -)"
            )
        if key in seen:
            raise HeartbeatParseError(line, f"{key!r} appears twice")
        seen.add(key)
        if key in STRING_KEYS:
            if not value:
                raise HeartbeatParseError(line, f"{key} is empty")
            fields["request" if key == "req" else key] = value
        elif key == "p":
            progress = _number(line, key, value)
            if not 0 <= progress <= 100:
                raise HeartbeatParseError(line, f"p={value} is outside 0..100")
            fields["progress"] = progress
        elif key == "eta":
            try:
                fields["eta_s"] = parse_duration(value)
            except ValueError:
                raise HeartbeatParseError(
                    line, f"eta={value!r} is not a duration such as 42m"
                ) from None
        elif key == "at":
            fields["at"] = _timestamp(line, key, value)
        elif key == "req_at":
            fields["request_at"] = _timestamp(line, key, value)
        else:
            counters[key] = _number(line, key, value)
    return BeatLine(counters=counters, **fields)  # type: ignore[arg-type]


def _quote(value: str) -> str:
    if _BARE.match(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _format_number(number: float) -> str:
    if isinstance(number, int) or (
        isinstance(number, float) and number.is_integer() and abs(number) < 2**53
    ):
        return str(int(number))
    return repr(float(number))


def format_timestamp(when: float) -> str:
    """Format epoch seconds as ISO 8601 UTC with a ``Z``, keeping microseconds when present."""
    moment = datetime.fromtimestamp(when, UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def format_line(beat: BeatLine) -> str:
    """Format a ``BeatLine`` so that ``parse_line`` gives it back."""
    parts: list[str] = []
    if beat.stage is not None:
        parts.append(f"stage={_quote(beat.stage)}")
    if beat.progress is not None:
        parts.append(f"p={_format_number(beat.progress)}")
    if beat.eta_s is not None:
        parts.append(f"eta={format_duration(beat.eta_s)}")
    for key, number in beat.counters.items():
        if key in KNOWN_KEYS or not _KEY.match(key):
            raise ValueError(f"{key!r} cannot be a counter name")
        parts.append(f"{key}={_format_number(number)}")
    if beat.checkpoint is not None:
        parts.append(f"checkpoint={_quote(beat.checkpoint)}")
    if beat.request is not None:
        parts.append(f"req={_quote(beat.request)}")
    if beat.request_at is not None:
        parts.append(f"req_at={format_timestamp(beat.request_at)}")
    if beat.trace is not None:
        parts.append(f"trace={_quote(beat.trace)}")
    if beat.at is not None:
        parts.append(f"at={format_timestamp(beat.at)}")
    return " ".join(parts)
