"""Where pages go: a command, a webhook, any service apprise speaks, or PagerDuty
(``zombietop.paging.pagerduty``); retried, never blocking. ``zombietop.paging.channels`` builds the
ones ``[notify]`` configures.

Deliveries run in the background, each channel in a lane of its own (at most
``DELIVERY_CONCURRENCY`` of its deliveries at once), and the channels that block (a webhook,
apprise, PagerDuty) on threads of their own: a paging endpoint that hangs never holds up the
watchdog's next look (its next poll of the store), nor the threads the store and the process
probe use, nor the pages of any other channel. A delivery that fails is retried
with doubling backoff up to ``max_attempts``; detection goes on meanwhile. Every attempt's
outcome is handed back so the watchdog can record it as an event. Past ``[notify]
digest_after`` task pages at one look, they go as digests (``zombietop.paging.digest``), except to a
channel that keeps incidents of its own (PagerDuty), which gets each page as it is, the acks
too, and each incident's pages in the order they were queued.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import http.client
import json
import os
import signal
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from zombietop.clock import Clock
from zombietop.config import NotifySettings
from zombietop.errors import ZombietopError
from zombietop.extras import require
from zombietop.page import Page as Page  # where every caller has found it
from zombietop.page import PageKind, page_health
from zombietop.paging.digest import compose
from zombietop.printable import ERROR_LIMIT, ID_LIMIT, bounded
from zombietop.redact import redact_url, scrub
from zombietop.store import Store

DELIVERY_CONCURRENCY = 8
"""Deliveries in flight at once in each channel's lane: a mass incident never starts thousands
of page commands at once, and a channel that hangs fills only its own lane."""
CHANNEL_THREADS = 4
"""Threads of each channel that blocks (a webhook, apprise); its own, never the loop's default
executor, which the store and the process probe need."""

_T = TypeVar("_T")


class DeliveryError(ZombietopError):
    """A notifier could not deliver a page; the message says which and why.

    ``retry=False`` when trying again cannot help (the channel refused the page itself, an
    HTTP 400): the delivery ends now, not after ``max_attempts``.
    """

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


class Notifier(Protocol):
    name: str
    kind: str
    """The channel's kind (``command``, ``webhook``, ``apprise``): safe to export anywhere, as it
    never holds a URL, a key or an argument."""
    keeps_incidents: bool
    """True for a pager that holds incidents of its own (PagerDuty): it gets every page as it
    is, acks included, never a digest, and each incident's pages in order. The others get
    digests past ``digest_after`` and never an ack."""

    async def send(self, page: Page) -> None:
        """Deliver the page or raise ``DeliveryError``."""
        ...


class CommandNotifier:
    """Run an argument list (never a shell) with the line on stdin and in ``$ZOMBIETOP_PAGE``."""

    kind = "command"
    keeps_incidents = False

    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        self.argv = tuple(argv)
        self.timeout = timeout
        self.name = f"command {self.argv[0]}"

    async def send(self, page: Page) -> None:
        env = {
            **os.environ,
            "ZOMBIETOP_PAGE": page.shown,
            "ZOMBIETOP_PAGE_KIND": page.kind,
            "ZOMBIETOP_TASK": bounded(page.task_id or "", limit=ID_LIMIT, word=ID_LIMIT),
            "ZOMBIETOP_HEALTH": str(page.health or ""),
        }
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise DeliveryError(f"{self.name}: cannot start ({exc.strerror})") from None
        try:
            _, stderr = await asyncio.wait_for(
                process.communicate((page.shown + "\n").encode()), self.timeout
            )
        except TimeoutError:
            # The command may have exited already and left a child holding its stderr: that
            # page was delivered. Either way, end what is left of its session.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if await process.wait() == 0:
                return
            raise DeliveryError(
                f"{self.name}: no exit after {self.timeout:g}s; killed it"
            ) from None
        if process.returncode != 0:
            tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise DeliveryError(f"{self.name}: exit {process.returncode} {tail[0]}".rstrip())


class WebhookNotifier:
    """POST a Slack-compatible JSON body (``{"text": line, ...}``) to a URL.

    Userinfo in the URL (``https://user:pass@host/...``) is sent as HTTP basic auth; the name
    this channel goes by in logs and events is only ``scheme://host:port``.
    """

    kind = "webhook"
    keeps_incidents = False

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self.name = f"webhook {redact_url(url)}"
        self._threads = ChannelThreads("zombietop-webhook")
        parts = urlsplit(url)
        self._headers = {"Content-Type": "application/json"}
        if parts.username is not None or parts.password is not None:
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
            host = parts.hostname or ""
            netloc = f"[{host}]" if ":" in host else host
            if parts.port is not None:
                netloc += f":{parts.port}"
            self._target = urlunsplit(parts._replace(netloc=netloc))
        else:
            self._target = url

    async def send(self, page: Page) -> None:
        body = json.dumps(
            {
                "text": page.shown,
                "kind": page.kind,
                "task_id": bounded(page.task_id or "", limit=ID_LIMIT, word=ID_LIMIT) or None,
                "health": page.health,
            }
        ).encode()
        await self._threads.run(self._post, body)

    def _post(self, body: bytes) -> None:
        request = urllib.request.Request(
            self._target, data=body, method="POST", headers=self._headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                if not 200 <= response.status < 300:
                    raise DeliveryError(f"{self.name}: HTTP {response.status}")
        except urllib.error.HTTPError as exc:
            raise DeliveryError(f"{self.name}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DeliveryError(f"{self.name}: {scrub(str(reason), self.url)}") from None
        except (ValueError, http.client.HTTPException) as exc:
            raise DeliveryError(f"{self.name}: {scrub(str(exc), self.url)}") from None


class AppriseNotifier:
    """PagerDuty, Opsgenie, email, chat and the rest, through the apprise library."""

    kind = "apprise"
    keeps_incidents = False

    def __init__(self, urls: Sequence[str]) -> None:
        require("[notify] apprise", "apprise")
        import apprise

        self._apprise = apprise.Apprise()
        for url in urls:
            if not self._apprise.add(url):
                raise ZombietopError(
                    f"[notify] apprise: {url.split('://')[0]}:// is not a URL apprise knows"
                )
        self.name = "apprise " + ", ".join(redact_url(url) for url in urls)
        self._threads = ChannelThreads("zombietop-apprise")

    async def send(self, page: Page) -> None:
        title = f"zombietop: {page.task_id or 'watchdog'} {page.health or page.kind}"
        ok = await self._threads.run(
            lambda: self._apprise.notify(body=page.shown, title=bounded(title))
        )
        if not ok:
            raise DeliveryError(f"{self.name}: apprise reported a failed delivery")


class ChannelThreads:
    """A channel's own few threads for the calls that block (HTTP, apprise)."""

    def __init__(self, name: str, threads: int = CHANNEL_THREADS) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix=name)

    async def run(self, call: Callable[..., _T], *args: object) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, call, *args)


