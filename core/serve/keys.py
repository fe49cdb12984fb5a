"""Ping keys: the credential of ``zombietop serve``.

Keys come from ``[serve] ping_key_file`` (one a line, mode 0600, refused otherwise) or
``$ZOMBIETOP_PING_KEY``. Only their SHA-256 digests are kept, and a key asked with is compared
to every digest in constant time, so neither the timing nor a memory dump gives one away. No
key is ever logged: log lines and events name the job, never the URL.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from zombietop.errors import ZombietopError
from zombietop.private import read_secret

ENV_KEY = "ZOMBIETOP_PING_KEY"
MIN_KEY = 16
"""The shortest key accepted: a short one can be guessed."""
KEY_FILE_LIMIT = 64 * 1024


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", errors="surrogateescape")).digest()


class PingKeys:
    """The digests of the keys a ping may carry."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._digests = tuple(dict.fromkeys(_digest(key) for key in keys))

    def __bool__(self) -> bool:
        return bool(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def match(self, key: str) -> bool:
        """True when ``key`` is one of the keys; every digest is compared, every time."""
        asked = _digest(key)
        found = False
        for digest in self._digests:
            found |= hmac.compare_digest(asked, digest)
        return found


def _check_key(key: str, where: str) -> str:
    if len(key) < MIN_KEY or any(c.isspace() or c == "/" for c in key):
        raise ZombietopError(
            f"{where}: a ping key must be at least {MIN_KEY} characters with no space or '/'; "
            "make one with `openssl rand -hex 16`"
        )
    return key


def read_key_file(path: Path) -> list[str]:
    """The keys in ``path``, one a line (blank lines and ``#`` comments skipped).

    Refused unless it is a regular file only its owner can read or write (0600 or 0400).
    """
    what = "[serve] ping_key_file"
    keys = []
    for number, line in enumerate(
        read_secret(path, what=what, limit=KEY_FILE_LIMIT).splitlines(), 1
    ):
        text = line.strip()
        if text and not text.startswith("#"):
            keys.append(_check_key(text, f"{what} {path} line {number}"))
    return keys


def load_keys(path: Path | None, environ: Mapping[str, str] = os.environ) -> PingKeys:
    """Every configured key: the file's and the environment's."""
    keys = read_key_file(path) if path is not None else []
    env = environ.get(ENV_KEY, "").strip()
    if env:
        keys.append(_check_key(env, f"${ENV_KEY}"))
    return PingKeys(keys)
