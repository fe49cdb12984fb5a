"""One bounded HTTP server for all that zombietop serves: ``/metrics`` today, ``zombietop serve``
(pings, the wall) next. It runs an aiohttp application on the caller's event loop.

A local user must not be able to blow the process up or blind it with connections, so:

- at most ``max_connections`` are open at once. One more takes the place of the oldest that
  has not sent its whole request yet (a client that sends only a request line), else of the
  oldest of all: an honest scraper, which asks at once and reads at once, is served even while
  a flood of slow clients holds every place;
- each connection carries one request (``Connection: close``) and has ``deadline`` seconds to
  send it and read the answer; a client that sends only a request line, or reads nothing,
  is cut off then (aiohttp itself never times out a request that does not come);
- a connection a handler ``hold``s (the wall's websocket, authenticated and bounded in number
  by its handler) leaves both bounds: no deadline, never evicted, not counted against
  ``max_connections``;
- a body is written in chunks that wait for the client to read (``send_bytes``): a slow
  reader holds a chunk, never a copy of the body;
- a request refused before it reaches a handler (a request line or header too long, not
  HTTP) is logged as one short line without what the client sent: a URL can hold a key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from zombietop.config import ListenAddress
from zombietop.errors import ZombietopError

log = logging.getLogger("zombietop.http")

MAX_CONNECTIONS = 32
"""Connections open at once, every client together."""
DEADLINE = 10.0
"""Seconds a connection has to send its request and read the answer."""
CHUNK = 64 * 1024
"""Bytes of a body handed to the kernel at a time."""


async def send_bytes(
    request: web.Request, body: bytes, *, content_type: str, status: int = 200
) -> web.StreamResponse:
    """Answer ``request`` with ``body``, a chunk at a time as the client reads it."""
    response = web.StreamResponse(status=status, headers={"Content-Type": content_type})
    response.content_length = len(body)
    response.force_close()
    await response.prepare(request)
    view = memoryview(body)
    for start in range(0, len(body), CHUNK):
        await response.write(view[start : start + CHUNK])  # waits while the client lags
    await response.write_eof()
    return response


class HttpServer:
    """Serve an aiohttp application within bounds; ``start`` binds, ``close`` ends every
    connection."""

    def __init__(
        self,
        app: web.Application,
        *,
        max_connections: int = MAX_CONNECTIONS,
        deadline: float = DEADLINE,
        max_line_size: int = 8190,
        max_field_size: int = 8190,
        max_headers: int = 128,
    ) -> None:
        """The last three bound a request's head (aiohttp's defaults unless given): its
        request line and each header's length, and how many headers it has."""
        self.app = app
        self.max_connections = max_connections
        self.deadline = deadline
        self.evicted = 0
        """Connections closed since the start to make room for a newer one."""
        self.cut = 0
        """Connections closed at their deadline since the start."""
        self._guards: dict[asyncio.BaseTransport, _Guard] = {}
        """The open connections, oldest first."""
        self._held: dict[asyncio.BaseTransport, _Guard] = {}
        """The connections held open (``hold``): outside both bounds."""
        app[SERVER] = self
        app.middlewares.append(self._asked)
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            max_line_size=max_line_size,
            max_field_size=max_field_size,
            max_headers=max_headers,
            logger=log,
        )
        self._server: asyncio.Server | None = None
        self.address: ListenAddress | None = None
        """Where it listens, once started (the port it got, when asked for any)."""

    @property
    def open(self) -> int:
        """Connections open now."""
        return len(self._guards) + len(self._held)

    @property
    def held(self) -> int:
        """Connections held open now (``hold``)."""
        return len(self._held)

    def hold(self, transport: asyncio.BaseTransport | None) -> None:
        """Take the connection of ``transport`` out of the deadline and the eviction."""
        guard = self._guards.pop(transport, None) if transport is not None else None
        if guard is None or guard.transport is None:
            return
        if guard.timer is not None:
            guard.timer.cancel()
        self._held[guard.transport] = guard

    @web.middleware
    async def _asked(self, request: web.Request, handler: Any) -> web.StreamResponse:
        guard = self._guards.get(request.transport) if request.transport else None
        if guard is not None:
            guard.asked = True
        response: web.StreamResponse = await handler(request)
        return response

    def connection(self, request: web.Request) -> Connection | None:
        """When the connection of ``request`` is cut, and the event set once it is gone."""
        guard = self._guards.get(request.transport) if request.transport else None
        if guard is None:
            return None
        return Connection(cut_at=guard.cut_at, gone=guard.gone)

    def _admit(self, transport: asyncio.BaseTransport, guard: _Guard) -> None:
        if len(self._guards) >= self.max_connections:
            waiting = (g for g in self._guards.values() if not g.asked)
            victim = next(waiting, None) or next(iter(self._guards.values()))
            self.evicted += 1
            self._drop(victim)
        self._guards[transport] = guard

    def _drop(self, guard: _Guard) -> None:
        if guard.transport is not None and self._guards.pop(guard.transport, None) is not None:
            guard.transport.abort()

    async def start(self, address: ListenAddress, *, what: str, hint: str) -> None:
        """Bind ``address``; a failure is one line naming ``what`` and how to fix it."""
        await self._runner.setup()
        factory = self._runner.server
        assert factory is not None
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(
                lambda: _Guard(self, factory()), address.host, address.port, backlog=128
            )
        except OSError as exc:
            await self._runner.cleanup()
            raise ZombietopError(
                f"cannot serve {what} on {address}: {exc.strerror or exc}; {hint}"
            ) from None
        host, port = self._server.sockets[0].getsockname()[:2]
        self.address = ListenAddress(host=str(host), port=int(port))

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._runner.cleanup()
        for guard in list(self._held.values()):
            if guard.transport is not None:
                guard.transport.abort()
        self._held.clear()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), self.deadline)


