"""What the watchdog's parts act with, and what one look of the watchdog has done so far.

For the words look and hands, see docs/glossary.md. ``Look`` gathers what one look does as it
goes: the pages it queued, the lines it will log, the actions it took. ``Hands`` is how every
part of the watchdog records an event, queues a page or runs an action, all in the same way. A
dry run records nothing and changes nothing; its pages are shown instead of sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zombietop.actions import ActionExecutor, ActionKind, ActionOutcome, ActionRequest
from zombietop.clock import Clock
from zombietop.config import NotifySettings
from zombietop.errors import StoreError
from zombietop.health import Health, ScheduleHealth
from zombietop.job_summary import JobSummary
from zombietop.judge.monitor import Monitor, TaskView
from zombietop.model import EventKind
from zombietop.oncall.acks import OnCall
from zombietop.page import PageKind
from zombietop.paging.notify import DeliveryResult, LogNotifier, Notifier, Outbox, Page
from zombietop.paging.runbooks import runbook_for
from zombietop.sources import Origin
from zombietop.trace_context import trace_of
from zombietop.watch.root_causes import RootCauses


@dataclass(slots=True)
class Look:
    """What one look has done so far; the watchdog logs it and reports it when the look ends."""

    now: float = 0.0
    """The snapshot's moment: ages in what this look says are as of then."""
    pages: list[Page] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    actions: list[ActionOutcome] = field(default_factory=list)
    oncall: OnCall = field(default_factory=lambda: OnCall(at=0.0))
    """The acks and silences in force as of this look's snapshot."""
    told: bool = False
    """Why verdicts are withheld was said already in this look."""
    jobs: Mapping[str, JobSummary] = field(default_factory=dict)
    """The job summaries as of this look's snapshot: whether a failed run is still open."""
    causes: RootCauses = field(default_factory=RootCauses)
    """Which tasks wait behind which (empty with ``[watch] group_by_upstream = false``)."""
    _contexts: dict[str, str] = field(default_factory=dict)
    """Each task's page line as composed once in this look (``context``)."""

    def context(self, view: TaskView) -> str:
        """The task's page line as of this look (``Verdict.context``): composed once, though
        an incident, an overrun and a spin may each quote it."""
        line = self._contexts.get(view.task_id)
        if line is None:
            line = self._contexts[view.task_id] = view.verdict.context(self.now)
        return line


def since(view: TaskView) -> float | None:
    """When the task last showed progress: its last beat, else its start."""
    beat = view.heartbeat
    return beat.written_at if beat is not None else view.task.started_at


