"""``zombietop serve --wall``: the read-only wall in a browser, at ``/wall`` beside the pings.

textual-serve does the work: its page and script (``textual.js``, xterm.js) draw a terminal in
the browser, and its ``AppService`` runs one ``zombietop --wall`` per viewer under Textual's
web driver, the screen's bytes one way and the browser's keys and size the other. Its
``Server`` is not used: that builds an application of its own with a download route, 60
frames a second and a shell command line. Here its handlers are mounted in the ping server's
bounded application, and:

- a token (``[serve] wall_token_file`` or ``$ZOMBIETOP_WALL_TOKEN``) guards every URL under
  ``/wall`` once one is set, and one must be set on any address but loopback. It comes as
  ``?token=`` (which sets a cookie, HttpOnly and SameSite=Strict, for the page's websocket and
  the next visits), that cookie, or ``Authorization: Bearer``; it is compared in constant time
  and never logged. A websocket from another site's page (its ``Origin``) is refused. Without
  a token (loopback only), a request must name a loopback host at the port listened on: a page
  of another site whose name was pointed at 127.0.0.1 (DNS rebinding) is refused;
- at most ``[serve] wall_viewers`` browsers watch at once, each a process of its own;
- the child is ``zombietop --wall``: the store opened read-only and a screen that binds no
  action, so no key a browser sends can change anything. Its store and config come through
  the environment (a PostgreSQL URL's password never shows in ``ps``). Its environment is an
  allow-list (``PASSED``): no credential of this process reaches it (the ping key, the wall
  token, a paging key), libpq's ``PG*`` only for a PostgreSQL store. It draws at most
  ``WALL_FPS`` frames a second;
- the size a browser asks for is bounded, and so is each message it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jinja2
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from zombietop.http_server import hold
from zombietop.serve.keys import ENV_KEY, ENV_WALL_TOKEN, PingKeys
from zombietop.serve.server import is_loopback

log = logging.getLogger("zombietop.serve.wall")

WALL_FPS = 10
"""Frames a second the wall draws at most (textual-serve asks 60): the wall changes once a poll,
and every frame is sent to every browser."""
COOKIE = "zombietop_wall"
PREFIX = "/wall"
MAX_MESSAGE = 64 * 1024
"""Bytes of one websocket message from a browser: a key press, a paste, a resize."""
MAX_COLUMNS, MAX_ROWS = 400, 150
"""The largest screen a browser may ask for: a 4K display at a small font."""
STOP_GRACE = 5.0
"""Seconds a wall process has to quit when its browser leaves, before it is killed."""
DRIVER = "textual.drivers.web_driver:WebDriver"
SERVED = ("TEXTUAL_COLOR_SYSTEM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLUMNS", "ROWS")
"""What textual-serve sets for its app besides the driver and the frame rate."""
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}
"""Sent with every answer under ``/wall``: nothing cached, no URL (with its token) handed on
as a referrer, never inside another site's frame."""


def bounded_size(width: Any, height: Any) -> tuple[int, int]:
    """The screen's columns and rows, each a whole number within bounds (80x24 for rubbish)."""

    def whole(value: Any, default: int, most: int) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError):
            return default
        return min(max(number, 1), most)

    return whole(width, 80, MAX_COLUMNS), whole(height, 24, MAX_ROWS)


def bounded_font(asked: str | None) -> int:
    """``?fontsize=``: the page's font size in pixels, 8 to 64 (16 unless asked): a wall read
    across a room wants big cells, and the wall's size follows the tab's."""
    try:
        return min(max(int(asked or 16), 8), 64)
    except ValueError:
        return 16


