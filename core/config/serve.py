"""Read ``[serve]``: where ``zombietop serve`` listens, its ping keys and its bounds."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zombietop.config.settings import SERVE_EXAMPLE, ServeSettings, parse_listen
from zombietop.config.values import read_duration, unknown_key, where
from zombietop.errors import ConfigError

SERVE_KEYS = (
    "listen",
    "ping_key_file",
    "body_limit",
    "rate_limit",
    "max_connections",
    "read_timeout",
    "wall",
    "wall_token_file",
    "wall_viewers",
)
WHOLE_RANGES = {
    "body_limit": (1024, 16 * 1024 * 1024),
    "rate_limit": (1, 100_000),
    "max_connections": (1, 10_000),
    "wall_viewers": (1, 64),
}
"""The whole-number keys and the lowest and highest value each takes."""
FILES = {
    "ping_key_file": ("ping keys", "/etc/zombietop/ping-keys"),
    "wall_token_file": ("wall tokens", "/etc/zombietop/wall-tokens"),
}
"""The keys naming a private file: what it holds and an example path."""


def read_serve(path: Path | None, table: Mapping[str, Any]) -> ServeSettings:
    """``[serve]``: every key checked, an unknown one refused."""
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in SERVE_KEYS:
            raise unknown_key(path, "serve", key, list(SERVE_KEYS))
        if key == "listen":
            if not isinstance(value, str):
                raise ConfigError(
                    f'{where(path)} [serve]: listen must be a string such as "{SERVE_EXAMPLE}", '
                    f"not {value!r}"
                )
            try:
                values[key] = parse_listen(value)
            except ValueError as exc:
                raise ConfigError(f"{where(path)} [serve]: listen: {exc}") from None
        elif key in ("ping_key_file", "wall_token_file"):
            what, example = FILES[key]
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(
                    f"{where(path)} [serve]: {key} must be the path of a file of {what}, one "
                    f'per line (mode 0600), such as "{example}", not {value!r}'
                )
            values[key] = Path(value).expanduser()
        elif key == "wall":
            if not isinstance(value, bool):
                raise ConfigError(
                    f"{where(path)} [serve]: wall must be true or false, not {value!r}"
                )
            values[key] = value
        elif key == "read_timeout":
            values[key] = read_duration(path, "serve", key, value, family="serve")
        else:
            low, high = WHOLE_RANGES[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(
                    f"{where(path)} [serve]: {key} must be a whole number from {low} to "
                    f"{high}, not {value!r}"
                )
            values[key] = value
    return ServeSettings(**values)
