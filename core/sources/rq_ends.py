"""How RQ's jobs end, and how RQ's keys are read, from its Redis without writing.

Each key is read so that one of another type than RQ writes there is skipped and named, not
fatal (``Keys``). The jobs that ended are read from the FailedJobRegistry (``rq:failed:QUEUE``)
and the FinishedJobRegistry (``rq:finished:QUEUE``), each a sorted set whose score is when RQ
forgets the entry; a failed job's error from its latest result.

RQ 2 keeps each run's result in a stream of its own (``rq:results:ID``; ``exc_string`` is
zlib-compressed, then base64); older RQ keeps the last error in the job's hash (``exc_info``,
zlib-compressed). Both are read with a bound, since anyone who writes to Redis writes them.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from zombietop.printable import printable

ENDED_SHOWN = 1000
"""Jobs read from each ended registry: those RQ forgets last, so the latest to end."""
ENDED_FIELDS = ("description", "started_at", "enqueued_at", "ended_at", "worker_name", "status")
ERROR_READ = 64 * 1024
"""The most bytes of an error's text inflated: enough for a long traceback's last line."""
ERROR_BYTES = 4096
"""The most bytes of an error read as plain text (older RQ, or a hash not compressed)."""
ERROR_SHOWN = 200
"""The most characters of an error kept in a task's reason."""
NOTES_SHOWN = 5
"""Keys of the wrong type named in ``notes``; the others are counted."""
T = TypeVar("T")
REGISTRIES = (("failed", "rq:failed:{}"), ("finished", "rq:finished:{}"))
"""RQ's status word of the jobs in each ended registry, and the registry's key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ended:
    """One job in an ended registry, with its hash's fields."""

    queue: str
    job_id: str
    status: str
    """``failed`` or ``finished``: the registry it was found in."""
    fields: Mapping[str, str | None]
    error: str | None = None
    """The last line of a failed job's error (``ValueError: boom``), printable."""


def inflate(data: bytes) -> str | None:
    """zlib-compressed text, at most ``ERROR_READ`` bytes of it; None when it is not zlib."""
    try:
        out = zlib.decompressobj().decompress(data, ERROR_READ)
    except zlib.error:
        return None
    return out.decode(errors="replace")


def result_error(fields: Mapping[bytes, bytes]) -> str | None:
    """The error text of one entry of RQ 2's result stream; None when it holds none."""
    raw = fields.get(b"exc_string")
    if not raw:
        return None
    try:
        packed = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None
    return inflate(packed)


def last_line(error: str | None) -> str | None:
    """The last line of a traceback (the exception and its message), printable and short."""
    if not error:
        return None
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[-1]
    if len(line) > ERROR_SHOWN:
        line = line[: ERROR_SHOWN - 3] + "..."
    return printable(line)


class Keys:
    """Reads of RQ's keys in which a key of another type is skipped and named, not fatal: one
    such key must not hide every other job."""

    def __init__(self, wrong_type: type[BaseException]) -> None:
        self.wrong_type = wrong_type
        self.skipped: list[str] = []

    def read(self, key: str, kind: str, call: Callable[[], T], empty: T) -> T:
        """``call()``, or ``empty`` when Redis says ``key`` holds another type than ``kind``."""
        try:
            return call()
        except self.wrong_type as exc:
            if "WRONGTYPE" not in str(exc):
                raise
            self._skip(key, kind)
            return empty

    def many(
        self, redis: Any, kind: str, keys: Sequence[str], call: Callable[..., Any]
    ) -> list[Any]:
        """``call(pipeline, key)`` for each of ``keys``, in one round trip to Redis (a thousand
        jobs' hashes one by one took 0.6 s); None for a key of another type than ``kind``."""
        pipe = redis.pipeline(transaction=False)
        for key in keys:
            call(pipe, key)
        found: list[Any] = []
        for key, got in zip(keys, pipe.execute(raise_on_error=False), strict=True):
            if isinstance(got, self.wrong_type) and "WRONGTYPE" in str(got):
                self._skip(key, kind)
                found.append(None)
            elif isinstance(got, BaseException):
                raise got
            else:
                found.append(got)
        return found

    def _skip(self, key: str, kind: str) -> None:
        shown = key if len(key) <= 200 else key[:197] + "..."
        self.skipped.append(f"{printable(shown)} (not {kind})")


def notes(skipped: Sequence[str]) -> tuple[str, ...]:
    """What a read skipped, in words: the first keys of another type by name, the rest
    counted."""
    if not skipped:
        return ()
    named = ", ".join(skipped[:NOTES_SHOWN])
    more = len(skipped) - NOTES_SHOWN
    also = f" and {more} more" if more > 0 else ""
    return (f"skipped {named}{also}: not the type RQ writes there; the other keys were read",)


def failures(redis: Any, keys: Keys, job_ids: Sequence[str]) -> dict[str, str]:
    """By job id, the last line of each failed job's error: from its latest result (RQ 2),
    else from its hash (older RQ)."""
    found: dict[str, str] = {}
    latest = keys.many(
        redis,
        "a stream",
        [f"rq:results:{job_id}" for job_id in job_ids],
        lambda pipe, key: pipe.xrevrange(key, count=1),
    )
    for job_id, entries in zip(job_ids, latest, strict=True):
        for _, fields in entries or ():
            said = last_line(result_error(fields))
            if said is not None:
                found[job_id] = said
    older = [job_id for job_id in job_ids if job_id not in found]
    raws = keys.many(
        redis,
        "a hash",
        [f"rq:job:{job_id}" for job_id in older],
        lambda pipe, key: pipe.hget(key, "exc_info"),
    )
    for job_id, raw in zip(older, raws, strict=True):
        said = (
            last_line(inflate(raw) or raw[:ERROR_BYTES].decode(errors="replace")) if raw else None
        )
        if said is not None:
            found[job_id] = said
    return found
