"""The headless watchdog: detect transitions, quarantine, page a human once per incident.

It pages and holds; it does not heal. Only a step type with ``auto_retry = true`` (idempotent
work) is retried, within its retry limit and with backoff. Its memory of open incidents is the
event log itself, so a watchdog run from cron (``--once``) pages once per incident too. Who is
paged again, and when, is the on-call loop's (``zombietop.oncall``): acks, silences, renotify.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zombietop.actions import ActionExecutor, ActionKind, ActionOutcome, ActionRequest
from zombietop.clock import Clock, SystemClock
from zombietop.clock_watch import Beat, ClockWatch
from zombietop.config import Config
from zombietop.durations import format_age, format_duration
from zombietop.errors import StoreError, StoreReplaced
from zombietop.incident_book import SCHEDULE_KEY, Incident, IncidentBook
from zombietop.model import BudgetFlag, EventKind, Health, TaskState, WatchdogLease
from zombietop.monitor import Monitor, Snapshot, TaskView
from zombietop.notify import DeliveryResult, LogNotifier, Notifier, Outbox, Page
from zombietop.oncall import FollowUp, OnCall, capped_words, notice_line
from zombietop.output import last_output_of, with_last_output
from zombietop.printable import printable
from zombietop.retention import keep_pruning, prune
from zombietop.schedules import ScheduleHealth
from zombietop.sources import Origin
from zombietop.withheld import WithheldStretch

ONCE_DELIVERY_WINDOW = 60.0
"""Seconds a ``--once`` run keeps retrying failed deliveries before it exits."""
CLOSE_DELIVERY_WINDOW = 5.0
"""Seconds a stopping watchdog gives the deliveries in flight (the store keeps the rest)."""
LEASE_INTERVALS = 3
"""The watchdog lease lasts this many ``[watch] interval``s: a standby takes over after it."""
ONCE_PRUNE_BUDGET = 10.0
"""Seconds a ``--once`` run spends pruning at most; the next run goes on from there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LookReport:
    """What one look of the watchdog (one ``tick``) found and did."""

    taken_at: float | None
    withheld: str | None = None
    """Why no verdicts were acted on this tick (the store could not be read, or lags, a clock
    jumped, or another watchdog is the active one)."""
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


def _since(view: TaskView) -> float | None:
    """When the task last showed progress: its last beat, else its start."""
    beat = view.heartbeat
    return beat.written_at if beat is not None else view.task.started_at


def _ended_by_kill(view: TaskView) -> bool:
    """True when the task is dead because a kill (an operator's or ours) ended this very process."""
    kill = view.pending_kill
    return view.health is Health.DEAD and kill is not None and kill.pid == view.task.pid


