"""The ping server: the routes on one bounded ``HttpServer``, loopback unless a key is set
(and the wall, ``serve --wall``, loopback unless a token is set)."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from aiohttp import web

from zombietop.config import ListenAddress, ServeSettings
from zombietop.errors import ZombietopError
from zombietop.http_server import HttpServer, send_bytes
from zombietop.serve.keys import ENV_KEY, ENV_WALL_TOKEN, PingKeys
from zombietop.serve.pings import PingBook
from zombietop.serve.routes import build_app

if TYPE_CHECKING:
    from zombietop.serve.metrics import ServeMetrics

HEAD_LIMITS = {"max_line_size": 4096, "max_field_size": 4096, "max_headers": 32}
"""A ping's request line and headers are short: curl and runitor send a handful."""


def is_loopback(host: str) -> bool:
    """True for an address only this host can reach (127.0.0.0/8, ::1, ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen(address: ListenAddress, keys: PingKeys) -> None:
    """Refuse an address other hosts can reach unless a ping key guards it."""
    if not keys and not is_loopback(address.host):
        raise ZombietopError(
            f"serve: not listening on {address} without a ping key: any host there could "
            f"start and end runs. Set [serve] ping_key_file (mode 0600) or ${ENV_KEY}, "
            "or listen on 127.0.0.1"
        )


def check_wall(address: ListenAddress, tokens: PingKeys) -> None:
    """Refuse to show the wall where other hosts can reach it unless a token guards it."""
    if not tokens and not is_loopback(address.host):
        raise ZombietopError(
            f"serve --wall: not showing the wall on {address} without a token: any host there "
            f"could read every task. Set [serve] wall_token_file (mode 0600) or "
            f"${ENV_WALL_TOKEN}, or listen on 127.0.0.1"
        )


def _bearer_matches(request: web.Request, keys: PingKeys) -> bool:
    said = request.headers.get("Authorization", "")
    return said.startswith("Bearer ") and keys.match(said[len("Bearer ") :].strip())


class PingServer:
    """Answer pings into ``book`` at ``address`` until ``close``."""

    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.pings = 0
        """Pings answered 200 since the start."""
        self.metrics: ServeMetrics | None = None
        """Its figures at ``/metrics``, when asked for (``--metrics``)."""
        self.metrics_keys: PingKeys | None = None
        """The keys ``/metrics`` asks for: None on loopback, where any local user may read."""

    def _pinged(self, kind: str) -> None:
        self.pings += 1
        if self.metrics is not None:
            self.metrics.pings.labels(ping=kind).inc()

    def _answered(self, status: int) -> None:
        if self.metrics is not None:
            self.metrics.answers.labels(status=str(status)).inc()

    async def _serve_metrics(self, request: web.Request) -> web.StreamResponse:
        assert self.metrics is not None
        from zombietop.serve.metrics import CONTENT_TYPE

        if self.metrics_keys is not None and not _bearer_matches(request, self.metrics_keys):
            # Off loopback the page says which jobs run and how often: a scraper shows a key
            # (Prometheus: `authorization: {credentials_file: ...}`).
            return web.Response(
                status=401,
                text="metrics need a ping key: Authorization: Bearer KEY\n",
                headers={"WWW-Authenticate": 'Bearer realm="zombietop serve"'},
            )

        return await send_bytes(request, self.metrics.render(), content_type=CONTENT_TYPE)

    @classmethod
    async def start(
        cls,
        book: PingBook,
        keys: PingKeys,
        address: ListenAddress,
        settings: ServeSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        metrics: bool = False,
        mount: Callable[[web.Application], None] | None = None,
    ) -> PingServer:
        """``mount`` adds more routes to the application (the wall's) before it is served."""
        check_listen(address, keys)
        holder: list[PingServer] = []
        app = build_app(
            book,
            keys,
            clock=clock,
            on_ping=lambda kind: holder[0]._pinged(kind),
            on_answer=lambda status: holder[0]._answered(status),
        )
        http = HttpServer(
            app,
            max_connections=settings.max_connections,
            deadline=settings.read_timeout,
            **HEAD_LIMITS,
        )
        served = cls(http)
        holder.append(served)
        if metrics:
            # prometheus-client takes a while to import: only `--metrics` pays for it.
            from zombietop.serve.metrics import ServeMetrics

            served.metrics = ServeMetrics(lambda: http.open)
            served.metrics_keys = None if is_loopback(address.host) else keys
            app.router.add_get("/metrics", served._serve_metrics)
        if mount is not None:
            mount(app)
        await http.start(
            address, what="pings", hint="choose another port with --listen or [serve] listen"
        )
        return served

    @property
    def address(self) -> ListenAddress:
        assert self.server.address is not None
        return self.server.address

    async def close(self) -> None:
        await self.server.close()
