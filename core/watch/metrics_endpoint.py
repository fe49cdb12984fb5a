"""``/metrics`` over HTTP: one body rendered per look, on a thread, served as is to everyone.

For the word look, see docs/glossary.md (``zombietop.watch.watchdog`` makes the looks). A scrape
never renders (4 MB at 10,000 tasks) and never waits on the watchdog's loop for long: it is
handed the body of the last look, whoever asks and however many ask. The server is
``zombietop.http_server``'s, with its bounds. ``MetricsUpdate`` hands each look's outcome to
the metrics and the endpoint.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from zombietop.config import ListenAddress
from zombietop.http_server import HttpServer, send_bytes
from zombietop.watch.metrics import Metrics

if TYPE_CHECKING:
    from zombietop.watch.watchdog import LookReport, Watchdog


class MetricsEndpoint:
    """Serve ``Metrics`` at ``/metrics``; ``publish`` after each look renders the next body."""

    def __init__(self, metrics: Metrics, server: HttpServer) -> None:
        self.metrics = metrics
        self.server = server
        self.body = b""
        self.renders = 0
        """Bodies rendered since the start."""
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="metrics")
        self._rendering: asyncio.Task[None] | None = None
        self._again = False

    @classmethod
    async def start(cls, metrics: Metrics, address: ListenAddress) -> MetricsEndpoint:
        app = web.Application()
        server = HttpServer(app)
        endpoint = cls(metrics, server)
        app.router.add_get("/metrics", endpoint._serve)
        await endpoint._render()  # the first scrape has a body: the store not read yet
        await server.start(
            address, what="metrics", hint="pick another with --metrics HOST:PORT or [watch] metrics"
        )
        return endpoint

    @property
    def address(self) -> ListenAddress:
        assert self.server.address is not None
        return self.server.address

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    @property
    def reach(self) -> str:
        """Say so when more than this host can scrape it."""
        try:
            loopback = ipaddress.ip_address(self.address.host).is_loopback
        except ValueError:
            loopback = False
        return "" if loopback else " (reachable from other hosts)"

    def publish(self) -> None:
        """Render the metrics as of now, in the background: one render at a time, and one
        more after it when a look ended meanwhile."""
        if self._rendering is not None and not self._rendering.done():
            self._again = True
            return
        self._rendering = asyncio.create_task(self._renders())

    async def published(self) -> None:
        """Wait for the renders asked for so far."""
        while self._rendering is not None and not self._rendering.done():
            await asyncio.shield(self._rendering)

    async def _renders(self) -> None:
        while True:
            self._again = False
            await self._render()
            if not self._again:
                return

    async def _render(self) -> None:
        loop = asyncio.get_running_loop()
        self.body = await loop.run_in_executor(self._thread, self.metrics.render)
        self.renders += 1

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        return await send_bytes(request, self.body, content_type=CONTENT_TYPE_LATEST)

    async def close(self) -> None:
        await self.server.close()
        if self._rendering is not None:
            await asyncio.wait([self._rendering])
        self._thread.shutdown(wait=False)


class MetricsUpdate:
    """After each look: hand the metrics its snapshot, open incidents and deliveries, and have
    the endpoint render the body every scrape gets until the next look."""

    def __init__(
        self, dog: Watchdog, endpoint: MetricsEndpoint, *, then: Callable[[LookReport], None]
    ) -> None:
        self.dog = dog
        self.endpoint = endpoint
        self.metrics: Metrics = endpoint.metrics
        self.then = then

    def __call__(self, report: LookReport) -> None:
        self.metrics.update(
            self.dog.monitor.last,
            incidents_open=len(self.dog.incidents),
            deliveries=report.deliveries,
        )
        self.endpoint.publish()
        self.then(report)