@dataclass(slots=True)
class _Tick:
    now: float = 0.0
    """The snapshot's moment: ages in what this tick says are as of then."""
    pages: list[Page] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    actions: list[ActionOutcome] = field(default_factory=list)
    oncall: OnCall = field(default_factory=lambda: OnCall(at=0.0))
    """The acks and silences in force as of this tick's snapshot."""
    told: bool = False
    """Why verdicts are withheld was said already this tick."""


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
        self.log: Callable[[str], None] = lambda line: log(printable(line))
        """Every line the watchdog says goes out printable, whatever sink it is given."""
        self.host = socket.gethostname()
        self.actor = f"watchdog@{self.host}"
        self.pid = os.getpid() if pid is None else pid
        self.lease_owner = f"{self.actor} pid {self.pid}"
        """Who this watchdog is in the watchdog lease (the actor is shared by a host's)."""
        # An injected clock is the watchdog's whole sense of time unless told otherwise: a
        # test that steps it has not made the store's clock jump.
        self.monotonic = monotonic or (self.clock.now if clock else time.monotonic)
        self.wall = wall or (self.clock.now if clock else time.time)
        self.outbox = Outbox(
            [LogNotifier.dry_run(self.log)] if dry_run else notifiers,
            config.notify,
            self.clock,
            on_result=self._delivered,
            keeper=None if dry_run else self.store,
            log=self.log,
        )
        self.book = IncidentBook()
        self.incidents = self.book.incidents
        self.notices = self.book.notices
        self._once = self.book.once
        self._last_health: dict[str, Health] = {}
        self._spinning: dict[str, str] = {}
        self._store_down = False
        self._restored = False
        self._active: bool | None = None
        """Whether this watchdog held the lease at the last look (None before the first)."""
        self.clocks = ClockWatch(local=self.store.local_clock)
        self._withheld = WithheldStretch()
        self._unheld: set[str] = set()
        """Tasks whose quarantine could not be written: retried each look, paged once held."""
        self._write_down = False
        self._lease_stuck = False

    # Memory --------------------------------------------------------------------------------

    async def restore(self) -> None:
        """Rebuild open incidents and one-shot keys from the event log."""
        self._restored = True
        await self.book.restore(self.store, self.log)

    async def _record(
        self, kind: EventKind, message: str, task_id: str | None, data: dict[str, Any]
    ) -> None:
        if self.dry_run:
            return
        try:
            await self.store.record_event(
                kind=kind, actor=self.actor, message=message, task_id=task_id, data=data
            )
        except StoreError as exc:
            self.log(f"could not record event ({exc}): {message}")

    async def _delivered(self, result: DeliveryResult) -> None:
        tasks = {"tasks": list(result.page.tasks)} if result.page.tasks else {}
        if result.ok:
            if result.attempts > 1:
                self.log(
                    f"delivered via {result.notifier} on attempt {result.attempts}: "
                    f"{result.page.shown}"
                )
            await self._record(
                EventKind.DELIVERY,
                f"delivered via {result.notifier} (attempt {result.attempts})",
                result.page.task_id,
                {"ok": True, "notifier": result.notifier, "attempts": result.attempts, **tasks},
            )
            return
        then = "giving up" if result.final else "will retry"
        self.log(f"delivery failed ({then}): {result.error}")
        await self._record(
            EventKind.DELIVERY,
            f"delivery failed, {then}: {result.error}",
            result.page.task_id,
            {
                "ok": False,
                "notifier": result.notifier,
                "attempts": result.attempts,
                "final": result.final,
                **tasks,
            },
        )

    # One look ------------------------------------------------------------------------------

    async def tick(self) -> LookReport:
        """Poll once, react to what changed, and deliver what is due. Never raises for the store."""
        if not self._restored:
            await self.restore()
        tick = _Tick()
        looked_at, walled_at = self.monotonic(), self.wall()
        snapshot = await self.monitor.poll()
        withheld = await self._check_detector(snapshot, tick)
        lease = None
        if withheld is None:
            looked = (looked_at, self.monotonic())
            untrusted = await self._check_clocks(snapshot, looked, walled_at, tick)
            lease, standby = await self._hold_lease(tick)
            withheld = standby or untrusted
        if self._active is not False:  # a standby's silence is no stretch of ours
            news = self._withheld.look(withheld, self.monotonic(), told=tick.told)
            if news is not None:
                tick.logs.append(news)
        if withheld is None:
            tick.now = snapshot.taken_at if snapshot.taken_at is not None else self.clock.now()
            tick.oncall = snapshot.oncall
            for view in snapshot.tasks:
                await self._judge(view, tick)
            await self._close_vanished(snapshot, tick)
            await self._schedules(snapshot, tick)
            await self._digest(tick)
            if self.executor is not None and not self.dry_run:
                for outcome in await self.executor.complete_pending_kills():
                    tick.actions.append(outcome)
                    tick.logs.append(f"kill {outcome.request.task_id}: {outcome.message}")
        deliveries = await self.outbox.flush() if self._active is not False else []
        for line in tick.logs:
            self.log(line)
        return LookReport(
            taken_at=snapshot.taken_at,
            withheld=withheld,
            active=self._active is not False,
            watchdog=lease,
            blind=snapshot.error is not None,
            counts=snapshot.counts if snapshot.ok else {},
            missed_schedules=sum(1 for view in snapshot.schedules if view.health.pages)
            if snapshot.ok
            else 0,
            pages=tuple(tick.pages),
            logs=tuple(tick.logs),
            actions=tuple(tick.actions),
            deliveries=tuple(deliveries),
        )

    async def _check_detector(self, snapshot: Snapshot, tick: _Tick) -> str | None:
        """Withhold verdicts (and say so, once) while the store cannot be read or lags."""
        if snapshot.error is not None:
            reason = f"cannot read store {self.store.describe()}: {snapshot.error}"
            if not self._store_down:
                self._store_down = True
                if self._active is False:
                    # The active watchdog pages it, if it too cannot read the store.
                    tick.logs.append(f"standby: {reason}")
                    return reason
                self._page(
                    tick,
                    "watchdog",
                    f"zombietop watchdog {reason} - verdicts withheld until it can",
                    key=None,
                )
            return reason
        if self._store_down:
            self._store_down = False
            self._page(
                tick,
                "all_clear",
                f"zombietop watchdog reads {self.store.describe()} again",
                key=None,
            )
        interval = self.config.watch.interval
        if snapshot.poll_seconds > interval:
            reason = (
                f"store lags: one poll took {snapshot.poll_seconds:.1f}s, "
                f"longer than the {interval:g}s interval"
            )
            return reason
        return None

    async def _check_clocks(
        self, snapshot: Snapshot, looked: tuple[float, float], walled_at: float, tick: _Tick
    ) -> str | None:
        """Withhold verdicts for a look whose ages cannot be trusted (``ClockWatch``)."""
        assert snapshot.taken_at is not None
        beats = [
            Beat(task_id=view.task_id, seq=view.heartbeat.seq, written_at=view.heartbeat.written_at)
            for view in snapshot.tasks
            if view.heartbeat is not None and view.task.state.executing
        ]
        verdict = self.clocks.check(snapshot.taken_at, beats, looked, walled_at)
        tick.logs.extend(verdict.said)
        if verdict.recorded is not None:
            line = f"verdicts withheld: {verdict.recorded}"
            tick.logs.append(line)
            tick.told = True
            await self._record(EventKind.WATCHDOG, line, None, {})
        return verdict.withheld

    async def _hold_lease(self, tick: _Tick) -> tuple[WatchdogLease | None, str | None]:
        """Take or renew the store's watchdog lease; say why not (a standby), once per change."""
        if self.dry_run:
            self._active = True
            return None, None
        ttl = LEASE_INTERVALS * self.config.watch.interval
        try:
            lease = await self.store.hold_watchdog_lease(
                owner=self.lease_owner, host=self.host, pid=self.pid, ttl=ttl
            )
        except StoreError as exc:
            if self._active:
                # A full disk must not blind the watchdog: nobody can take the lease over
                # while nobody can write, and the next renewal that lands says who holds it.
                if not self._lease_stuck:
                    self._lease_stuck = True
                    tick.logs.append(
                        f"cannot renew the watchdog lease ({exc}); still acting as the active one"
                    )
                return None, None
            reason = f"cannot hold the watchdog lease in {self.store.describe()}: {exc}"
            return None, reason
        self._lease_stuck = False
        active = lease.owner == self.lease_owner
        was, self._active = self._active, active
        if active and was is not True:
            if was is False:
                tick.logs.append(f"active: took over the watchdog lease (token {lease.token})")
                await self.restore()  # what the other watchdog opened and closed meanwhile
            loaded = await self.outbox.load()
            if loaded:
                tick.logs.append(f"{loaded} undelivered page(s) from the store: delivering them")
        if active:
            return lease, None
        reason = (
            f"standby: {lease.owner} is the active watchdog (token {lease.token}); "
            f"taking over if its lease lapses for {format_duration(ttl)}"
        )
        if was is not False:
            self.outbox.forget_kept()
            tick.logs.append(reason)
        return lease, reason

    async def release(self) -> None:
        """Give up the watchdog lease on a clean stop, so a standby takes over at once."""
        if self._active and not self.dry_run:
            try:
                await self.store.release_watchdog_lease(owner=self.lease_owner)
            except StoreError as exc:
                self.log(f"could not release the watchdog lease ({exc}); it lapses by itself")
            self._active = None

    def _page(
        self,
        tick: _Tick,
        kind: str,
        line: str,
        *,
        key: str | None,
        view: TaskView | None = None,
        health: Health | None = None,
    ) -> Page:
        """Queue a page; ``health`` is the one its line speaks of (the view's by default)."""
        health = health or (view.health if view else None)
        page = Page(
            kind=kind,
            line=line,
            task_id=view.task_id if view else None,
            health=str(health) if health else None,
            host=view.task.host if view else None,
            since=_since(view) if view else None,
            at=self.clock.now(),
        )
        tick.pages.append(page)
        self.outbox.put(page)
        return page

    async def _overrun(self, tick: _Tick, kind: str, line: str, key: str, view: TaskView) -> None:
        """Page an overrun once; while the task's incident is open, its page already spoke."""
        self._once.add(key)
        if view.task_id in self.incidents:
            tick.logs.append(f"{kind} during an open incident (not paged again): {line}")
            await self._record(EventKind.WATCHDOG, f"{kind}: {line}", view.task_id, {"key": key})
            return
        self._page(tick, kind, line, key=key, view=view)
        await self._record(
            EventKind.PAGE,
            line,
            view.task_id,
            {"page": kind, "key": key, "health": str(view.health)},
        )

    async def _judge(self, view: TaskView, tick: _Tick) -> None:
        task_id, health = view.task_id, view.health
        previous = self._last_health.get(task_id)
        self._last_health[task_id] = health
        if previous is not None and previous is not health:
            await self._record(
                EventKind.TRANSITION,
                f"{previous} -> {health}",
                task_id,
                {"from": str(previous), "to": str(health)},
            )

        if health.pages and _ended_by_kill(view):
            # Between a killed command's exit and its wrapper recording it, the task looks dead
            # for a moment: the kill's outcome is the news, not a new incident (or an all-clear).
            pass
        elif health.pages:
            if task_id not in self.incidents:
                await self._open_incident(view, tick)
            else:
                await self._follow_up(view, tick)
            await self._auto_retry(view, tick)
        elif task_id in self.incidents:
            await self._close_incident(view, tick)

        spin_key = f"spinning:{task_id}:{view.task.attempt}"
        if health is Health.SPINNING:
            context = view.verdict.context(tick.now)
            self._spinning[task_id] = context
            if spin_key not in self._once:
                self._once.add(spin_key)
                tick.logs.append(f"spinning (not paged): {context}")
                await self._record(
                    EventKind.WATCHDOG,
                    f"spinning: {context}",
                    task_id,
                    {"key": spin_key},
                )
        else:
            self._spinning.pop(task_id, None)

        await self._budgets(view, tick)

    async def _open_incident(self, view: TaskView, tick: _Tick) -> None:
        """Quarantine the task, then page: an incident is open only once its hold is written,
        so a hold that fails (a full disk) is tried again at every look."""
        task_id = view.task_id
        verdict = view.verdict
        context = verdict.context(tick.now)
        origin = self.monitor.last.origins.get(task_id)
        if not view.task.quarantined:
            first = next(
                (r.words(tick.now) for r in verdict.reasons if r.health is view.health),
                str(view.health),
            )
            if origin is not None:
                await self._hold(view, origin, f"{view.health}: {first}", tick)
            elif self.dry_run:
                tick.logs.append(f"would quarantine {task_id}: {first}")
            else:
                try:
                    await self.store.set_quarantine(
                        task_id,
                        quarantined=True,
                        actor=self.actor,
                        reason=f"{view.health}: {first}",
                    )
                except StoreError as exc:
                    self._quarantine_failed(view, tick, exc)
                    return
                tick.logs.append(f"quarantined {task_id}: {first}")
        if task_id in self._unheld:
            self._unheld.discard(task_id)
            if not self._unheld and self._write_down:
                self._write_down = False
                self._page(
                    tick,
                    "all_clear",
                    f"zombietop watchdog writes {self.store.describe()} again",
                    key=None,
                )
        self.incidents[task_id] = Incident(task_id=task_id, health=view.health, opened_at=tick.now)
        page_key = f"incident:{task_id}:{view.task.attempt}:{self.incidents[task_id].opened_at}"
        # The job's last words, and how old they are: "the last log line was at 03:42".
        last = await asyncio.to_thread(last_output_of, self.store, view.task, self.monitor.host)
        line = with_last_output(context, last, tick.now)
        silence = tick.oncall.silence_for(view.task)
        self.notices.opened(task_id, at=self.incidents[task_id].opened_at, paged=silence is None)
        if silence is not None:
            # Detected, shown and counted, never paged: the page goes out if the silence ends
            # while the incident is still open (``_follow_up``).
            tick.logs.append(
                f"silenced (not paged: silence {silence.silence_id}, {silence.rule}"
                f"{capped_words(silence)}): {context}"
            )
            await self._record(
                EventKind.WATCHDOG,
                f"held by silence {silence.silence_id}: {context}",
                task_id,
                {
                    "page": "incident",
                    "key": page_key,
                    "health": str(view.health),
                    "held": silence.silence_id,
                },
            )
            return
        self._page(tick, "incident", line, key=page_key, view=view)
        await self._record(
            EventKind.PAGE,
            line,
            task_id,
            {"page": "incident", "key": page_key, "health": str(view.health)},
        )

    async def _follow_up(self, view: TaskView, tick: _Tick) -> None:
        """Page an open incident again when the on-call loop says it is owed a page."""
        oncall = tick.oncall
        due = self.notices.due(
            view.task_id,
            now=self.clock.now(),
            interval=self.config.watch.renotify,
            acked=oncall.ack_for(view.task_id) is not None,
            silenced=oncall.silence_for(view.task) is not None,
        )
        if due is not None:
            line = view.verdict.context(tick.now)
            await self._notice(tick, view.task_id, due, line, view=view)

    async def _notice(
        self,
        tick: _Tick,
        key: str,
        due: FollowUp,
        line: str,
        *,
        view: TaskView | None = None,
        schedule: str | None = None,
    ) -> None:
        """Send the next notice of an open incident: the same line, its number, how long open."""
        now = self.clock.now()
        notice = self.notices.get(key)
        assert notice is not None
        number = self.notices.sent(key, at=now)
        text = notice_line(line, notice=number, open_for=now - notice.opened_at)
        kind = "incident" if due is FollowUp.RELEASE else "renotify"
        data: dict[str, Any] = {"page": kind, "notice": number}
        if due is FollowUp.RELEASE:
            data["released"] = True
        if schedule is not None:
            data.update(schedule=schedule, health=str(ScheduleHealth.MISSED))
            self._page_schedule(tick, kind, text)
        else:
            assert view is not None
            data["health"] = str(view.health)
            self._page(tick, kind, text, key=None, view=view)
        await self._record(EventKind.PAGE, text, None if view is None else view.task_id, data)

    def _page_schedule(self, tick: _Tick, kind: str, line: str) -> None:
        page = Page(kind=kind, line=line, health=str(ScheduleHealth.MISSED), at=self.clock.now())
        tick.pages.append(page)
        self.outbox.put(page)

    async def _schedules(self, snapshot: Snapshot, tick: _Tick) -> None:
        """Page a missed schedule like a stall (then re-notify), all-clear once a run starts."""
        configured = set()
        for view in snapshot.schedules:
            key = SCHEDULE_KEY + view.name
            configured.add(key)
            open_ = self.notices.get(key)
            if view.health.pages and open_ is None:
                self.notices.opened(key, at=self.clock.now(), paged=True)
                self._page_schedule(tick, "incident", view.line)
                await self._record(
                    EventKind.PAGE,
                    view.line,
                    None,
                    {"page": "incident", "schedule": view.name, "health": str(view.health)},
                )
            elif view.health.pages:
                due = self.notices.due(
                    key,
                    now=self.clock.now(),
                    interval=self.config.watch.renotify,
                    acked=False,
                    silenced=False,
                )
                if due is not None:
                    await self._notice(tick, key, due, view.line, schedule=view.name)
            elif open_ is not None and view.health is not ScheduleHealth.LATE:
                # Late is a new fire time still inside its grace: the miss is not over yet.
                took = format_age(self.clock.now() - open_.opened_at)
                await self._schedule_clear(
                    tick, view.name, f"now {view.health} (was missed for {took})"
                )
        for key in [k for k in self.notices.keys() if k.startswith(SCHEDULE_KEY)]:
            if key not in configured:
                await self._schedule_clear(tick, key[len(SCHEDULE_KEY) :], "no longer configured")

    async def _schedule_clear(self, tick: _Tick, name: str, how: str) -> None:
        self.notices.closed(SCHEDULE_KEY + name)
        line = f"schedule {name} all clear: {how}"
        self._page_schedule(tick, "all_clear", line)
        await self._record(EventKind.PAGE, line, None, {"page": "all_clear", "schedule": name})

    async def _end_ack(self, task_id: str, tick: _Tick) -> None:
        """An ack lasts until it expires or its incident ends: this one ended."""
        if self.dry_run or tick.oncall.ack_for(task_id) is None:
            return
        try:
            await self.store.unack_task(task_id, by=self.actor, reason="the incident ended")
        except StoreError as exc:
            tick.logs.append(f"could not end the ack of {task_id}: {exc}")

    async def _hold(self, view: TaskView, origin: Origin, reason: str, tick: _Tick) -> None:
        """Quarantine a read-only source's task on zombietop's side only: an event in the store
        that the monitor shows as the hold, never a write into the engine's database."""
        where = f"in zombietop only ({origin.kind} is read-only: nothing written there)"
        if self.dry_run:
            tick.logs.append(f"would hold {view.task_id} {where}: {reason}")
            return
        await self._record(
            EventKind.QUARANTINED,
            f"held {where}: {reason}",
            view.task_id,
            {"source": origin.source, "reason": reason},
        )
        tick.logs.append(f"held {view.task_id} {where}: {reason}")

    def _quarantine_failed(self, view: TaskView, tick: _Tick, exc: StoreError) -> None:
        task_id = view.task_id
        if task_id not in self._unheld:
            self._unheld.add(task_id)
            tick.logs.append(
                f"could not quarantine {task_id} ({exc}); trying again every look, "
                "its incident opens once the hold is written"
            )
        if not self._write_down:
            # The human hears of it now, from the watchdog itself, not once space is freed.
            self._write_down = True
            self._page(
                tick,
                "watchdog",
                f"zombietop watchdog cannot write {self.store.describe()}: could not "
                f"quarantine {task_id} ({view.health}): {exc} - free the store's disk",
                key=None,
            )

    async def _close_incident(self, view: TaskView, tick: _Tick) -> None:
        task_id, health = view.task_id, view.health
        incident = self.incidents.pop(task_id)
        task = view.task
        origin = self.monitor.last.origins.get(task_id)
        if origin is not None and task.quarantined_by == self.actor and not self.dry_run:
            await self._record(
                EventKind.UNQUARANTINED,
                f"hold released: now {health}",
                task_id,
                {"source": origin.source, "reason": "recovered"},
            )
        elif (
            health is Health.QUARANTINED
            and task.quarantined_by == self.actor
            and task.state.executing
        ):
            # It recovered by itself: let go of the hold we placed, and tell the human.
            if not self.dry_run:
                try:
                    await self.store.set_quarantine(
                        task_id, quarantined=False, actor=self.actor, reason="recovered"
                    )
                except StoreError as exc:
                    tick.logs.append(f"could not release quarantine on {task_id}: {exc}")
            health = Health.HEALTHY
        took = format_age(max(tick.now - incident.opened_at, 0.0))
        now = str(health)
        if health is Health.QUARANTINED and task.state is TaskState.INTERRUPTED:
            # Killed while held: what ended it is the kill, the hold only stays.
            now = f"{TaskState.INTERRUPTED} (still quarantined)"
            health = Health.INTERRUPTED
        line = f"{task_id} all clear: now {now} (was {incident.health} for {took})"
        await self._end_ack(task_id, tick)
        if await self._closed_unpaged(task_id, line, tick):
            return
        self._page(tick, "all_clear", line, key=None, view=view, health=health)
        await self._record(
            EventKind.PAGE, line, task_id, {"page": "all_clear", "health": str(health)}
        )

    async def _closed_unpaged(self, task_id: str, line: str, tick: _Tick) -> bool:
        """Close the incident's notices; True (and no page) when a silence held every page."""
        notice = self.notices.closed(task_id)
        if notice is None or notice.notices > 0:
            return False
        tick.logs.append(f"silenced (not paged): {line}")
        await self._record(EventKind.WATCHDOG, line, task_id, {"page": "all_clear", "held": True})
        return True

    async def _close_vanished(self, snapshot: Snapshot, tick: _Tick) -> None:
        present = {view.task_id for view in snapshot.tasks}
        for task_id in [t for t in self.incidents if t not in present]:
            incident = self.incidents.pop(task_id)
            line = f"{task_id} all clear: no longer active (was {incident.health})"
            await self._end_ack(task_id, tick)
            if await self._closed_unpaged(task_id, line, tick):
                continue
            self._page(tick, "all_clear", line, key=None)
            await self._record(EventKind.PAGE, line, task_id, {"page": "all_clear"})
        for task_id in [t for t in self._last_health if t not in present]:
            del self._last_health[task_id]

    async def _auto_retry(self, view: TaskView, tick: _Tick) -> None:
        limits = view.limits
        if not limits.auto_retry or view.health not in (Health.DEAD, Health.RECLAIMABLE):
            return
        task, incident = view.task, self.incidents[view.task_id]
        if task.attempt >= limits.max_retries:
            key = f"retry-limit:{task.task_id}:{task.attempt}"
            if key not in self._once:
                self._once.add(key)
                message = (
                    f"{task.task_id}: auto_retry stopped after {task.attempt} attempts; "
                    "a human decides"
                )
                tick.logs.append(message)
                await self._record(EventKind.WATCHDOG, message, task.task_id, {"key": key})
            return
        due = incident.opened_at + limits.retry_backoff * 2 ** (task.attempt - 1)
        if tick.now < due:
            return
        reason = (
            f"auto_retry: attempt {task.attempt + 1} of {limits.max_retries} after {view.health}"
        )
        outcome = await self._act(view, ActionKind.RESUME, reason, tick)
        if outcome is not None:
            await self._record(
                EventKind.WATCHDOG,
                f"{reason}: {outcome.message}",
                task.task_id,
                {"retry": task.attempt + 1},
            )

    async def _act(
        self, view: TaskView, kind: ActionKind, reason: str, tick: _Tick
    ) -> ActionOutcome | None:
        if self.dry_run or self.executor is None:
            tick.logs.append(f"would {kind} {view.task_id}: {reason}")
            return None
        origin = self.monitor.last.origins.get(view.task_id)
        if origin is not None:
            # The engine runs its own tasks: on them, zombietop acts only when a human asks.
            tick.logs.append(f"not {kind}: {view.task_id} is {origin.kind}'s ({reason})")
            return None
        request = ActionRequest(
            kind=kind,
            task_id=view.task_id,
            expected_token=view.token,
            actor=self.actor,
            reason=reason,
        )
        outcome = await self.executor.run(request)
        tick.actions.append(outcome)
        tick.logs.append(f"{kind} {view.task_id}: {outcome.message}")
        return outcome

    async def _budgets(self, view: TaskView, tick: _Tick) -> None:
        verdict, task = view.verdict, view.task
        flags = verdict.flags
        if not flags:
            return
        # Flags hold until the verdict's stable_until; the times used and the page line are read
        # as of this tick.
        budgets = verdict.budgets(tick.now)
        beat = view.heartbeat
        stage = beat.stage if beat and beat.stage else "-"
        stage_start = beat.stage_started_at if beat else task.started_at
        # A jump of the store's clock since the stage began is no time the stage ran.
        used = None
        if BudgetFlag.STAGE_OVERRUN in flags and budgets.stage.used_s is not None:
            jumped = 0.0 if stage_start is None else self.clocks.jumped_since(stage_start)
            used = budgets.stage.used_s - jumped
        if used is not None and used > budgets.stage.limit_s:
            key = f"stage:{task.task_id}:{task.attempt}:{stage}:{stage_start}"
            factor = self.config.watch.stage_kill_factor
            kill_at = factor * budgets.stage.limit_s
            if key not in self._once:
                then = (
                    f" - killed gracefully at {format_duration(kill_at)} in this stage"
                    if factor
                    else ""
                )
                await self._overrun(
                    tick, "stage_overrun", verdict.context(tick.now) + then, key, view
                )
            kill_key = "kill:" + key
            if factor and used >= kill_at and kill_key not in self._once and task.pid is not None:
                self._once.add(kill_key)
                reason = (
                    f"stage {stage} ran {format_age(used)}, "
                    f"{factor:g} x its {format_duration(budgets.stage.limit_s)} budget"
                )
                await self._record(
                    EventKind.WATCHDOG,
                    f"second stage overrun: killing {task.task_id}",
                    task.task_id,
                    {"key": kill_key},
                )
                await self._act(view, ActionKind.KILL, reason, tick)
        if BudgetFlag.REQUEST_OVERRUN in flags and beat is not None:
            key = f"request:{task.task_id}:{beat.request_name}:{beat.request_started_at}"
            if key not in self._once:
                await self._overrun(tick, "request_overrun", verdict.context(tick.now), key, view)
        if BudgetFlag.TASK_OVERRUN in flags:
            key = f"task:{task.task_id}:{task.attempt}"
            if key not in self._once:
                self._once.add(key)
                message = f"task overrun (logged, not killed): {verdict.context(tick.now)}"
                tick.logs.append(message)
                await self._record(EventKind.WATCHDOG, message, task.task_id, {"key": key})

    async def _digest(self, tick: _Tick) -> None:
        now = self.clock.now()
        if (
            self.book.last_digest_at is not None
            and now - self.book.last_digest_at < self.config.watch.digest_every
        ):
            return
        self.book.last_digest_at = now
        lines = sorted(self._spinning.values())
        message = f"digest: {len(lines)} spinning" + "".join(f"\n  {line}" for line in lines)
        tick.logs.append(message)
        await self._record(EventKind.WATCHDOG, message, None, {"digest": True, "spinning": lines})

    # The loop ------------------------------------------------------------------------------

    async def _drain(self, stop: asyncio.Event) -> None:
        """Before a ``--once`` run exits, give failed deliveries a bounded chance to land."""
        deadline = asyncio.get_running_loop().time() + ONCE_DELIVERY_WINDOW
        while self.outbox.pending and not stop.is_set():
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                self.log(
                    f"{self.outbox.pending} page deliveries not delivered yet; "
                    "giving up for this run (the store keeps them for the next one)"
                )
                return
            await self.outbox.wait(min(self.config.notify.retry_backoff, left, 5.0))
            await self.outbox.flush()

    async def _stop_if_replaced(self, stop: asyncio.Event) -> None:
        """A store deleted or replaced under us is never read again by this process: deliver
        the page about it, then stop (a supervisor restarting us opens what the path holds)."""
        try:
            self.store.check_path()
        except StoreReplaced:
            await self._drain(stop)
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
                    await self._drain(stop)
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
            await self.release()

    @property
    def _prunes(self) -> bool:
        return self.config.keep_finished > 0 and not self.dry_run

    async def _may_prune(self) -> bool:
        """Only the active watchdog prunes (a standby's store is the same store)."""
        return self._active is True

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