PASSED = frozenset(
    {
        *("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR"),
        *("TERM", "COLORTERM", "NO_COLOR", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"),
        *("ZOMBIETOP_HOST", "ZOMBIETOP_SOURCES", "ZOMBIETOP_TEXTUAL_SHIMS"),
    }
)
"""What a viewer's ``zombietop --wall`` gets of this process's environment, besides
``PASSED_PREFIXES``: what Python, the terminal and the wall need, never a credential."""
PASSED_PREFIXES = ("LC_", "XDG_", "TEXTUAL_")
POSTGRES_PREFIX = "PG"
"""libpq's variables (``PGPASSWORD``, ``PGSSLROOTCERT``): passed only when the store is a
PostgreSQL one, which may need them to connect."""


def wall_env(
    db: Path | str, config_path: Path | None, environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The environment of a viewer's ``zombietop --wall``: the allowed part of this one's, with
    the store and config named."""
    postgres = str(db).startswith(("postgres://", "postgresql://"))
    prefixes = (*PASSED_PREFIXES, POSTGRES_PREFIX) if postgres else PASSED_PREFIXES
    env = {
        key: value
        for key, value in environ.items()
        if (key in PASSED or key.startswith(prefixes)) and key not in (ENV_KEY, ENV_WALL_TOKEN)
    }
    env["ZOMBIETOP_DB"] = str(db)
    if config_path is not None:
        env["ZOMBIETOP_CONFIG"] = str(config_path)
    else:
        env.pop("ZOMBIETOP_CONFIG", None)
    return env


class WallProcess(AppService):
    """textual-serve's ``AppService`` running ``argv`` (no shell) in ``env``, at ``WALL_FPS``."""

    def __init__(self, argv: list[str], env: dict[str, str], **kwargs: Any) -> None:
        super().__init__(" ".join(argv), **kwargs)
        self.argv = argv
        self.env = env

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        # textual-serve's is this process's whole environment and its own: only its own is
        # taken, so nothing ``wall_env`` left out comes back.
        stock = super()._build_environment(width, height)
        environment = {**self.env, **{key: stock[key] for key in SERVED if key in stock}}
        environment["TEXTUAL_DRIVER"] = DRIVER
        environment["TEXTUAL_FPS"] = str(WALL_FPS)
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
        environment = self._build_environment(width=width, height=height)
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def run(self) -> None:
        """textual-serve's loop over the process's output; the browser is told when it ends,
        whatever way (a crash too), so its tab says so and its place is given back."""
        try:
            await super().run()
        finally:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self.remote_close()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    async def end(self) -> None:
        """Ask the wall process to quit; kill it if it has not within ``STOP_GRACE``."""
        try:
            await asyncio.wait_for(self.stop(), STOP_GRACE)
        except (TimeoutError, OSError, RuntimeError):
            pass
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), STOP_GRACE)


