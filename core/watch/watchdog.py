"""The headless watchdog: detect transitions, quarantine, page a human once per incident.

It pages and holds; it does not heal. Only a step type with ``auto_retry = true`` (idempotent
work) is retried, within its retry limit and with backoff. Its memory of open incidents is the
event log itself, so a watchdog run from cron (``--once``) pages once per incident too. Who is
paged again, and when, is the on-call loop's (``zombietop.oncall.acks``): acks, silences, renotify.

The watchdog works in looks (see docs/glossary.md): one call of ``Watchdog.tick``, once every
``[watch] interval``, polls the store once, decides whether that snapshot can be trusted,
judges each task and acts on it, then delivers the pages that are due. Each step is a part of
its own, which this class only puts together:

- ``PollTrust`` (and ``ClockWatch`` in it): whether the store was read, in time, on clocks
  that agree, otherwise the look's verdicts are withheld; and whether tasks were left unread.
- ``LeaseKeeper``: whether this watchdog is the active one or a standby.
- ``IncidentBook`` (with ``Quarantines``): open, follow up, retry and close incidents.
- ``FlapWatch``: count each task's flips; a task that flaps is paged once, then held.
- ``BudgetWatch``, ``ScheduleWatch``, ``SpinningWatch``: overruns, missed schedules and
  the tasks of a health that warns (spinning), logged and digested.
- ``OtelWatch`` (``zombietop[otel]``, when asked for): spans, log records and metrics.
- ``Hands``: how all of them record events, queue pages and run actions; ``Look`` gathers
  what one look did, and ``LookReport`` is what the caller hears of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zombietop.actions import ActionExecutor, ActionOutcome
from zombietop.clock import Clock, SystemClock
from zombietop.config import Config
from zombietop.errors import StoreError, StoreReplaced
from zombietop.extras import require
from zombietop.fleet import WatchdogLease
from zombietop.health import Health
from zombietop.judge.flapping import is_flip
from zombietop.judge.monitor import Monitor, Snapshot, TaskView
from zombietop.model import EventKind
from zombietop.paging.notify import DeliveryResult, Notifier, Page
from zombietop.printable import LOG_LIMIT, bounded
from zombietop.store.pruner import keep_pruning, prune
from zombietop.watch.budget_watch import BudgetWatch
from zombietop.watch.clock_watch import ClockWatch
from zombietop.watch.flap_watch import FlapWatch
from zombietop.watch.incident_book import IncidentBook
from zombietop.watch.poll_trust import PollTrust
from zombietop.watch.root_causes import RootCauses
from zombietop.watch.schedule_watch import ScheduleWatch
from zombietop.watch.spinning import SpinningWatch
from zombietop.watch.watchdog_hands import Hands, Look
from zombietop.watch.watchdog_lease import LEASE_INTERVALS as LEASE_INTERVALS  # where tests find it
from zombietop.watch.watchdog_lease import LeaseKeeper

if TYPE_CHECKING:
    from zombietop.watch.otel_watch import OtelWatch

OTLP_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
"""The standard variables that name a collector: any of them turns export on."""
OTEL_MODULES = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")

ONCE_DELIVERY_WINDOW = 60.0
"""Seconds a ``--once`` run keeps retrying failed deliveries before it exits."""
CLOSE_DELIVERY_WINDOW = 5.0
"""Seconds a stopping watchdog gives the deliveries in flight (the store keeps the rest)."""
ONCE_PRUNE_BUDGET = 10.0
"""Seconds a ``--once`` run spends pruning at most; the next run goes on from there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LookReport:
    """What one look of the watchdog (one ``tick``) found and did."""

    taken_at: float | None
    withheld: str | None = None
    """Why no verdicts were acted on in this look (the store could not be read, or lags, a
    clock jumped, or another watchdog is the active one)."""
    active: bool = True
    """False for a standby: another watchdog holds the store's watchdog lease."""
    watchdog: WatchdogLease | None = None
    """Who held the watchdog lease as of this look (None in a dry run or when unreadable)."""
    counts: Mapping[Health, int] = field(default_factory=dict)
    """Tasks per health as of this look (empty when the store could not be read)."""
    missed_schedules: int = 0
    """Schedules whose fire time passed its grace with no run started, as of this look."""
    pages: tuple[Page, ...] = ()
    logs: tuple[str, ...] = ()
    actions: tuple[ActionOutcome, ...] = ()
    deliveries: tuple[DeliveryResult, ...] = ()
    blind: bool = False
    """True when this look could not read the store (its tasks, if any, are an older look's)."""


