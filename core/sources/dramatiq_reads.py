"""How Dramatiq's keys are read from its Redis, without writing, and which worker a connection is.

Dramatiq's Redis broker keeps everything under a namespace (``dramatiq`` by default):

- ``NS:QUEUE``, a list of message ids that wait, and ``NS:QUEUE.msgs``, the hash of their data
  (a message id is the broker's ``redis_message_id``, new at each enqueue);
- ``NS:QUEUE.DQ`` and ``NS:QUEUE.DQ.msgs``, the same for delayed messages (``eta`` in their
  options);
- ``NS:QUEUE.XQ``, a sorted set of dead-lettered (failed) message ids scored by when they
  failed, in milliseconds, and ``NS:QUEUE.XQ.msgs``, their data;
- ``NS:__acks__.WORKER.QUEUE``, the set of message ids that worker has fetched and not yet
  acknowledged: what it holds, running or prefetched;
- ``NS:__heartbeats__``, a sorted set of worker ids scored by the time of their last call, in
  milliseconds. A worker is a broker object, one per worker process, with a random id.

The data is the message as the broker encoded it (JSON by default). Only its names, times and
counters are read: never ``args`` or ``kwargs``, which the message's sender fills.

Redis does not say which connection a worker id uses. Every call of a worker names its id in
its arguments (``EVALSHA ... NS COMMAND TIME QUEUE WORKER ...``), so ``beating_connections``
reads Redis's ``MONITOR`` for up to two seconds, which changes nothing, and keeps the address of
each connection that named a worker id it was asked for; the rest of the traffic is dropped
unread.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SHOWN = 1000
"""Messages read from the head of each queue, delay queue, dead-letter set or acks set."""
QUEUES_SHOWN = 1000
"""Queues read at most."""
DATA_SHOWN = 65536
"""The most bytes of one message's data decoded: a longer one is listed without its names."""
ACKS = "__acks__."
HEARTBEATS = "__heartbeats__"
MONITOR_WINDOW = 2.0
"""Seconds of ``MONITOR`` read at most: an idle Dramatiq worker calls Redis at least once a
second (its consumers' longest wait, ``dramatiq_worker_timeout``)."""


def text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message as Dramatiq's broker keeps it, and where it was found."""

    queue: str
    """Its queue, without ``.DQ`` (a delayed message's queue is the one it runs on)."""
    where: str
    """``held`` (in a worker's acks set), ``queued``, ``delayed`` or ``failed``."""
    redis_id: str
    """The broker's id of this copy (``redis_message_id``): what its keys hold."""
    key_queue: str
    """The queue name of the keys it is in: ``QUEUE``, ``QUEUE.DQ`` (acks and messages)."""
    message_id: str
    """Dramatiq's ``message_id``, kept when the message is retried; the broker's id when the
    data does not read."""
    actor: str | None
    """The actor's name; None when the data does not read (another encoder, or too long)."""
    enqueued: float | None = None
    """``message_timestamp``, epoch seconds."""
    eta: float | None = None
    """A delayed message: when it is due, epoch seconds."""
    retries: int = 0
    worker: str | None = None
    """A held message: the worker that holds it."""
    failed_at: float | None = None
    """A dead-lettered message: when it failed, epoch seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DramatiqReads:
    read_at: float
    messages: tuple[Message, ...]
    beats: Mapping[str, float]
    """Each worker that holds a message, and its last beat (epoch seconds) if it has one."""


def names(scan: Callable[[str], Iterable[Any]], namespace: str) -> tuple[list[str], list[str]]:
    """The queue names of the message hashes (``QUEUE``, ``QUEUE.DQ``, ``QUEUE.XQ``) and the
    acks keys' tails (``WORKER.QUEUE``) under ``namespace``."""
    head = f"{namespace}:"
    queues: set[str] = set()
    for key in scan(f"{head}*.msgs"):
        name = (text(key) or "").removeprefix(head).removesuffix(".msgs")
        if name and not name.startswith(ACKS):
            queues.add(name)
    acks = sorted(
        tail
        for key in scan(f"{head}{ACKS}*")
        if "." in (tail := (text(key) or "").removeprefix(head + ACKS))
    )
    return sorted(queues)[:QUEUES_SHOWN], acks[: QUEUES_SHOWN * 10]


