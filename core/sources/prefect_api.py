"""How Prefect 3's server is read over its REST API, without writing.

Prefect's API asks for reads with POST when they carry a filter (``/flow_runs/filter``,
``/events/filter``); every other read is a GET. ``READS`` lists the requests this module sends,
and ``PrefectApi`` refuses any other before it leaves the process: a source never writes.

- Flow runs come from ``POST /flow_runs/filter``, a page of at most ``PAGE`` runs at a time
  (Prefect's default ``PREFECT_SERVER_API_DEFAULT_LIMIT``), sorted by id so pages do not shift.
- The latest heartbeat of each running flow run comes from ``POST /events/filter`` with the
  event name ``prefect.flow-run.heartbeat``, the runs' resource ids and ``distinct``: one event
  per run, the newest, 50 a page (Prefect's ``INTERACTIVE_PAGE_SIZE``), the next pages with
  ``GET /events/filter/next``.
- Flow and deployment names: ``GET /flows/ID`` and ``GET /deployments/ID``, once per id.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from zombietop.errors import MissingExtra, SourceError
from zombietop.extras import require

PAGE = 200
"""Flow runs asked for per request: Prefect's default API limit."""
RUNS_SHOWN = 5000
"""The most flow runs one poll reads of each kind (unfinished, finished)."""
EVENTS_PAGE = 50
"""Events asked for per request: the most Prefect's ``/events/filter`` returns."""
HEARTBEAT = "prefect.flow-run.heartbeat"
"""The event a flow run's engine sends every ``flows.heartbeat_frequency`` seconds."""
TIMEOUT = 10.0
"""Seconds one request may take before the poll says the server does not answer."""

READS: tuple[tuple[str, str], ...] = (
    ("POST", "/flow_runs/filter"),
    ("POST", "/events/filter"),
    ("GET", "/events/filter/next"),
    ("GET", "/flows/"),
    ("GET", "/deployments/"),
    ("GET", "/health"),
)
"""Every request a Prefect source sends: method and path under the API's root (a path that
ends with ``/`` stands for the ids under it). All of them read."""

UNFINISHED = ("SCHEDULED", "PENDING", "RUNNING", "PAUSED", "CANCELLING")
"""Prefect's state types of a flow run that has not ended."""
FINISHED = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")
"""Prefect's state types of a flow run that has ended."""


def is_read(method: str, path: str) -> bool:
    """True when ``method`` and ``path`` (under the API's root) are in ``READS``."""
    for allowed, where in READS:
        if method != allowed:
            continue
        if path == where or (
            where.endswith("/") and path.startswith(where) and "/" not in path[len(where) :]
        ):
            return True
    return False


def iso(when: float) -> str:
    """Epoch seconds as the ISO 8601 text Prefect's filters take."""
    return datetime.fromtimestamp(when, tz=UTC).isoformat()


def epoch(value: Any) -> float | None:
    """Prefect's ISO 8601 time as epoch seconds; None for none or text that does not read."""
    if not isinstance(value, str) or not value:
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if found.tzinfo is None:
        found = found.replace(tzinfo=UTC)
    return found.timestamp()