class _Guard(asyncio.Protocol):
    """Stand between the socket and aiohttp's protocol: count, make room, and cut off."""

    def __init__(self, server: HttpServer, inner: Any) -> None:
        self.server = server
        self.inner: Any = inner
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.asked = False
        """Its request was read whole (it is being answered)."""
        self.cut_at = 0.0
        """The loop's time at which it is cut off."""
        self.gone = asyncio.Event()
        """Set once the connection is closed, by either side."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server._admit(transport, self)
        loop = asyncio.get_running_loop()
        self.cut_at = loop.time() + self.server.deadline
        self.timer = loop.call_at(self.cut_at, self._cut)
        self.inner.connection_made(transport)

    def _cut(self) -> None:
        self.server.cut += 1
        self.server._drop(self)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone.set()
        if self.timer is not None:
            self.timer.cancel()
        if self.transport is not None:
            self.server._guards.pop(self.transport, None)
            self.server._held.pop(self.transport, None)
        self.inner.connection_lost(exc)


@dataclass(frozen=True, slots=True)
class Connection:
    """What a handler may know of its connection: a handler that writes gives up in time."""

    cut_at: float
    """The loop's time at which the connection is cut off (its deadline)."""
    gone: asyncio.Event
    """Set once the connection is closed: the client left, or was cut off."""


class _ShortRefusals(logging.Filter):
    """Make aiohttp's record of a refused request one line that names the refusal, not what
    the client sent (its message quotes the request line, and so a ping key or a token)."""

    def filter(self, record: logging.LogRecord) -> bool:
        refusal = record.exc_info[1] if record.exc_info else None
        if isinstance(refusal, HttpProcessingError):
            client = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg = "refused a request from %s: %s (HTTP %s)"
            record.args = (client, type(refusal).__name__, refusal.code)
            record.exc_info = None
            record.exc_text = None
        return True


log.addFilter(_ShortRefusals())


SERVER = web.AppKey("zombietop_http_server", HttpServer)
"""The ``HttpServer`` serving an application, in the application (``hold``)."""


def connection_of(request: web.Request) -> Connection | None:
    """The deadline and the end of the connection of ``request`` (None outside the bounds)."""
    return request.config_dict[SERVER].connection(request)


def hold(request: web.Request) -> None:
    """Keep the connection of ``request`` open past the deadline, and never evict it: for a
    long-lived answer (a websocket) whose handler has checked the client and bounds how many
    it keeps."""
    request.config_dict[SERVER].hold(request.transport)
