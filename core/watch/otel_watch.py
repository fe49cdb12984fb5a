"""The watchdog's part that tells an OpenTelemetry collector what it sees (``zombietop.otel``).

Each verdict change into or out of a health that pages, and each page, is a log record, in
the task's trace where it has one; each run that ends while the watchdog runs is a span, from
its claim to its end, with its stage changes, holds, kills and resumes as span events; each
look updates the metrics. Everything goes into bounded queues that other threads send: no
look waits for the collector.
"""

from __future__ import annotations

from collections import Counter

from zombietop.errors import StoreError
from zombietop.health import Health
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.model import EventKind, Task
from zombietop.otel.signals import RESULTS, page_record, run_attributes, run_span, verdict_record
from zombietop.otel.telemetry import Telemetry
from zombietop.page import Page, PageKind
from zombietop.watch.watchdog_hands import Hands

SPAN_EVENTS = (EventKind.QUARANTINED, EventKind.UNQUARANTINED, EventKind.ACTION)
"""The events of a task that become events of its run's span, beside its stage changes."""


class OtelWatch:
    """Turn what the watchdog sees into spans, log records and metrics."""

    def __init__(self, hands: Hands, telemetry: Telemetry, *, since: float) -> None:
        self.hands = hands
        self.telemetry = telemetry
        self.since = since
        """Runs that ended before the watchdog started are not sent (another one did)."""
        self._traced: dict[str, Task] = {}
        """By task id, the tasks of the current look that run in a trace."""
        self._sent: set[str] = set()
        """The runs whose span was sent."""
        hands.on_page = self.paged

    def begin(self, snapshot: Snapshot) -> None:
        """Know the tasks of this look that run in a trace, for the records of its pages."""
        self._traced = {
            view.task_id: view.task for view in snapshot.tasks if view.task.trace_id is not None
        }

    def verdict(self, view: TaskView, before: Health, now: float) -> None:
        """A log record of the task's verdict changing into or out of a health that pages."""
        codes = [reason.code for reason in view.verdict.reasons]
        line = f"{view.task_id} {before} -> {view.health}: {view.verdict.context(now)}"
        record = verdict_record(
            view.task, before, view.health, codes, line, now, self.telemetry.resource
        )
        self.telemetry.logs.offer(record)

    def paged(self, page: Page) -> None:
        """A log record of a page; an incident's first page measures the detection latency."""
        task = None if page.task_id is None else self._traced.get(page.task_id)
        self.telemetry.logs.offer(page_record(page, task, self.telemetry.resource))
        if page.kind is PageKind.INCIDENT and page.since is not None and page.health is not None:
            latency = max(page.at - page.since, 0.0)
            self.telemetry.latency.record(latency, {"zombietop.health": str(page.health)})

    async def looked(self, snapshot: Snapshot) -> None:
        """The metrics of this look, and the span of each run that ended since the last."""
        active: Counter[str] = Counter()
        hosts: set[str] = set()
        for view in snapshot.tasks:
            state = view.task.state
            if state.executing:
                active["executing"] += 1
                hosts.add(view.task.host or "")
            elif not state.finished:
                active["pending"] += 1
        self.telemetry.counted(snapshot.counts, active, len(hosts))
        for view in snapshot.tasks:
            task = view.task
            ended = task.finished_at
            if ended is None or ended < self.since or task.task_id in self._sent:
                continue
            self._sent.add(task.task_id)
            await self._ended(task)
        present = {view.task_id for view in snapshot.tasks}
        self._sent &= present

    async def _ended(self, task: Task) -> None:
        """Send the run's span and record its duration."""
        assert task.finished_at is not None
        if task.state in RESULTS:
            took = max(task.finished_at - (task.claimed_at or task.created_at), 0.0)
            attributes = {
                key: value
                for key, value in run_attributes(task).items()
                if key in ("cicd.pipeline.name", "cicd.pipeline.result")
            }
            self.telemetry.duration.record(took, attributes)
        if task.trace_id is None:
            return
        events = await self._events(task)
        span = run_span(task, events, self.telemetry.resource)
        if span is not None:
            self.telemetry.spans.offer(span)

    async def _events(self, task: Task) -> list[tuple[str, float, dict[str, str]]]:
        """The run's stage changes, holds, kills and resumes, oldest first."""
        store = self.hands.store
        try:
            history = await store.heartbeat_history(task.task_id)
            logged = await store.events_of_tasks([task.task_id], list(SPAN_EVENTS))
        except StoreError:
            return []  # the span goes without its events rather than not at all
        events: list[tuple[str, float, dict[str, str]]] = []
        stage = None
        for point in history:
            if point.stage is not None and point.stage != stage:
                stage = point.stage
                events.append(("stage", point.written_at, {"zombietop.stage": stage}))
        for event in logged:
            name = str(event.data.get("action") or event.kind)
            events.append((name, event.at, {"zombietop.actor": event.actor}))
        return sorted(events, key=lambda item: item[1])
