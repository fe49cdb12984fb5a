"""Read ``[otel]``: the link template to a trace in the user's tracing tool."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zombietop.config.settings import OtelSettings
from zombietop.config.values import placeholders, read_duration, read_whole, unknown_key, where
from zombietop.errors import ConfigError

OTEL_KEYS = ("trace_url", "endpoint", "queue_size", "timeout", "metrics_interval")
TRACE_URL_EXAMPLE = "https://tempo.example/trace/{trace_id}"


def read_otel(path: Path | None, table: Mapping[str, Any]) -> OtelSettings:
    """``[otel]``: every key checked, an unknown one refused."""
    for key in table:
        if key not in OTEL_KEYS:
            raise unknown_key(path, "otel", key, list(OTEL_KEYS))
    values: dict[str, Any] = {}
    if "trace_url" in table:
        values["trace_url"] = _trace_url(path, table["trace_url"])
    if "endpoint" in table:
        values["endpoint"] = _endpoint(path, table["endpoint"])
    if "queue_size" in table:
        values["queue_size"] = read_whole(
            path, "otel", "queue_size", table["queue_size"], family="otel"
        )
    for key in ("timeout", "metrics_interval"):
        if key in table:
            values[key] = read_duration(path, "otel", key, table[key], family="otel")
    return OtelSettings(**values)


def _endpoint(path: Path | None, value: object) -> str:
    """The collector's OTLP/HTTP base address: http or https, host and port, no path."""
    example = "http://127.0.0.1:4318"
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise ConfigError(
            f"{where(path)} [otel]: endpoint must be the collector's OTLP/HTTP address such as "
            f"{example!r}, not {value!r}"
        )
    if not value.isprintable() or " " in value:
        raise ConfigError(f"{where(path)} [otel]: endpoint has spaces or control characters")
    return value.rstrip("/")


def _trace_url(path: Path | None, value: object) -> str:
    """A link template: http or https, with ``{trace_id}`` its one placeholder."""
    place = f"{where(path)} [otel]"
    problem = f"{place}: trace_url must be a link template such as {TRACE_URL_EXAMPLE!r}"
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise ConfigError(f"{problem}, not {value!r}")
    try:
        names = placeholders(value)
    except ValueError as exc:
        raise ConfigError(f"{problem} ({exc})") from None
    if names != ["trace_id"]:
        raise ConfigError(f"{problem}: it needs {{trace_id}} once and no other placeholder")
    if not value.isprintable() or " " in value:
        raise ConfigError(f"{problem}: no spaces or control characters")
    return value