def _names_this_server(request: web.Request) -> bool:
    """True when the request's ``Host`` (and ``Origin``, if any) name a loopback address at
    the port the request came in on."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    port = int(sockname[1]) if sockname else None
    named = [request.host]
    origin = request.headers.get("Origin")
    if origin is not None:
        named.append(origin.split("://", 1)[-1].rstrip("/"))
    for host in named:
        try:
            parts = urlsplit(f"//{host}")
            asked = parts.port
        except ValueError:
            return False
        if not is_loopback(parts.hostname or "") or (asked is not None and asked != port):
            return False
    return True


class WallSite:
    """The wall's routes under ``/wall``; ``mount`` adds them to an application."""

    def __init__(
        self,
        *,
        db: Path | str,
        config_path: Path | None,
        tokens: PingKeys,
        viewers: int,
        title: str = "zombietop wall",
    ) -> None:
        self.tokens = tokens
        self.most_viewers = viewers
        self.argv = [sys.executable, "-m", "zombietop.tui", "--wall"]
        self.env = wall_env(db, config_path)
        self.title = title
        self.viewers: set[WallProcess] = set()
        self.downloads = DownloadManager()
        package = Path(str(resources.files("textual_serve")))
        self.statics = package / "static"
        self.pages = jinja2.Environment(
            loader=jinja2.FileSystemLoader(package / "templates"), autoescape=True
        )

    def mount(self, app: web.Application) -> None:
        app.router.add_get(PREFIX, self.page)
        app.router.add_get(f"{PREFIX}/", self.page)
        app.router.add_get(f"{PREFIX}/ws", self.websocket)
        app.router.add_static(f"{PREFIX}/static", self.statics, name="wall-static")
        app.middlewares.append(self._guard)
        app.on_shutdown.append(self._shutdown)

    # The token ------------------------------------------------------------------------------

    def _presented(self, request: web.Request) -> tuple[str | None, bool]:
        """The token a request carries, and whether it came in the query (to set the cookie)."""
        asked = request.query.get("token")
        if asked is not None:
            return asked, True
        bearer = request.headers.get("Authorization", "")
        if bearer.startswith("Bearer "):
            return bearer[len("Bearer ") :].strip(), False
        return request.cookies.get(COOKIE), False

    def allowed(self, request: web.Request) -> bool:
        if not self.tokens:
            # Loopback only (``check_wall`` refused any other address), but a browser on this
            # host also reaches 127.0.0.1 for a site whose name was pointed there.
            return _names_this_server(request)
        token, _ = self._presented(request)
        return token is not None and self.tokens.match(token)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        path = request.path
        if path != PREFIX and not path.startswith(f"{PREFIX}/"):
            response: web.StreamResponse = await handler(request)
            return response
        if not self.allowed(request):
            refused = web.Response(
                status=401,
                text="the wall needs its token: open /wall?token=TOKEN\n",
                headers={**HEADERS, "WWW-Authenticate": 'Bearer realm="zombietop wall"'},
            )
            refused.force_close()
            return refused
        response = await handler(request)
        if not response.prepared:
            response.headers.update(HEADERS)
        return response

    # The page and the websocket -------------------------------------------------------------

    async def page(self, request: web.Request) -> web.StreamResponse:
        secure = request.secure or request.headers.get("X-Forwarded-Proto") == "https"
        socket = f"{'wss' if secure else 'ws'}://{request.host}{PREFIX}/ws"
        html = self.pages.get_template("app_index.html").render(
            font_size=bounded_font(request.query.get("fontsize")),
            app_websocket_url=socket,
            config={"static": {"url": f"{PREFIX}/static/"}},
            application={"name": self.title},
            ping_url="",
        )
        response = web.Response(text=html, content_type="text/html")
        token, in_query = self._presented(request)
        if in_query and token is not None and self.tokens:
            response.set_cookie(
                COOKIE, token, path=PREFIX, httponly=True, samesite="Strict", secure=secure
            )
        response.force_close()
        return response

    def _same_origin(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser's page: it has the token, or this is loopback
        return origin.split("://", 1)[-1].rstrip("/") == request.host

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        if not self._same_origin(request):
            return web.Response(status=403, text="the wall's websocket is for its own page\n")
        if len(self.viewers) >= self.most_viewers:
            log.warning("wall: a browser refused, %d watch already", len(self.viewers))
            return web.Response(
                status=503, text=f"the wall has {self.most_viewers} viewers already\n"
            )
        socket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        width, height = bounded_size(request.query.get("width"), request.query.get("height"))
        viewer = WallProcess(
            self.argv,
            self.env,
            write_bytes=socket.send_bytes,
            write_str=socket.send_str,
            close=socket.close,
            download_manager=self.downloads,
        )
        self.viewers.add(viewer)  # counted at once: two browsers at the last place get one
        try:
            await socket.prepare(request)
            hold(request)
            await viewer.start(width, height)
            log.info("wall: a browser watches (pid %s, %dx%d)", viewer.pid, width, height)
            await self._relay(socket, viewer)
        except (ConnectionError, RuntimeError, OSError) as exc:
            log.warning("wall: a viewer ended: %s", type(exc).__name__)
        finally:
            self.viewers.discard(viewer)
            await viewer.end()
            log.info("wall: a browser left (pid %s)", viewer.pid)
            await socket.close()
        return socket

    async def _relay(self, socket: web.WebSocketResponse, viewer: WallProcess) -> None:
        """Hand the browser's keys and size to the wall process, as textual-serve does."""
        async for message in socket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await viewer.send_bytes(data.encode("utf-8", errors="replace"))
            elif kind == "resize" and isinstance(data, dict):
                width, height = bounded_size(data.get("width"), data.get("height"))
                await viewer.set_terminal_size(width, height)
            elif kind == "ping":
                await socket.send_json(["pong", data])
            elif kind == "blur":
                await viewer.blur()
            elif kind == "focus":
                await viewer.focus()

    async def _shutdown(self, app: web.Application) -> None:
        await asyncio.gather(*(viewer.end() for viewer in list(self.viewers)))
