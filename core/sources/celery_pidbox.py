"""Ask Celery's workers what they hold, with plain Redis commands and no kombu channel.

``celery inspect`` goes through a kombu channel, and every kombu Redis channel that waits for
messages also runs the transport's ``restore_visible``: it moves each message unacknowledged
past its visibility timeout from ``unacked`` back into its queue. A read-only watcher must not
do that, so this module speaks the pidbox protocol itself:

1. bind a reply queue of its own to the ``reply.celery.pidbox`` exchange (one member of the
   exchange's binding set, as kombu writes it);
2. publish one broadcast per question on the ``celery.pidbox`` fanout channel, each with its
   own ticket;
3. pop the answers from the reply queue until the timeout, then delete the queue and the
   binding member.

Every key it writes belongs to the pidbox (the broadcast's channel, the reply queue and its
binding); no queue of tasks, no ``unacked`` key is touched.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

EXCHANGE = "celery.pidbox"
REPLY_EXCHANGE = "reply.celery.pidbox"
BINDINGS = "_kombu.binding.%s"
"""kombu's key for an exchange's binding set; each member is ``KEY SEP PATTERN SEP QUEUE``."""
SEP = "\x06\x16"
"""kombu's separator in a binding member."""


def broadcast_message(method: str, ticket: str, reply_key: str, expires: float) -> bytes:
    """One pidbox broadcast, as kombu's Redis transport writes it on the fanout channel."""
    body = {
        "method": method,
        "arguments": {},
        "destination": None,
        "pattern": None,
        "matcher": None,
        "ticket": ticket,
        "reply_to": {"exchange": REPLY_EXCHANGE, "routing_key": reply_key},
    }
    envelope = {
        "body": base64.b64encode(json.dumps(body).encode()).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {"clock": 1, "expires": expires},
        "properties": {
            "delivery_mode": 1,
            "delivery_info": {"exchange": EXCHANGE, "routing_key": ""},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        },
    }
    return json.dumps(envelope).encode()


class UnreadableReply(Exception):
    """A worker answered in a serializer other than JSON (Celery answers in its
    ``task_serializer``); zombietop never loads pickle or other formats from a broker."""


def reply_of(raw: bytes) -> tuple[str, dict[str, Any]] | None:
    """The ticket and the ``{worker: answer}`` of one reply, or None for anything else.

    Raises ``UnreadableReply`` for a reply in another serializer than JSON.
    """
    try:
        envelope = json.loads(raw)
        kind = envelope.get("content-type")
        if kind not in (None, "application/json"):
            raise UnreadableReply(
                f"a worker answered in {str(kind)[:60]!r}; zombietop reads JSON answers only "
                '(Celery answers in its task_serializer: set task_serializer = "json", '
                "the default)"
            )
        body = envelope["body"]
        if (envelope.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        answer = json.loads(body)
        ticket = (envelope.get("headers") or {}).get("ticket")
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if not isinstance(ticket, str) or not isinstance(answer, dict):
        return None
    return ticket, answer


def ask(
    client: Any,
    db: int,
    methods: Sequence[str],
    *,
    timeout: float,
    monotonic: Callable[[], float] = time.monotonic,
) -> dict[str, dict[str, Any]]:
    """Broadcast each of ``methods`` to every worker; return ``{method: {worker: answer}}``.

    All the questions share one reply queue and one wait of ``timeout`` seconds, as long as
    ``celery inspect`` waits for one question.
    """
    reply_key = str(uuid.uuid4())
    queue = f"{reply_key}.{REPLY_EXCHANGE}"
    binding = BINDINGS % REPLY_EXCHANGE
    member = SEP.join([reply_key, "", queue])
    tickets = {str(uuid.uuid4()): method for method in methods}
    answers: dict[str, dict[str, Any]] = {method: {} for method in methods}
    client.sadd(binding, member)
    try:
        expires = time.time() + timeout
        for ticket, method in tickets.items():
            client.publish(
                f"/{db}.{EXCHANGE}", broadcast_message(method, ticket, reply_key, expires)
            )
        deadline = monotonic() + timeout
        while (left := deadline - monotonic()) > 0:
            popped = client.brpop([queue], timeout=min(max(left, 0.01), 1.0))
            if popped is None:
                continue
            found = reply_of(popped[1])
            if found is not None and found[0] in tickets:
                answers[tickets[found[0]]].update(found[1])
    finally:
        # Our own reply binding and queue, made above: never a key of Celery's own.
        client.srem(binding, member)
        client.delete(queue)
    return answers
