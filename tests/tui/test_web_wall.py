"""``zombietop serve --wall``: the wall in a browser, a real server and its real wall processes.

Without the token every URL under /wall is 401; a browser's keys reach a ``zombietop --wall``
that writes nothing; headless Chromium draws the tiles (``ZOMBIETOP_WALL_SCREENSHOT=PATH``
keeps its screenshot, as screenshots/wall-browser.png was made).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import psutil
import pytest

from tests.chromium import browser, red_pixels
from zombietop.heartbeat_line import BeatLine
from zombietop.model import TaskState
from zombietop.store import open_store

pytestmark = pytest.mark.slow

TOKEN = "wall-token-0123456789abcdef"
SERVING = re.compile(r"serving the wall at http://([\d.]+:\d+)/wall")
ACTION_KEYS = [
    *("r", "y", "d", "y", "K", "y", "k", "y", "x", "y", "a", "\r", "s", "\r", "y"),
    *("\x10", "kill\r", "y", "\x1b", "w", "\r", "y", "e", "g", "/", "\x1b"),
]
"""Resume, discard, kill (each confirmed), ack, silence, Enter, ctrl+p and a command, the
wall's own key, the rest of the dashboard's keys, Escape."""
JOBS: list[tuple[str, float, float | str | None]] = [
    ("export-orders", 3600.0, 0.42),
    ("resize-images", 3600.0, 0.9),
    ("nightly-etl", 0.2, None),
    ("billing-sync", 3600.0, None),
    ("daily-report", 3600.0, "done"),
    ("send-invoices", 3600.0, "failed"),
]
"""Each task, its lease's time to live, and its progress or how it ended."""


async def fill(db: Path) -> None:
    """A few tasks: two beating, one whose worker vanished (its lease expired), one that
    never beat, one done and one failed."""
    async with await open_store(db, create=True) as store:
        for number, (name, ttl, how) in enumerate(JOBS):
            await store.create_task(
                task_id=name,
                run_id=f"run-{number}",
                step=name,
                step_type="default",
                actor="test",
                host="web-1",
            )
            owner = f"worker-{number}@web-1"
            lease = await store.acquire_lease(name, owner=owner, ttl=ttl)
            if isinstance(how, float):
                beat = BeatLine(stage="copy", progress=how)
                await store.record_heartbeat(name, beat, owner=owner, token=lease.token)
            elif how is not None:
                state = TaskState.SUCCEEDED if how == "done" else TaskState.FAILED
                await store.finish_task(
                    name, owner=owner, token=lease.token, state=state, exit_code=int(how != "done")
                )


async def written(db: Path) -> tuple[object, ...]:
    """Everything a wall could change: each task's state and token, and every event."""
    async with await open_store(db, read_only=True) as store:
        tasks = [await store.get_task(name) for name, _, _ in JOBS]
        leases = [await store.get_lease(name) for name, _, _ in JOBS]
        events = [(e.kind, e.task_id, e.message) for e in await store.events(limit=1000)]
    return (
        tuple((t.state, t.attempt, t.exit_code) for t in tasks),
        tuple((le.owner, le.token) if le else None for le in leases),
        tuple(events),
    )


@dataclass
class Served:
    process: subprocess.Popen[str]
    address: str
    db: Path
    output: list[str]
    walls: list[psutil.Process]
    """The wall processes seen (each viewer's ``zombietop --wall``)."""

    def url(self, path: str) -> str:
        return f"http://{self.address}{path}"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serving(tmp_path, ZOMBIETOP_WALL_TOKEN=TOKEN) as running:
        yield running