def otel_watch(config: Config, hands: Hands, since: float) -> OtelWatch | None:
    """The OpenTelemetry part, when ``[otel] endpoint`` or the standard variables ask for it
    (``zombietop[otel]`` is needed then, and its absence said plainly)."""
    if not (config.otel.endpoint or any(os.environ.get(name) for name in OTLP_VARIABLES)):
        return None
    require("OpenTelemetry export ([otel] endpoint)", *OTEL_MODULES, extra="otel")
    from zombietop.otel.telemetry import Telemetry
    from zombietop.watch.otel_watch import OtelWatch

    return OtelWatch(hands, Telemetry(config.otel), since=since)


class Watchdog:
    """Look at the store every ``[watch] interval`` and act on what changed."""

    def __init__(
        self,
        monitor: Monitor,
        config: Config,
        *,
        executor: ActionExecutor | None,
        notifiers: list[Notifier],
        clock: Clock | None = None,
        dry_run: bool = False,
        log: Callable[[str], None] = print,
        monotonic: Callable[[], float] | None = None,
        wall: Callable[[], float] | None = None,
        pid: int | None = None,
    ) -> None:
        self.monitor = monitor
        self.store = monitor.store
        self.config = config
        self.executor = executor
        self.clock = clock or SystemClock()
        self.dry_run = dry_run
        self.log: Callable[[str], None] = lambda line: log(bounded(line, limit=LOG_LIMIT))
        """Every line the watchdog says goes out printable and bounded, whatever sink it is
        given: a task id of 100,000 characters must not make a log line of that size."""
        self.host = socket.gethostname()
        self.actor = f"watchdog@{self.host}"
        self.pid = os.getpid() if pid is None else pid
        self.lease_owner = f"{self.actor} pid {self.pid}"
        """Who this watchdog is in the watchdog lease (the actor is shared by a host's)."""
        # An injected clock is the watchdog's whole sense of time unless told otherwise: a
        # test that steps it has not made the store's clock jump.
        self.monotonic = monotonic or (self.clock.now if clock else time.monotonic)
        self.wall = wall or (self.clock.now if clock else time.time)
        watch = config.watch
        self.hands = Hands(
            monitor,
            executor=executor,
            notifiers=notifiers,
            settings=config.notify,
            clock=self.clock,
            actor=self.actor,
            dry_run=dry_run,
            log=self.log,
        )
        self.outbox = self.hands.outbox
        self.book = IncidentBook(self.hands, renotify=watch.renotify)
        self.incidents = self.book.incidents
        self.notices = self.book.notices
        self.clocks = ClockWatch(local=self.store.local_clock)
        self.trust = PollTrust(
            self.hands,
            self.clocks,
            interval=watch.interval,
            monotonic=self.monotonic,
            settle_most=max(
                limits.heartbeat_timeout
                for limits in (config.defaults, *config.step_types.values())
            ),
        )
        self.lease = LeaseKeeper(
            self.store,
            owner=self.lease_owner,
            host=self.host,
            pid=self.pid,
            interval=watch.interval,
            outbox=self.outbox,
            restore=self.restore,
            dry_run=dry_run,
            log=self.log,
        )
        self.budgets = BudgetWatch(
            self.hands, self.book, self.clocks, stage_kill_factor=watch.stage_kill_factor
        )
        self.schedules = ScheduleWatch(self.hands, self.book, renotify=watch.renotify)
        self.spinning = SpinningWatch(self.hands, self.book, digest_every=watch.digest_every)
        self.flaps = FlapWatch(self.hands, self.book)
        self.otel = otel_watch(config, self.hands, self.clock.now()) if not dry_run else None
        """Spans, log records and metrics to an OpenTelemetry collector (None: not asked for)."""
        self._last_health: dict[str, Health] = {}
        """Each task's health at the last look it was judged in: a change is a transition."""
        self._restored = False

    async def restore(self) -> None:
        """Rebuild open incidents and one-shot keys from the event log."""
        self._restored = True
        await self.book.restore(self.store, self.log)
        self.flaps.forget()

    async def release(self) -> None:
        """Give up the watchdog lease on a clean stop, so a standby takes over at once."""
        await self.lease.release()

    # One look ------------------------------------------------------------------------------

    async def tick(self) -> LookReport:
        """Look once: poll, decide whether to trust it, judge each task and act, deliver what
        is due. Never raises for the store."""
        if not self._restored:
            await self.restore()
        look = Look()
        looked_at, walled_at = self.monotonic(), self.wall()
        snapshot = await self.monitor.poll()
        withheld, lease = await self._trust(snapshot, looked_at, walled_at, look)
        if withheld is None:
            await self._judge_all(snapshot, look)
        deliveries = [] if self.lease.standby else await self.outbox.flush()
        for line in look.logs:
            self.log(line)
        return LookReport(
            taken_at=snapshot.taken_at,
            withheld=withheld,
            active=not self.lease.standby,
            watchdog=lease,
            blind=snapshot.error is not None,
            counts=snapshot.counts if snapshot.ok else {},
            missed_schedules=sum(1 for view in snapshot.schedules if view.health.pages)
            if snapshot.ok
            else 0,
            pages=tuple(look.pages),
            logs=tuple(look.logs),
            actions=tuple(look.actions),
            deliveries=tuple(deliveries),
        )

    async def _trust(
        self, snapshot: Snapshot, looked_at: float, walled_at: float, look: Look
    ) -> tuple[str | None, WatchdogLease | None]:
        """Say why this look's verdicts are withheld (None: act on them), and who held the
        watchdog lease as of it."""
        withheld = await self.trust.check_store(snapshot, look, standby=self.lease.standby)
        lease = None
        if withheld is None:
            looked = (looked_at, self.monotonic())
            untrusted = await self.trust.check_clocks(snapshot, looked, walled_at, look)
            lease, standby = await self.lease.hold(look)
            withheld = standby or untrusted
        if snapshot.ok:
            self.trust.check_sources(snapshot, look, standby=self.lease.standby)
            self.trust.check_unread(snapshot, look)
        if not self.lease.standby:  # a standby's silence is no stretch of ours
            self.trust.note_withheld(withheld, look)
        return withheld, lease

    async def _judge_all(self, snapshot: Snapshot, look: Look) -> None:
        """Act on a trusted snapshot: each task, the tasks gone, the schedules, the kills."""
        look.now = snapshot.taken_at if snapshot.taken_at is not None else self.clock.now()
        look.oncall = snapshot.oncall
        look.jobs = snapshot.jobs
        if self.config.watch.group_by_upstream:
            look.causes = RootCauses.of(snapshot.tasks)
        await self.flaps.recall(snapshot, look)
        if self.otel is not None:
            self.otel.begin(snapshot)
        # The waiting tasks last: an upstream's incident that opens in this look holds them.
        for view in sorted(snapshot.tasks, key=lambda view: bool(view.waiting_on)):
            await self._judge(view, look)
        await self.book.close_vanished(snapshot, look)
        # The tasks of a source that cannot be read are not gone: nothing is known of them.
        present = {view.task_id for view in snapshot.tasks} | snapshot.unread
        for task_id in [t for t in self._last_health if t not in present]:
            del self._last_health[task_id]
        self.flaps.gone(present)
        await self.schedules.check(snapshot, look)
        await self.spinning.digest(look)
        if self.otel is not None:
            await self.otel.looked(snapshot)
        if self.executor is not None and not self.dry_run:
            for outcome in await self.executor.complete_pending_kills():
                look.actions.append(outcome)
                look.logs.append(f"kill {outcome.request.task_id}: {outcome.message}")

    async def _judge(self, view: TaskView, look: Look) -> None:
        """Record the task's transition into or out of a health that pages, then let each
        part react to its verdict. The other changes (queued -> healthy -> succeeded, two
        events per task of a busy Airflow) are the task's own record, not the watchdog's."""
        task_id, health = view.task_id, view.health
        previous = self._last_health.get(task_id)
        self._last_health[task_id] = health
        if previous is not None and previous is not health and (previous.pages or health.pages):
            await self.hands.record(
                EventKind.TRANSITION,
                f"{previous} -> {health}",
                task_id,
                {"from": str(previous), "to": str(health)},
            )
            if is_flip(previous, health):
                self.flaps.flip(view, look.now)
            if self.otel is not None:
                self.otel.verdict(view, previous, look.now)
        view, held = await self.flaps.hold(view, look)
        if not held:
            await self.book.judge(view, look)
        await self.spinning.note(view, look)
        await self.budgets.check(view, look)

    # The loop ------------------------------------------------------------------------------

    async def _stop_if_replaced(self, stop: asyncio.Event) -> None:
        """A store deleted or replaced under us is never read again by this process: deliver
        the page about it, then stop (a supervisor restarting us opens what the path holds)."""
        try:
            self.store.check_path()
        except StoreReplaced:
            await self.outbox.drain(ONCE_DELIVERY_WINDOW, stop)
            raise

    async def run(
        self,
        *,
        once: bool = False,
        stop: asyncio.Event | None = None,
        after_tick: Callable[[LookReport], None] | None = None,
    ) -> None:
        """Tick every ``[watch] interval`` until ``stop`` is set (or once).

        ``after_tick`` hears of every look as it ends (the systemd watchdog ping, for one).
        """
        stop = stop or asyncio.Event()
        pruning = None
        if not once and self._prunes:
            pruning = asyncio.create_task(
                keep_pruning(
                    self.store,
                    self.config.keep_finished,
                    may_prune=self._may_prune,
                    log=self.log,
                    stop=stop,
                    first_after=self.config.watch.interval,
                )
            )
        try:
            while True:
                report = await self.tick()
                if after_tick is not None:
                    after_tick(report)
                if report.blind:
                    await self._stop_if_replaced(stop)
                if once:
                    await self.outbox.drain(ONCE_DELIVERY_WINDOW, stop)
                    await self._prune_once(stop)
                    return
                try:
                    await asyncio.wait_for(stop.wait(), self.config.watch.interval)
                    return
                except TimeoutError:
                    continue
        finally:
            if pruning is not None:
                pruning.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pruning
            await self.outbox.close(CLOSE_DELIVERY_WINDOW)
            if self.otel is not None:
                await asyncio.to_thread(self.otel.telemetry.close, CLOSE_DELIVERY_WINDOW)
            await self.release()

    @property
    def _prunes(self) -> bool:
        return self.config.keep_finished > 0 and not self.dry_run

    async def _may_prune(self) -> bool:
        """Only the active watchdog prunes (a standby's store is the same store)."""
        return self.lease.active is True

    async def _prune_once(self, stop: asyncio.Event) -> None:
        """A ``--once`` run (from cron) prunes too, for at most ``ONCE_PRUNE_BUDGET``."""
        if not self._prunes or not await self._may_prune():
            return
        try:
            run = await prune(
                self.store, self.config.keep_finished, stop=stop, budget=ONCE_PRUNE_BUDGET
            )
        except StoreError as exc:
            self.log(f"could not prune finished tasks ({exc})")
            return
        if run.tasks:
            self.log(run.words(self.config.keep_finished))