class PrefectApi:
    """A read-only client of one Prefect server's API (``base``: its root, ``.../api``)."""

    def __init__(self, base: str, name: str) -> None:
        parts = urlsplit(base)
        self.base = base.rstrip("/")
        self.name = name
        self._auth: str | None = None
        if parts.username is not None:
            # Prefect's own PREFECT_API_AUTH_STRING is basic auth: ``user:password``.
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self._auth = "Basic " + base64.b64encode(pair.encode()).decode()
            host = parts.hostname or ""
            netloc = f"[{host}]" if ":" in host else host
            netloc += f":{parts.port}" if parts.port else ""
            self.base = parts._replace(netloc=netloc).geturl().rstrip("/")
        self._session: Any = None
        self._errors: tuple[type[BaseException], ...] = (OSError,)
        self.sent = 0
        """Requests sent so far (the benchmark counts them)."""

    async def open(self) -> None:
        """Make the HTTP session and check that the server answers."""
        try:
            require("a Prefect source", "aiohttp", extra="all")
        except MissingExtra as exc:
            raise SourceError(f"source {self.name}: {exc}") from None
        import aiohttp

        self._errors = (OSError, aiohttp.ClientError, TimeoutError)
        if self._session is None:
            headers = {"Accept": "application/json", "User-Agent": "zombietop (read-only)"}
            if self._auth is not None:
                headers["Authorization"] = self._auth
            self._session = aiohttp.ClientSession(
                headers=headers, timeout=aiohttp.ClientTimeout(total=TIMEOUT)
            )
        try:
            await self.request("GET", "/health")
        except SourceError:
            await self.close()  # the next open makes a new session, none is left unclosed
            raise

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """The JSON answer to one read; any request not in ``READS`` is refused here."""
        if not is_read(method, path):
            # A mistake in this module, never in what a user wrote.
            raise RuntimeError(f"{method} {path} is not one of the Prefect source's reads")
        return await self._send(method, self.base + path, body)

    async def _send(self, method: str, url: str, body: Mapping[str, Any] | None) -> Any:
        if self._session is None:
            await self.open()
        self.sent += 1
        try:
            async with self._session.request(method, url, json=body) as answer:
                text = await answer.text()
                status = answer.status
        except self._errors as exc:
            said = str(exc) or type(exc).__name__
            raise SourceError(
                f"source {self.name}: cannot reach Prefect's API ({said}); is the server up, "
                "and is the URL its PREFECT_API_URL?"
            ) from None
        if status in (401, 403):
            raise SourceError(
                f"source {self.name}: Prefect's API refused zombietop ({status}); put the "
                "server's PREFECT_API_AUTH_STRING in the URL: prefect+http://USER:PASSWORD@HOST:PORT/api"
            )
        if status == 404 and url.endswith("/health"):
            raise SourceError(
                f"source {self.name}: no Prefect API at this URL (404); write the server's "
                "PREFECT_API_URL, which ends with /api"
            )
        if status >= 400:
            raise SourceError(f"source {self.name}: Prefect's API answered {status} to {method}")
        try:
            return json.loads(text) if text else None
        except ValueError:
            raise SourceError(
                f"source {self.name}: Prefect's API answered with something that is not JSON; "
                "is this the server's PREFECT_API_URL?"
            ) from None

    async def flow_runs(self, flow_runs: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every flow run that ``flow_runs`` (Prefect's ``FlowRunFilter``) selects, at most
        ``RUNS_SHOWN``, page by page."""
        found: list[dict[str, Any]] = []
        while len(found) < RUNS_SHOWN:
            body = {"flow_runs": flow_runs, "sort": "ID_DESC", "limit": PAGE, "offset": len(found)}
            page = await self.request("POST", "/flow_runs/filter", body)
            if not isinstance(page, list):
                raise SourceError(f"source {self.name}: Prefect's flow runs did not read as a list")
            found.extend(run for run in page if isinstance(run, dict))
            if len(page) < PAGE:
                break
        return found

    async def latest_beats(
        self, run_ids: Sequence[str], since: float, until: float
    ) -> dict[str, float]:
        """By flow run id, the time of its newest heartbeat between ``since`` and ``until``."""
        beats: dict[str, float] = {}
        for start in range(0, len(run_ids), PAGE):
            ids = [f"prefect.flow-run.{run_id}" for run_id in run_ids[start : start + PAGE]]
            body = {
                "filter": {
                    "occurred": {"since": iso(since), "until": iso(until)},
                    "event": {"name": [HEARTBEAT]},
                    "resource": {"id": ids, "distinct": True},
                    "order": "DESC",
                },
                "limit": EVENTS_PAGE,
            }
            page = await self.request("POST", "/events/filter", body)
            while isinstance(page, dict):
                for event in page.get("events") or ():
                    _take_beat(event, beats)
                following = page.get("next_page")
                if not isinstance(following, str) or "?" not in following:
                    break
                query = following.partition("?")[2]
                page = await self.request_next(query)
        return beats

    async def request_next(self, query: str) -> Any:
        """The next page of events, by the token Prefect's last page gave."""
        return await self._send("GET", f"{self.base}/events/filter/next?{query}", None)

    async def name_of(self, kind: str, object_id: str) -> str | None:
        """The name of a flow (``kind`` ``flows``) or a deployment (``deployments``)."""
        found = await self.request("GET", f"/{kind}/{object_id}")
        name = found.get("name") if isinstance(found, dict) else None
        return name if isinstance(name, str) else None


def _take_beat(event: Any, beats: dict[str, float]) -> None:
    if not isinstance(event, dict):
        return
    resource = event.get("resource")
    where = resource.get("prefect.resource.id") if isinstance(resource, dict) else None
    when = epoch(event.get("occurred"))
    if not isinstance(where, str) or when is None:
        return
    run_id = where.removeprefix("prefect.flow-run.")
    beats[run_id] = max(when, beats.get(run_id, when))