class LogNotifier:
    """Write each page to a log instead of sending it.

    The watchdog uses one when no ``[notify]`` channel is configured (the page goes to the
    watch's log, as the log's first line says), and ``dry_run()`` for ``--dry-run`` (the page
    is shown, not sent).
    """

    keeps_incidents = False

    def __init__(
        self, log: Callable[[str], None], *, name: str = "watch log", kind: str = "log"
    ) -> None:
        self.name = name
        self.kind = kind
        self._log = log

    @classmethod
    def dry_run(cls, log: Callable[[str], None]) -> LogNotifier:
        """The ``--dry-run`` channel: show the page instead of sending it."""
        return cls(log, name="dry-run", kind="dry-run")

    async def send(self, page: Page) -> None:
        self._log(f"PAGE ({page.kind}) {page.shown}")


@dataclass(slots=True, kw_only=True)
class _Delivery:
    page: Page
    notifier: Notifier
    attempts: int = 0
    next_at: float = 0.0
    errors: list[str] = field(default_factory=list)
    page_id: int | None = None
    """Its row in the keeper, once written there."""
    flying: bool = False
    """An attempt is under way in the background."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryResult:
    page: Page
    notifier: str
    channel: str
    """The notifier's ``kind``: what metrics count deliveries by."""
    ok: bool
    attempts: int
    error: str | None = None
    final: bool = True
    """False while a failed delivery still has attempts left."""