def read_broker(redis: Any, namespace: str, since: float | None, now: float) -> DramatiqReads:
    """Every message that waits, is held by a worker, or failed at or after ``since``, and the
    last beat of each worker that holds one, in a few round trips."""
    queues, acks = names(lambda match: redis.scan_iter(match=match, count=1000), namespace)
    head = f"{namespace}:"
    after = "-inf" if since is None else int(since * 1000)
    pipe = redis.pipeline(transaction=False)
    for queue in queues:
        if queue.endswith(".XQ"):
            pipe.zrevrangebyscore(head + queue, "+inf", after, start=0, num=SHOWN, withscores=True)
        else:
            pipe.lrange(head + queue, 0, SHOWN - 1)
    for tail in acks:
        pipe.srandmember(head + ACKS + tail, SHOWN)
    got = iter(pipe.execute(raise_on_error=False))
    # (where, key_queue, redis id, worker, failed at): what to read each message's data for.
    listed: list[tuple[str, str, str, str | None, float | None]] = []
    for queue in queues:
        found = next(got)
        if queue.endswith(".XQ"):
            for member, score in found if isinstance(found, list) else ():
                listed.append(("failed", queue, text(member) or "", None, float(score) / 1000))
        else:
            where = "delayed" if queue.endswith(".DQ") else "queued"
            listed.extend((where, queue, found_id, None, None) for found_id in _ids(found))
    workers: set[str] = set()
    for tail in acks:
        worker, _, queue = tail.partition(".")
        ids = _ids(next(got))
        if ids:
            workers.add(worker)
        listed.extend(("held", queue, found_id, worker, None) for found_id in ids)
    return DramatiqReads(
        read_at=now,
        messages=tuple(_messages(redis, head, listed)),
        beats=_beats(redis, head + HEARTBEATS, sorted(workers)),
    )


def _ids(found: Any) -> list[str]:
    """The ids of one list or set; none for a key of another type (Redis's error)."""
    if not isinstance(found, list):
        return []
    return sorted({found_id for found_id in map(text, found) if found_id})


def _beats(redis: Any, key: str, workers: Sequence[str]) -> dict[str, float]:
    if not workers:
        return {}
    pipe = redis.pipeline(transaction=False)
    for worker in workers:
        pipe.zscore(key, worker)
    got = pipe.execute(raise_on_error=False)
    return {
        worker: float(score) / 1000
        for worker, score in zip(workers, got, strict=True)
        if isinstance(score, float | int)
    }


def _messages(
    redis: Any, head: str, listed: Sequence[tuple[str, str, str, str | None, float | None]]
) -> list[Message]:
    """Each listed message's data, in one round trip; a message whose data is gone (the
    broker acknowledged or moved it meanwhile) is left out."""
    pipe = redis.pipeline(transaction=False)
    for _, key_queue, redis_id, _, _ in listed:
        pipe.hget(f"{head}{key_queue}.msgs", redis_id)
    found: list[Message] = []
    for (where, key_queue, redis_id, worker, failed_at), data in zip(
        listed, pipe.execute(raise_on_error=False), strict=True
    ):
        if not isinstance(data, bytes | str):
            continue
        found.append(
            decoded(
                data,
                queue=key_queue.removesuffix(".XQ").removesuffix(".DQ"),
                where=where,
                redis_id=redis_id,
                key_queue=key_queue,
                worker=worker,
                failed_at=failed_at,
            )
        )
    return found


def decoded(data: bytes | str, **where: Any) -> Message:
    """A message from its data as the broker keeps it; without names when it does not read as
    Dramatiq's JSON (another encoder, such as pickle, is never decoded)."""
    fields: Any = None
    if len(data) <= DATA_SHOWN:
        try:
            fields = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            fields = None
    if not isinstance(fields, dict):
        return Message(message_id=where["redis_id"], actor=None, **where)
    options = fields.get("options")
    options = options if isinstance(options, dict) else {}
    actor, message_id = fields.get("actor_name"), fields.get("message_id")
    return Message(
        message_id=message_id if isinstance(message_id, str) and message_id else where["redis_id"],
        actor=actor if isinstance(actor, str) and actor else None,
        enqueued=_millis(fields.get("message_timestamp")),
        eta=_millis(options.get("eta")),
        retries=_count(options.get("retries")),
        **where,
    )


def _millis(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value) / 1000


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def beating_connections(
    redis: Any, namespace: str, db: int, wanted: set[str], window: float = MONITOR_WINDOW
) -> dict[str, set[str]]:
    """By worker id, the addresses (``HOST:PORT``) of the connections that named one of
    ``wanted`` in a call to the broker's script within ``window`` seconds of ``MONITOR``."""
    found: dict[str, set[str]] = {}
    deadline = time.monotonic() + window
    with redis.monitor() as monitor:
        while set(found) < wanted:
            left = deadline - time.monotonic()
            if left <= 0 or not monitor.connection.can_read(timeout=left):
                break
            said = monitor.next_command()
            if not said or said.get("db") != db or said.get("client_type") != "tcp":
                continue
            worker = script_worker(str(said.get("command") or ""), namespace)
            if worker in wanted:
                address = f"{said['client_address']}:{said['client_port']}"
                found.setdefault(worker, set()).add(address)
    return found


def script_worker(command: str, namespace: str) -> str | None:
    """The worker id a call of Dramatiq's dispatch script names (``EVALSHA SHA 1 NS COMMAND
    TIME QUEUE WORKER ...``); None for any other command."""
    words = command.split(" ", 8)
    if len(words) < 8 or words[0].upper() not in ("EVALSHA", "EVAL"):
        return None
    if words[2] != "1" or words[3] != namespace:
        return None
    return words[7]
