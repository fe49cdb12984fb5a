"""The ping server: the routes on one bounded ``HttpServer``, loopback unless a key is set."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable

from zombietop.config import ListenAddress, ServeSettings
from zombietop.errors import ZombietopError
from zombietop.http_server import HttpServer
from zombietop.serve.keys import ENV_KEY, PingKeys
from zombietop.serve.pings import PingBook
from zombietop.serve.routes import build_app

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


class PingServer:
    """Answer pings into ``book`` at ``address`` until ``close``."""

    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.pings = 0
        """Pings answered 200 since the start."""

    @classmethod
    async def start(
        cls,
        book: PingBook,
        keys: PingKeys,
        address: ListenAddress,
        settings: ServeSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> PingServer:
        check_listen(address, keys)
        holder: list[PingServer] = []

        def counted() -> None:
            holder[0].pings += 1

        app = build_app(book, keys, clock=clock, on_ping=counted)
        http = HttpServer(
            app,
            max_connections=settings.max_connections,
            deadline=settings.read_timeout,
            **HEAD_LIMITS,
        )
        served = cls(http)
        holder.append(served)
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
