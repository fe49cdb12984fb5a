"""``HttpServer.hold``: a websocket its handler took (the wall's viewers) outlives the deadline
and is never evicted, while every other connection keeps both bounds."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from tests.core.realprocs import wait_for
from zombietop.config import parse_listen
from zombietop.http_server import HttpServer, hold


async def echo(request: web.Request) -> web.StreamResponse:
    socket = web.WebSocketResponse()
    await socket.prepare(request)
    hold(request)
    async for message in socket:
        await socket.send_str(message.data)
    return socket


async def test_a_held_websocket_outlives_the_deadline_and_the_eviction() -> None:
    app = web.Application()
    app.router.add_get("/ws", echo)
    server = HttpServer(app, max_connections=2, deadline=0.5)
    await server.start(parse_listen("127.0.0.1:0"), what="test", hint="")
    assert server.address is not None
    host, port = server.address.host, server.address.port
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(f"http://{host}:{port}/ws") as socket,
        ):
            await wait_for(lambda: server.held == 1, what="the websocket held")
            slow = []
            for _ in range(4):  # twice max_connections, each sending half a request
                reader, writer = await asyncio.open_connection(host, port)
                writer.write(b"GET /ws HTTP/1.1\r\n")
                slow.append((reader, writer))
            await wait_for(lambda: server.evicted == 2, what="two slow clients evicted")
            await asyncio.sleep(1.0)  # twice the deadline
            for reader, writer in slow:
                assert await asyncio.wait_for(reader.read(), 5) == b""  # cut off or evicted
                writer.close()
            await socket.send_str("still here")
            assert (await socket.receive(timeout=5)).data == "still here"
            assert server.open == server.held == 1
        await wait_for(lambda: server.open == 0, what="the websocket gone")
    finally:
        await server.close()
