"""``RedisSource``: the base of the sources that read an engine's Redis (Celery, RQ, BullMQ,
Dramatiq), built on ``ReadOnlySource``.

It gives them one way to connect, to check that Redis answers and to let go: a redis-py
client with short timeouts, named ``zombietop`` so that its connections show in Redis's
``CLIENT LIST`` (and the tests can tell its commands from the workers'). A subclass says which
extra brings the client and writes ``poll``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar
from urllib.parse import parse_qs, urlsplit

from zombietop.clock import Clock
from zombietop.errors import MissingExtra, SourceError
from zombietop.extras import require
from zombietop.locations import printable_url
from zombietop.sources.base import ReadOnlySource

T = TypeVar("T")
REDIS_TIMEOUT = 5.0
"""Seconds to connect, and to wait for one answer of Redis."""


def check_redis_url(url: str, *, engine: str, form: str, option: str, default: str) -> str:
    """Return ``url`` if it is ``form`` (the engine's scheme on a Redis URL whose DB is a
    number) with at most ``?OPTION=NAME`` (the engine's keys' prefix, ``default`` without it);
    else raise saying how to write one. ``engine`` names it in the error: "BullMQ's Redis"."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme != form.split("://", 1)[0]:
        raise SourceError(f"source {printable_url(url)!r}: not {engine}; use {form}")
    parts = urlsplit(url)
    db = parts.path.strip("/")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise SourceError(f"source {printable_url(url)!r}: the port is not a number") from None
    query = parse_qs(parts.query, keep_blank_values=True)
    value = query.get(option, [default])
    if (
        not parts.hostname
        or (db and not db.isdigit())
        or set(query) - {option}
        or len(value) != 1
        or not value[0]
    ):
        raise SourceError(
            f"source {printable_url(url)!r}: write {form} (DB is a number, 0 by default; "
            f"?{option}=NAME when it uses another {option} than {default})"
        )
    return url


class RedisSource(ReadOnlySource):
    """The base of a read-only source on an engine's Redis: ``open``, ``close`` and the client."""

    extra: ClassVar[str]
    """The extra that brings the Redis client for this engine (``rq``)."""
    needs: ClassVar[str]
    """What needs the client, in words, for the error when it is missing (``an RQ source``)."""

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(url, heartbeat_timeout=heartbeat_timeout, clock=clock)
        parts = urlsplit(url)
        self.redis_url = "redis://" + parts.netloc + (parts.path or "/0")
        """The URL redis-py reads: the engine's scheme and query left out."""
        self.redis_host = parts.hostname or "127.0.0.1"
        self.redis_port = parts.port or 6379
        self.redis_db = int(parts.path.strip("/") or 0)
        self._redis: Any = None
        self._errors: tuple[type[BaseException], ...] = (OSError,)
        """What the client raises when Redis cannot be read (``redis.RedisError`` once open)."""

    async def in_thread(self, call: Callable[[], T]) -> T:
        """Run a blocking call of the client away from the event loop."""
        return await asyncio.to_thread(call)

    async def open(self) -> None:
        try:
            require(self.needs, "redis", extra=self.extra)
        except MissingExtra as exc:
            raise SourceError(f"source {self.name}: {exc}") from None
        await self.in_thread(self._connect)

    def _connect(self) -> None:
        import redis

        self._errors = (OSError, redis.RedisError)
        if self._redis is None:
            # The name shows zombietop's connections in Redis's CLIENT LIST.
            self._redis = redis.Redis.from_url(
                self.redis_url,
                socket_timeout=REDIS_TIMEOUT,
                socket_connect_timeout=REDIS_TIMEOUT,
                client_name="zombietop",
            )
        try:
            self._redis.ping()
        except self._errors as exc:
            raise SourceError(f"source {self.name}: cannot connect to Redis ({exc})") from None

    async def close(self) -> None:
        def shut() -> None:
            if self._redis is not None:
                self._redis.close()
                self._redis = None

        await self.in_thread(shut)
