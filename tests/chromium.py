"""Headless Chromium driven over the DevTools protocol: open a page, wait for something on it,
take a screenshot (tests/tui/test_web_wall.py, bench/web_wall.py).

Debian's ``chromium`` package; ``$ZOMBIETOP_REQUIRE_CHROMIUM`` (set by .ci/run) turns its
absence from a skip into a failure.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


def chromium_path() -> str:
    """Chromium's path; skip without it (fail where ``ZOMBIETOP_REQUIRE_CHROMIUM`` is set)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        missing = "chromium not installed (apt-get install chromium)"
        if os.environ.get("ZOMBIETOP_REQUIRE_CHROMIUM"):
            pytest.fail(f"{missing}, and ZOMBIETOP_REQUIRE_CHROMIUM asks for it")
        pytest.skip(missing)
    return path


class Page:
    """One tab, spoken to over its DevTools websocket."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        await self.socket.send_json({"id": number, "method": method, "params": params})
        async for message in self.socket:
            answer = json.loads(message.data)
            if answer.get("id") == number:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
        raise RuntimeError(f"{method}: the browser closed its socket")

    async def evaluate(self, expression: str) -> Any:
        found = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return found.get("result", {}).get("value")

    async def wait_for(self, expression: str, timeout: float) -> Any:
        """Poll ``expression`` until it is truthy; its last value (falsy: timed out)."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.25)
        return value

    async def screenshot(self, path: Path) -> None:
        shot = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


@contextlib.asynccontextmanager
async def browser(
    url: str, *, width: int = 1280, height: int = 720
) -> AsyncIterator[tuple[Page, subprocess.Popen[bytes]]]:
    """Headless Chromium showing ``url``; the page and the browser's process."""
    binary = chromium_path()
    with (
        # Chromium's helpers may still write into the profile as it is removed.
        tempfile.TemporaryDirectory(
            prefix="zombietop-chromium-", ignore_cleanup_errors=True
        ) as profile,
        open(Path(profile) / "stderr", "wb") as stderr,
    ):
        process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",  # CI runs as root
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}/data",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,  # its helpers with it, to end them all at once
        )
        try:
            debugger = await _listening(process, Path(profile) / "stderr")
            port = debugger.split(":")[2].split("/")[0]
            async with aiohttp.ClientSession() as session:
                target = await _page_target(session, f"http://127.0.0.1:{port}/json/list")
                async with session.ws_connect(
                    target["webSocketDebuggerUrl"], max_msg_size=64 * 1024 * 1024
                ) as socket:
                    page = Page(socket)
                    await page.call("Page.enable")
                    await page.call("Page.navigate", url=url)
                    yield page, process
        finally:
            _end_group(process)


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """End Chromium and every helper it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # a helper left behind


async def _page_target(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    """The browser's tab, from its list of targets (asked again while it is starting)."""
    for _ in range(50):
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(url) as answer:
                pages = [t for t in await answer.json() if t.get("type") == "page"]
            if pages:
                return pages[0]
        await asyncio.sleep(0.2)
    raise RuntimeError("chromium lists no page")


async def _listening(process: subprocess.Popen[bytes], stderr: Path, timeout: float = 30) -> str:
    """The browser's DevTools address, from what it wrote to ``stderr``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = LISTENING.search(stderr.read_text(errors="replace"))
        if found:
            return found[1]
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited ({process.returncode}) before it listened")
        await asyncio.sleep(0.1)
    raise RuntimeError(f"chromium did not listen within {timeout:g}s")


def pixels(png: bytes) -> tuple[int, int, int, bytes]:
    """A PNG's width, height, bytes per pixel and its rows of pixels, unfiltered (8-bit RGB or
    RGBA, not interlaced: what Chromium writes)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, data, width, height, per = 8, b"", 0, 0, 0
    while at < len(png):
        size = int.from_bytes(png[at : at + 4], "big")
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + size]
        at += 12 + size
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            depth, colour, interlace = body[8], body[9], body[12]
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"an 8-bit RGB(A) PNG only, not depth {depth} type {colour}")
            per = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            data += body
    raw = zlib.decompress(data)
    stride = width * per
    out = bytearray(height * stride)
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(per, stride):
                line[i] = (line[i] + line[i - per]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - per] if i >= per else 0
                line[i] = (line[i] + (left + previous[i]) // 2) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - per] if i >= per else 0
                b, c = previous[i], previous[i - per] if i >= per else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                near = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + near) & 0xFF
        out[y * stride : (y + 1) * stride] = line
        previous = line
    return width, height, per, bytes(out)


def red_pixels(png: bytes) -> int:
    """How many pixels of ``png`` are the red of a stalled or reclaimable tile."""
    _, _, per, data = pixels(png)
    count = 0
    for at in range(0, len(data), per):
        red, green, blue = data[at], data[at + 1], data[at + 2]
        if red > 150 and green < 110 and blue < 140 and red - green > 80:
            count += 1
    return count