class Hands:
    """Record events, queue pages and run actions on behalf of the watchdog's parts."""

    def __init__(
        self,
        monitor: Monitor,
        *,
        executor: ActionExecutor | None,
        notifiers: Sequence[Notifier],
        settings: NotifySettings,
        clock: Clock,
        actor: str,
        dry_run: bool,
        log: Callable[[str], None],
    ) -> None:
        self.monitor = monitor
        self.store = monitor.store
        self.executor = executor
        self.clock = clock
        self.actor = actor
        self.dry_run = dry_run
        self.log = log
        self.outbox = Outbox(
            [LogNotifier.dry_run(log)] if dry_run else notifiers,
            settings,
            clock,
            on_result=self.delivered,
            keeper=None if dry_run else self.store,
            log=log,
        )
        self.on_page: Callable[[Page], None] | None = None
        """Told of every page queued (``otel_watch``: a log record of it)."""

    def origin_of(self, task_id: str) -> Origin | None:
        """Where a task comes from when an engine's database holds it (a read-only source), as
        of the last poll; None for a task of zombietop's own store."""
        return self.monitor.last.origins.get(task_id)

    async def record(
        self, kind: EventKind, message: str, task_id: str | None, data: dict[str, Any]
    ) -> None:
        """Write an event to the store's log; a write that fails is logged, never raised."""
        if self.dry_run:
            return
        try:
            await self.store.record_event(
                kind=kind, actor=self.actor, message=message, task_id=task_id, data=data
            )
        except StoreError as exc:
            self.log(f"could not record event ({exc}): {message}")

    async def delivered(self, result: DeliveryResult) -> None:
        """Log and record how one delivery attempt of a page went."""
        tasks = {"tasks": list(result.page.tasks)} if result.page.tasks else {}
        if result.ok:
            if result.attempts > 1:
                self.log(
                    f"delivered via {result.notifier} on attempt {result.attempts}: "
                    f"{result.page.shown}"
                )
            await self.record(
                EventKind.DELIVERY,
                f"delivered via {result.notifier} (attempt {result.attempts})",
                result.page.task_id,
                {"ok": True, "notifier": result.notifier, "attempts": result.attempts, **tasks},
            )
            return
        then = "giving up" if result.final else "will retry"
        self.log(f"delivery failed ({then}): {result.error}")
        await self.record(
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

    def page(
        self,
        look: Look,
        kind: PageKind,
        line: str,
        *,
        view: TaskView | None = None,
        health: Health | None = None,
        incident: str | None = None,
    ) -> Page:
        """Queue a page; ``health`` is the one its line speaks of (the view's by default),
        ``incident`` the incident it opens, follows or ends (``zombietop.page.incident_key``)."""
        health = health or (view.health if view else None)
        runbook = runbook_for(view) if view is not None and kind is not PageKind.ALL_CLEAR else None
        if runbook is not None:
            line = f"{line} runbook: {runbook}"  # the last field: what to do
        trace_id = trace_of(view.task, view.heartbeat) if view is not None else None
        page = Page(
            kind=kind,
            line=line,
            task_id=view.task_id if view else None,
            health=health,
            host=view.task.host if view else None,
            since=since(view) if view else None,
            at=self.clock.now(),
            incident=incident,
            runbook=runbook,
            trace_id=trace_id,
            trace_url=None if trace_id is None else self.monitor.config.otel.link(trace_id),
        )
        self._queue(look, page)
        return page

    def page_schedule(self, look: Look, kind: PageKind, line: str, *, incident: str) -> None:
        """Queue a page about a schedule: its miss, a later notice of it, or its all-clear."""
        page = Page(
            kind=kind,
            line=line,
            health=ScheduleHealth.MISSED,
            at=self.clock.now(),
            incident=incident,
        )
        self._queue(look, page)

    def page_ack(self, look: Look, line: str, *, task_id: str, incident: str) -> None:
        """Queue the word that a human acked an incident, for the channels that keep incidents
        (``Notifier.keeps_incidents``); the others never hear of it."""
        page = Page(
            kind=PageKind.ACKNOWLEDGED,
            line=line,
            task_id=task_id,
            at=self.clock.now(),
            incident=incident,
        )
        self._queue(look, page)

    def _queue(self, look: Look, page: Page) -> None:
        """The page is this look's, and the outbox's to deliver."""
        look.pages.append(page)
        self.outbox.put(page)
        if self.on_page is not None:
            self.on_page(page)

    async def act(
        self, view: TaskView, kind: ActionKind, reason: str, look: Look
    ) -> ActionOutcome | None:
        """Run an action through the executor; None when it was not run (a dry run, no
        executor, or a task an engine runs: zombietop acts on those only when a human asks)."""
        if self.dry_run or self.executor is None:
            look.logs.append(f"would {kind} {view.task_id}: {reason}")
            return None
        origin = self.origin_of(view.task_id)
        if origin is not None:
            look.logs.append(f"not {kind}: {view.task_id} is {origin.kind}'s ({reason})")
            return None
        request = ActionRequest(
            kind=kind,
            task_id=view.task_id,
            expected_token=view.token,
            actor=self.actor,
            reason=reason,
        )
        outcome = await self.executor.run(request)
        look.actions.append(outcome)
        look.logs.append(f"{kind} {view.task_id}: {outcome.message}")
        return outcome