@contextmanager
def serving(tmp_path: Path, **more_env: str) -> Iterator[Served]:
    """A real ``zombietop serve --wall`` on loopback, with ``more_env`` in its environment."""
    db = tmp_path / "wall.db"
    asyncio.run(fill(db))
    config = tmp_path / "config.toml"
    config.write_text('[monitor]\nrefresh = "1s"\n')
    env = {
        **os.environ,
        "ZOMBIETOP_CONFIG": str(config),
        "PYTHONUNBUFFERED": "1",
        **more_env,
    }
    argv = ["serve", "--wall", "--listen", "127.0.0.1:0", "--db", str(db)]
    process = subprocess.Popen(
        [sys.executable, "-m", "zombietop.tui", *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    output: list[str] = []
    walls: list[psutil.Process] = []
    try:
        address = None
        deadline = time.monotonic() + 30
        while address is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            output.append(line)
            found = SERVING.search(line)
            address = found[1] if found else None
        assert address is not None, "".join(output)
        yield Served(process, address, db, output, walls)
    finally:
        process.terminate()
        rest, _ = process.communicate(timeout=30)
        output.append(rest)
    assert process.returncode == 0, "".join(output)
    # The token is never logged, whatever was asked.
    assert TOKEN not in "".join(output)
    _, alive = psutil.wait_procs(walls, timeout=5)
    assert not alive, "a wall process outlived serve"


def status_of(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


def test_without_the_token_the_wall_is_401(served: Served) -> None:
    for path in ("/wall", "/wall/", "/wall/ws", "/wall/static/js/textual.js"):
        assert status_of(served.url(path))[0] == 401, path
    assert status_of(served.url("/wall?token=not-the-token-at-all"))[0] == 401
    assert status_of(served.url("/wall"), {"Cookie": "zombietop_wall=wrong"})[0] == 401
    status, headers = status_of(served.url(f"/wall?token={TOKEN}"))
    assert status == 200
    cookie = headers["Set-Cookie"]
    assert f"zombietop_wall={TOKEN}" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/wall" in cookie
    assert headers["Referrer-Policy"] == "no-referrer"
    assert status_of(served.url("/wall"), {"Cookie": f"zombietop_wall={TOKEN}"})[0] == 200
    assert (
        status_of(served.url("/wall/static/js/textual.js"), {"Authorization": f"Bearer {TOKEN}"})[0]
        == 200
    )
    # The pings are served beside it as before.
    assert status_of(served.url("/ping/some-key-0123456789/job"))[0] == 404


async def _screen_bytes(
    socket: aiohttp.ClientWebSocketResponse, seconds: float, until: bytes | None = None
) -> bytes:
    """What the wall process draws in ``seconds`` (or until it has drawn ``until``)."""
    drawn = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (until is None or until not in drawn):
        try:
            message = await socket.receive(timeout=max(0.05, deadline - time.monotonic()))
        except TimeoutError:
            break
        if message.type == aiohttp.WSMsgType.BINARY:
            drawn += message.data
        elif message.type != aiohttp.WSMsgType.TEXT:
            break
    return drawn


async def test_keys_from_the_websocket_change_nothing(served: Served) -> None:
    before = await written(served.db)
    cookie = {"Cookie": f"zombietop_wall={TOKEN}"}
    async with aiohttp.ClientSession() as session:
        foreign = {**cookie, "Origin": "http://evil.example"}
        async with session.get(served.url("/wall/ws"), headers=foreign) as refused:
            assert refused.status == 403
        url = served.url("/wall/ws?width=120&height=40").replace("http:", "ws:")
        async with session.ws_connect(url, headers=cookie) as socket:
            drawn = await _screen_bytes(socket, 30, until=b"worst offenders")
            assert b"worst offenders" in drawn
            after_keys = b""
            for key in ACTION_KEYS:
                await socket.send_str(json.dumps(["stdin", key]))
                # Time for a confirmation to open, as a person would take.
                after_keys += await _screen_bytes(socket, 0.4)
            await socket.send_str(json.dumps(["resize", {"width": 10**9, "height": -5}]))
            after_keys += await _screen_bytes(socket, 2)
            assert after_keys, "the wall stopped drawing"
            assert b"confirm" not in after_keys.lower()
            assert await written(served.db) == before
            # One wall process per viewer, which ends with serve, a viewer still watching.
            served.walls += psutil.Process(served.process.pid).children()
            assert len(served.walls) == 1
            served.process.terminate()
            assert not await _screen_bytes(socket, 15)
            assert socket.closed


async def test_chromium_draws_the_wall(served: Served, tmp_path: Path) -> None:
    shot = tmp_path / "wall-browser.png"
    async with browser(served.url(f"/wall?token={TOKEN}")) as (page, _):
        started = await page.wait_for("document.body.classList.contains('-first-byte')", 30)
        assert started, "the page never heard from the wall process"
        deadline = time.monotonic() + 30
        while True:
            await page.screenshot(shot)
            # The stalled and reclaimable tiles are red; the blank page and the intro are not.
            if red_pixels(shot.read_bytes()) > 2000 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        assert red_pixels(shot.read_bytes()) > 2000, "no tile was drawn"
        assert await page.evaluate("document.cookie") == "", "the cookie must be HttpOnly"
    keep = os.environ.get("ZOMBIETOP_WALL_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)


def test_the_driver_shims_step_aside_for_the_web_driver() -> None:
    from textual.drivers.web_driver import WebDriver

    from zombietop.tui.launch import web_driven
    from zombietop.tui.textual_compat import quiet_driver

    assert quiet_driver(WebDriver) is WebDriver
    assert web_driven({"TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"})
    assert not web_driven({})


def test_a_viewers_process_gets_no_credential_and_draws_ten_frames_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from zombietop.tui.web_wall import WALL_FPS, WallProcess, wall_env

    monkeypatch.setenv("ZOMBIETOP_PING_KEY", "ping-key-0123456789")
    monkeypatch.setenv("ZOMBIETOP_WALL_TOKEN", TOKEN)
    env = wall_env("postgresql://zt:secret@db/zt", None)
    viewer = WallProcess(
        ["zombietop", "--wall"],
        env,
        write_bytes=None,  # type: ignore[arg-type]
        write_str=None,  # type: ignore[arg-type]
        close=None,  # type: ignore[arg-type]
        download_manager=None,  # type: ignore[arg-type]
    )
    built = viewer._build_environment(120, 40)
    assert "ZOMBIETOP_PING_KEY" not in built and "ZOMBIETOP_WALL_TOKEN" not in built
    assert built["ZOMBIETOP_DB"] == "postgresql://zt:secret@db/zt"  # not on the command line
    assert built["TEXTUAL_FPS"] == str(WALL_FPS) == "10"
    assert built["TEXTUAL_DRIVER"] == "textual.drivers.web_driver:WebDriver"


def test_a_tokenless_wall_refuses_another_sites_name_and_passes_no_secret(
    tmp_path: Path,
) -> None:
    secrets = {
        "ZOMBIETOP_PAGERDUTY_KEY": "R0ut1ngKey0f32LettersAndDigits00",
        "PGPASSWORD": "pg-secret-0123456789",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789",
        "ZOMBIETOP_PING_KEY": "ping-key-0123456789abc",
    }
    with serving(tmp_path, **secrets) as served:
        port = served.address.rsplit(":", 1)[1]
        rebound = {"Host": f"evil.example:{port}"}  # another site's name, pointed at 127.0.0.1
        assert status_of(served.url("/wall"), rebound)[0] == 401
        assert status_of(served.url("/wall"), {"Host": f"127.0.0.1:{int(port) + 1}"})[0] == 401
        assert status_of(served.url("/wall"), {"Host": f"localhost:{port}"})[0] == 200
        environ = asyncio.run(_a_viewers_environment(served, rebound, port))
    assert environ["ZOMBIETOP_DB"] == str(served.db)
    assert not set(secrets) & set(environ), "a credential reached a viewer"
    assert not any(value in environ.values() for value in secrets.values())


async def _a_viewers_environment(
    served: Served, rebound: dict[str, str], port: str
) -> dict[str, str]:
    async with aiohttp.ClientSession() as session:
        foreign = {**rebound, "Origin": f"http://evil.example:{port}"}
        async with session.get(served.url("/wall/ws"), headers=foreign) as refused:
            assert refused.status == 401
        url = served.url("/wall/ws?width=80&height=24").replace("http:", "ws:")
        async with session.ws_connect(url) as socket:
            assert await _screen_bytes(socket, 30, until=b"\x1b"), "the wall never drew"
            served.walls += psutil.Process(served.process.pid).children()
            [wall] = served.walls
            environ: dict[str, str] = wall.environ()
            return environ
