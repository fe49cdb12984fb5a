"""``--metrics`` within bounds: real slow clients that send only the request line, more of them
than the server takes at once, while the watchdog goes on looking; one body per look, however
many scrape it."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

from tests.core.realprocs import wait_for
from tests.tui.test_metrics import fleet_db, serve
from zombietop.http_server import BUSY, MAX_CONNECTIONS

SLOW = 3 * MAX_CONNECTIONS
__all__ = ["fleet_db"]  # the fixture, used by name


async def test_slow_clients_are_capped_and_cut_off_while_the_watchdog_looks(
    fleet_db: Path,
) -> None:
    async with serve(fleet_db) as served:
        server = served.endpoint.server
        server.deadline = 1.0  # the connections that get in are cut off after this
        address = served.endpoint.address
        clients = []
        for _ in range(SLOW):
            reader, writer = await asyncio.open_connection(address.host, address.port)
            writer.write(b"GET /metrics HTTP/1.1\r\n")  # and never the rest
            clients.append((reader, writer))
        await wait_for(lambda: server.open + server.refused == SLOW, what="every client seen")
        assert server.open == MAX_CONNECTIONS
        assert server.refused == SLOW - MAX_CONNECTIONS
        # The watchdog goes on looking meanwhile.
        await served.tick()
        answers = await asyncio.gather(*(reader.read() for reader, _ in clients))
        assert sum(answer == BUSY for answer in answers) == SLOW - MAX_CONNECTIONS
        # The ones let in never finished their request: cut off, with no answer.
        assert sum(answer == b"" for answer in answers) == MAX_CONNECTIONS
        await wait_for(lambda: server.open == 0, what="the slow connections to be cut")
        assert server.cut == MAX_CONNECTIONS
        for _, writer in clients:
            writer.close()
        # And a scraper that asks properly is answered.
        _, samples = await served.scrape()
        assert samples["zombietop_store_up"][0].value == 1


async def test_one_body_per_look_whoever_scrapes(fleet_db: Path) -> None:
    async with serve(fleet_db) as served:
        await served.tick()
        renders = served.endpoint.renders
        bodies = await asyncio.gather(
            *(asyncio.to_thread(_get, served.endpoint.url) for _ in range(20))
        )
        assert len(set(bodies)) == 1 and served.endpoint.renders == renders
        await served.tick()
        assert served.endpoint.renders == renders + 1


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return bytes(response.read())