class Outbox:
    """Pending deliveries, each retried with doubling backoff until it lands or runs out.

    ``flush`` starts what is due in the background and returns at once; at most
    ``concurrency`` deliveries of each channel are in flight (a lane per channel). With a
    ``keeper``, every delivery is written there before its first attempt and removed once it
    lands or runs out of attempts: a watchdog that stops (or a ``--once`` run that ends) with
    pages still failing leaves them to the next one. While the keeper cannot be written (a
    full disk), deliveries wait in memory and the write is tried again each flush.
    """

    def __init__(
        self,
        notifiers: Sequence[Notifier],
        settings: NotifySettings,
        clock: Clock,
        on_result: Callable[[DeliveryResult], Awaitable[None]] | None = None,
        keeper: Store | None = None,
        log: Callable[[str], None] | None = None,
        concurrency: int = DELIVERY_CONCURRENCY,
    ) -> None:
        self.notifiers = list(notifiers)
        self.settings = settings
        self.clock = clock
        self.on_result = on_result
        self.keeper = keeper
        self.log = log or (lambda line: None)
        self._new: list[Page] = []
        self._queue: list[_Delivery] = []
        self._keeper_down = False
        self._concurrency = concurrency
        self._lanes: dict[str, asyncio.Semaphore] = {}
        """Each channel's slots, by its name: a hung channel waits for its own, no other's."""
        self._flying: set[asyncio.Task[None]] = set()
        self._results: list[DeliveryResult] = []

    @property
    def pending(self) -> int:
        """Deliveries not yet landed or given up (in flight, waiting, or not yet started)."""
        return len(self._queue) + len(self._new) * len(self.notifiers)

    @property
    def in_flight(self) -> int:
        return len(self._flying)

    @property
    def passes_on_acks(self) -> bool:
        """True when a channel keeps incidents: the watchdog then pages acks too."""
        return any(notifier.keeps_incidents for notifier in self.notifiers)

    def put(self, page: Page) -> None:
        self._new.append(page)

    async def load(self) -> int:
        """Take over the pages the keeper holds (left by an earlier watchdog); return how many.

        A page owed to a channel no longer configured is dropped, and said so.
        """
        if self.keeper is None:
            return 0
        try:
            kept = await self.keeper.pending_pages()
        except ZombietopError as exc:
            self.log(f"cannot read undelivered pages ({exc}); they wait in the store")
            return 0
        by_name = {notifier.name: notifier for notifier in self.notifiers}
        queued = {d.page_id for d in self._queue if d.page_id is not None}
        loaded = 0
        for row in kept:
            if row.page_id in queued:
                continue
            try:
                kind, health = PageKind(row.kind), page_health(row.health)
            except ValueError:
                # Written by a newer zombietop that knows a word this one does not.
                self.log(f"dropping a page of an unknown kind or health: {bounded(row.line)}")
                await self._drop(row.page_id)
                continue
            page = Page(
                kind=kind,
                line=row.line,
                task_id=row.task_id,
                health=health,
                at=row.page_at,
                incident=row.incident,
                runbook=row.runbook,
                trace_id=row.trace_id,
                trace_url=row.trace_url,
            )
            notifier = by_name.get(row.notifier)
            if notifier is None:
                self.log(f"dropping a page owed to {row.notifier} (not configured): {page.line}")
                await self._drop(row.page_id)
                continue
            self._queue.append(
                _Delivery(
                    page=page,
                    notifier=notifier,
                    attempts=row.attempts,
                    next_at=row.next_at,
                    page_id=row.page_id,
                )
            )
            loaded += 1
        return loaded

    def forget_kept(self) -> None:
        """Leave the kept deliveries to the watchdog that took over; deliver only the rest."""
        self._queue = [d for d in self._queue if d.page_id is None or d.flying]

    async def flush(self) -> list[DeliveryResult]:
        """Start every delivery that is due; return the outcomes that came in since the last
        call. Never waits for a delivery, never raises."""
        self._compose()
        await self._keep_new()
        now = self.clock.now()
        ahead: set[tuple[str, str]] = set()
        for delivery in self._queue:
            incident = delivery.page.incident
            if incident is not None:
                # An incident's pages reach each channel in order: a resolve that overtook its
                # trigger (failing, retried) would leave the pager's incident open for good.
                line = (delivery.notifier.name, incident)
                if line in ahead:
                    continue
                ahead.add(line)
            if not delivery.flying and delivery.next_at <= now:
                delivery.flying = True
                task = asyncio.create_task(self._deliver(delivery))
                self._flying.add(task)
                task.add_done_callback(self._flying.discard)
        # One turn of the loop: a delivery that does not block (a list, a log) is done now.
        await asyncio.sleep(0)
        results, self._results = self._results, []
        return results

    async def drain(self, window: float, stop: asyncio.Event) -> None:
        """Give failed deliveries up to ``window`` seconds to land, unless ``stop`` is set: a
        ``--once`` run does before it exits."""
        deadline = asyncio.get_running_loop().time() + window
        while self.pending and not stop.is_set():
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                self.log(
                    f"{self.pending} page deliveries not delivered yet; "
                    "giving up for this run (the store keeps them for the next one)"
                )
                return
            await self.wait(min(self.settings.retry_backoff, left, 5.0))
            await self.flush()

    async def wait(self, timeout: float) -> None:
        """Wait until a delivery in flight ends, or ``timeout`` seconds if none is."""
        if self._flying:
            await asyncio.wait(set(self._flying), timeout=timeout, return_when="FIRST_COMPLETED")
        else:
            await asyncio.sleep(timeout)

    async def settle(self, timeout: float | None = None) -> list[DeliveryResult]:
        """Wait (up to ``timeout``) for the deliveries in flight; return the outcomes since the
        last ``flush`` or ``settle``."""
        if self._flying:
            await asyncio.wait(set(self._flying), timeout=timeout)
        results, self._results = self._results, []
        return results

    async def close(self, timeout: float) -> None:
        """Give the deliveries in flight ``timeout`` seconds, then stop them (their kept rows
        stay for the next watchdog)."""
        await self.settle(timeout)
        for task in list(self._flying):
            task.cancel()
        if self._flying:
            await asyncio.wait(set(self._flying))

    def _compose(self) -> None:
        if not self._new:
            return
        pages, self._new = self._new, []
        keeping = [n for n in self.notifiers if n.keeps_incidents]
        others = [n for n in self.notifiers if not n.keeps_incidents]
        for page in pages:
            for notifier in keeping:
                self._queue.append(_Delivery(page=page, notifier=notifier, next_at=page.at))
        if not others:
            return
        told = [page for page in pages if page.kind is not PageKind.ACKNOWLEDGED]
        for page in compose(told, after=self.settings.digest_after, at=self.clock.now()):
            for notifier in others:
                self._queue.append(_Delivery(page=page, notifier=notifier, next_at=page.at))

    async def _keep_new(self) -> None:
        if self.keeper is None:
            return
        for delivery in self._queue:
            if delivery.page_id is not None:
                continue
            page = delivery.page
            try:
                delivery.page_id = await self.keeper.keep_page(
                    notifier=delivery.notifier.name,
                    kind=page.kind,
                    line=page.line,
                    task_id=page.task_id,
                    health=page.health and str(page.health),
                    page_at=page.at,
                    attempts=delivery.attempts,
                    next_at=delivery.next_at,
                    incident=page.incident,
                    runbook=page.runbook,
                    trace_id=page.trace_id,
                    trace_url=page.trace_url,
                )
            except ZombietopError as exc:
                if not self._keeper_down:
                    self.log(f"cannot keep pages in the store ({exc}); they wait in memory")
                self._keeper_down = True
                return
            self._keeper_down = False

    async def _deliver(self, delivery: _Delivery) -> None:
        name = delivery.notifier.name
        lane = self._lanes.get(name)
        if lane is None:
            lane = self._lanes[name] = asyncio.Semaphore(self._concurrency)
        async with lane:
            result = await self._attempt(delivery)
        delivery.flying = False
        try:
            await self._settle(delivery, result)
            if self.on_result is not None:
                await self.on_result(result)
        except Exception as exc:  # the outcome's bookkeeping must not lose the outcome
            self.log(f"could not record a delivery ({exc!r}): {delivery.page.line}")
        self._results.append(result)

    async def _settle(self, delivery: _Delivery, result: DeliveryResult) -> None:
        """Bring the keeper's row in line with the attempt just made."""
        if delivery.page_id is None or self.keeper is None:
            return
        try:
            if result.final:
                await self.keeper.drop_page(delivery.page_id)
            else:
                await self.keeper.retry_page(
                    delivery.page_id, attempts=delivery.attempts, next_at=delivery.next_at
                )
        except ZombietopError as exc:
            # A delivered page whose row stays may be sent once more by the next watchdog:
            # a page twice beats a page never.
            self.log(f"cannot update the kept page ({exc}): {delivery.page.line}")

    async def _drop(self, page_id: int) -> None:
        assert self.keeper is not None
        try:
            await self.keeper.drop_page(page_id)
        except ZombietopError as exc:
            self.log(f"cannot drop the kept page {page_id} ({exc})")

    async def _attempt(self, delivery: _Delivery) -> DeliveryResult:
        delivery.attempts += 1
        try:
            await delivery.notifier.send(delivery.page)
        except Exception as exc:  # a notifier must never take detection down with it
            message = bounded(
                str(exc)
                if isinstance(exc, ZombietopError)
                else f"{delivery.notifier.name}: {exc!r}",
                limit=ERROR_LIMIT,
            )
            hopeless = isinstance(exc, DeliveryError) and not exc.retry
            final = hopeless or delivery.attempts >= self.settings.max_attempts
            if final:
                self._queue.remove(delivery)
            else:
                delay = self.settings.retry_backoff * 2 ** (delivery.attempts - 1)
                delivery.next_at = self.clock.now() + delay
            return DeliveryResult(
                page=delivery.page,
                notifier=delivery.notifier.name,
                channel=delivery.notifier.kind,
                ok=False,
                attempts=delivery.attempts,
                error=message,
                final=final,
            )
        self._queue.remove(delivery)
        return DeliveryResult(
            page=delivery.page,
            notifier=delivery.notifier.name,
            channel=delivery.notifier.kind,
            ok=True,
            attempts=delivery.attempts,
        )
