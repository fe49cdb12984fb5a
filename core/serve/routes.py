"""The ping URLs, in healthchecks' shape: ``/ping/<key>/<job>[/start|/fail|/log|/beat|/<0-255>]``
by GET, HEAD or POST, with ``?rid=`` and ``?create=1``.

Every request is answered in this order, so nothing can be probed: a wrong key is the same 404
as an unknown job (and as a run that pings did not open); a bad job name or run id is 400; over
the job's rate limit is 429; a body larger than ``MAX_BODY_FACTOR`` times ``[serve]
body_limit`` is 413, refused before it changes anything. A ping that cannot begin to write in
time (other pings before it, a locked store) or whose client left is 503 with ``Retry-After``,
also before it changes anything. Of a body that fits, the last ``body_limit`` bytes are kept as
the run's output (its end is what a reader wants). Log lines name the job (printable), never
the URL: the URL holds the key.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from zombietop.errors import HeartbeatParseError, StoreBusy, ZombietopError
from zombietop.heartbeat_line import MAX_LINE, BeatLine, parse_line
from zombietop.http_server import connection_of
from zombietop.printable import bounded, is_printable
from zombietop.serve.keys import PingKeys
from zombietop.serve.pings import RID, Gate, Ping, PingBook, TooLate, TooManyJobs, UnknownJob
from zombietop.serve.rate import RateLimit

log = logging.getLogger("zombietop.serve")

METHODS = ("GET", "HEAD", "POST")
MAX_BODY_FACTOR = 16
"""A body up to this many times ``body_limit`` is read (its end kept); a larger one is 413."""
MAX_JOB = 200
"""The longest job name a ping may give."""
JOB = re.compile(rf"\w[\w.:@+-]{{0,{MAX_JOB - 1}}}\Z")
"""A job name a ping may give: one path segment of letters, digits and ``_ . : @ + -``, not
starting with ``.`` or ``-`` (so never ``..``, nor a ``/`` sent as ``%2F``)."""
READ_CHUNK = 64 * 1024
NOT_FOUND = "not found\n"
"""The answer to a wrong key and to an unknown job alike."""
ACTIONS = {"start": Ping.START, "fail": Ping.FAIL, "log": Ping.LOG, "beat": Ping.BEAT}
QUERY_WORDS = ("rid", "create")
"""Query keys that steer a ping; on ``/beat`` every other one is a heartbeat field."""


class TooLarge(Exception):
    pass


WAIT_SHARE = 0.4
"""The share of ``read_timeout`` a ping may wait (for the pings before it) before it begins to
write; past it, the ping is answered 503 and changes nothing. The rest is for its writes and
its answer: with the default ``read_timeout`` (10 s), 6 s, more than a write waits for a locked
SQLite store (5 s) before it gives up, so even then the answer comes before the cut."""
ANSWER_TIME = 0.5
"""Seconds kept before the connection is cut to send the answer: a ping whose first write still
waits for the store then is given up (503)."""
RETRY_AFTER = 5
"""Seconds a client is told to wait (``Retry-After``) when the store is locked or busy."""


def _text(status: int, text: str, **headers: str) -> web.Response:
    return web.Response(status=status, text=text, headers={"Connection": "close", **headers})


def beat_from_query(query: Mapping[str, str]) -> str:
    """``?stage=copy&p=40`` as a heartbeat line: ``stage="copy" p="40"``."""
    parts = []
    for key, value in query.items():
        if key in QUERY_WORDS:
            continue
        if key in ("p", "eta", "at", "req_at") or not _is_string_key(key):
            parts.append(f"{key}={value}")
        else:
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            parts.append(f'{key}="{escaped}"')
    return " ".join(parts)


def _is_string_key(key: str) -> bool:
    return key in ("stage", "checkpoint", "req", "trace")


async def read_tail(request: web.Request, keep: int, most: int) -> bytes:
    """The last ``keep`` bytes of the body; ``TooLarge`` past ``most`` bytes."""
    if request.content_length is not None and request.content_length > most:
        raise TooLarge
    tail = bytearray()
    seen = 0
    while True:
        chunk = await request.content.read(READ_CHUNK)
        if not chunk:
            return bytes(tail)
        seen += len(chunk)
        if seen > most:
            raise TooLarge
        tail += chunk
        if len(tail) > keep:
            del tail[: len(tail) - keep]


class Refused(Exception):
    """A request answered with ``status`` and ``text`` before it changes anything."""

    def __init__(self, status: int, text: str, **headers: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.headers = headers


@dataclass(frozen=True, slots=True)
class Asked:
    """What a ping URL asks: the job, the kind of ping, its exit status and run id."""

    job: str
    kind: Ping
    exit_code: int | None
    rid: str | None


def read_url(request: web.Request, keys: PingKeys) -> Asked:
    """Read the URL of a ping; ``Refused`` as the module says (a wrong key first: 404)."""
    if request.method not in METHODS:
        raise Refused(405, "use GET, HEAD or POST\n")
    if not keys.match(request.match_info["key"]):
        raise Refused(404, NOT_FOUND)
    job = request.match_info["job"]
    if not JOB.match(job) or not is_printable(job):
        raise Refused(
            400,
            f"a job name is 1 to {MAX_JOB} letters, digits, '_', '.', ':', '@', '+' or '-', "
            "starting with a letter or digit\n",
        )
    action = request.match_info.get("action", "")
    exit_code: int | None = None
    if action.isdigit() and int(action) <= 255:
        kind, exit_code = Ping.EXIT, int(action)
    elif action == "":
        kind = Ping.SUCCESS
    elif action in ACTIONS:
        kind = ACTIONS[action]
    else:
        raise Refused(404, NOT_FOUND)
    rid = request.query.get("rid") or None
    if rid is not None and not RID.match(rid):
        raise Refused(400, "rid is a UUID or a short word of letters, digits, '.', '_', '-'\n")
    return Asked(job=job, kind=kind, exit_code=exit_code, rid=rid)


def read_beat(body: bytes, query: Mapping[str, str]) -> BeatLine:
    """The heartbeat of a ``/beat``: the body's last line, else the query's fields."""
    text = body.decode("utf-8", errors="replace").strip().rsplit("\n", 1)[-1]
    line = text or beat_from_query(query)
    try:
        return parse_line(line[:MAX_LINE])
    except HeartbeatParseError as exc:
        raise Refused(400, bounded(f"not a heartbeat line: {exc}") + "\n") from None


def _gate(request: web.Request, read_timeout: float) -> Gate:
    """Until when the ping of ``request`` may begin to write, and the end of its connection."""
    connection = connection_of(request)
    if connection is None:
        return Gate()
    opened_at = connection.cut_at - read_timeout
    return Gate(
        write_by=opened_at + read_timeout * WAIT_SHARE,
        answer_by=connection.cut_at - ANSWER_TIME,
        gone=connection.gone,
    )


def build_app(
    book: PingBook,
    keys: PingKeys,
    *,
    clock: Callable[[], float],
    on_ping: Callable[[str], None],
    on_answer: Callable[[int], None],
) -> web.Application:
    """The aiohttp application answering pings into ``book``; ``on_ping`` hears each ping
    applied (its kind), ``on_answer`` the status of every answer."""
    settings = book.config.serve
    rate = RateLimit(settings.rate_limit, clock)
    most = settings.body_limit * MAX_BODY_FACTOR
    app = web.Application(client_max_size=most)

    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            response = await answer(request)
        except Refused as refused:
            response = _text(refused.status, refused.text, **refused.headers)
        on_answer(response.status)
        return response

    async def answer(request: web.Request) -> web.StreamResponse:
        asked = read_url(request, keys)
        job, kind = asked.job, asked.kind
        if not rate.allow(job):
            log.warning("ping of %s refused: over %d a minute", bounded(job), rate.limit)
            raise Refused(429, f"over {rate.limit} pings a minute for this job\n")
        try:
            body = await read_tail(request, settings.body_limit, most)
        except TooLarge:
            raise Refused(413, f"a body is at most {most} bytes\n") from None
        beat = read_beat(body, request.query) if kind is Ping.BEAT else None
        try:
            result = await book.ping(
                job,
                kind,
                rid=asked.rid,
                create=request.query.get("create") == "1",
                body=b"" if beat is not None else body,
                exit_code=asked.exit_code,
                beat=beat,
                gate=_gate(request, settings.read_timeout),
            )
        except UnknownJob:
            raise Refused(404, NOT_FOUND) from None
        except TooManyJobs as exc:
            log.warning("ping of %s refused: %s", bounded(job), exc)
            raise Refused(429, f"{exc}\n") from None
        except (TooLate, StoreBusy) as exc:
            # Nothing was changed: the client may send it again, and curl --retry does.
            log.warning("ping %s of %s not applied: %s", kind, bounded(job), bounded(str(exc)))
            said = "the store is busy; nothing was changed, try again\n"
            raise Refused(503, said, **{"Retry-After": str(RETRY_AFTER)}) from None
        except ZombietopError as exc:
            log.warning("ping %s of %s failed: %s", kind, bounded(job), bounded(str(exc)))
            raise Refused(409, bounded(str(exc)) + "\n") from None
        on_ping(str(kind))
        log.info("ping %s of %s", kind, bounded(job))
        said = "OK" if result is None else f"OK {result.task_id} {result.state}"
        return _text(200, bounded(said, limit=400) + "\n")

    app.router.add_route("*", "/ping/{key}/{job}", handle)
    app.router.add_route("*", "/ping/{key}/{job}/{action}", handle)
    return app
