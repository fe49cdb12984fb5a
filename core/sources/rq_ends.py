"""How RQ's jobs end, read from its Redis without writing: the FailedJobRegistry
(``rq:failed:QUEUE``) and the FinishedJobRegistry (``rq:finished:QUEUE``), each a sorted set
whose score is when RQ forgets the entry, and the error of a failed job.

RQ 2 keeps each run's result in a stream of its own (``rq:results:ID``; ``exc_string`` is
zlib-compressed, then base64); older RQ keeps the last error in the job's hash (``exc_info``,
zlib-compressed). Both are read with a bound, since anyone who writes to Redis writes them.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from zombietop.printable import printable

ENDED_SHOWN = 1000
"""Jobs read from each ended registry: those RQ forgets last, so the latest to end."""
ENDED_FIELDS = ("description", "started_at", "enqueued_at", "ended_at", "worker_name", "status")
ERROR_READ = 64 * 1024
"""The most bytes of an error's text inflated: enough for a long traceback's last line."""
ERROR_SHOWN = 200
"""The most characters of an error kept in a task's reason."""
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
