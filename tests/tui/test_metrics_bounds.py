"""``--metrics`` within bounds: real slow clients that send only the request line, more of them
than the server takes at once, while the watchdog goes on looking; one body per look, however
many scrape it."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

from tests.core.realprocs import wait_for
from tests.tui.test_metrics import fleet_db, serve
from zombietop.http_server import MAX_CONNECTIONS

SLOW = 3 * MAX_CONNECTIONS
__all__ = ["fleet_db"]  # the fixture, used by name


async def test_slow_clients_are_capped_and_cut_off_while_the_watchdog_looks(
    fleet_db: Path,
) -> None:
    async with serve(fleet_db) as served:
        server = served.endpoint.server
        address = served.endpoint.address
        clients = []
        for _ in range(SLOW):
            reader, writer = await asyncio.open_connection(address.host, address.port)
            writer.write(b"GET /metrics HTTP/1.1\r\n")  # and never the rest
            clients.append((reader, writer))
        await wait_for(lambda: server.open + server.evicted == SLOW, what="every slow client seen")
        # Never more than the bound: each newcomer took the place of the oldest slow one.
        assert server.open == MAX_CONNECTIONS
        assert server.evicted == SLOW - MAX_CONNECTIONS
        # The watchdog goes on looking, and an honest scraper is answered, while slow clients
        # hold every place.
        await served.tick()
        _, samples = await served.scrape()
        assert samples["zombietop_store_up"][0].value == 1
        assert server.evicted == SLOW - MAX_CONNECTIONS + 1  # it took a slow one's place
        assert server.cut == 0
        # The slow ones never finish their request: cut off at their deadline, unanswered.
        server.deadline = 0.5
        for _ in range(MAX_CONNECTIONS):
            reader, writer = await asyncio.open_connection(address.host, address.port)
            writer.write(b"GET /metrics HTTP/1.1\r\n")
            clients.append((reader, writer))
        answers = await asyncio.gather(
            *(reader.read() for reader, _ in clients), return_exceptions=True
        )
        assert all(answer == b"" or isinstance(answer, OSError) for answer in answers)
        await wait_for(lambda: server.open == 0, what="the slow connections to be cut")
        assert server.cut >= MAX_CONNECTIONS
        for _, writer in clients:
            writer.close()


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
