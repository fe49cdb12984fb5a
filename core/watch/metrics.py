"""What zombietop tells Prometheus: the fleet by health, each live task, pages and polls.

The per-task series are read from the latest snapshot each time they are collected, so they
follow the live fleet: a task that finishes (or leaves the store) is absent from the next scrape,
and nothing has to remember to remove its series. While the store cannot be read, only
``zombietop_store_up 0`` and the watchdog's own figures are exported, as an exporter does when
its backend is down: never verdicts that have gone stale.

Label values (task ids, hosts, stages) are untrusted text; the exposition format escapes what
it must (backslash, double quote, newline) and a parser reads them back exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from zombietop.errors import ZombietopError
from zombietop.health import Health
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.paging.notify import DeliveryResult
from zombietop.paging.runbooks import runbook_for
from zombietop.private import replace_file

TASK_LABELS = ("task_id", "step_type", "host")
TEXTFILE_MODE = 0o644
"""node_exporter reads the textfile as a user of its own; only we may write it."""
POLL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: a poll of a small store takes milliseconds, one that lags past the default 30s
interval makes the watchdog withhold its verdicts."""
JOB_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0)
"""Seconds: a job's runs take from seconds (a small copy) to hours (a nightly export)."""
OTEL_SIGNALS = ("spans", "logs")
"""The signals whose drops ``zombietop_otel_dropped_total`` counts."""
RESULTS = ("delivered", "retrying", "failed")
"""``zombietop_pages_total{result}``: landed; failed with attempts left; failed for good."""


def delivery_result(result: DeliveryResult) -> str:
    """The ``result`` label of one delivery attempt."""
    if result.ok:
        return "delivered"
    return "failed" if result.final else "retrying"


@dataclass(frozen=True, slots=True)
class _Latest:
    snapshot: Snapshot | None
    incidents_open: int


class Metrics:
    """The zombietop metrics of one process, in a registry of their own.

    ``update`` is called on the watchdog's loop after each look and only swaps a reference and
    counts; the work of a scrape (a series per live task) happens in ``collect``, on the thread
    of whoever scrapes.
    """

    def __init__(self, channels: Sequence[str] = ()) -> None:
        self.registry = CollectorRegistry()
        self._latest = _Latest(snapshot=None, incidents_open=0)
        self._pages = Counter(
            "zombietop_pages",
            "Page deliveries attempted, by channel kind and result "
            "(delivered, retrying: failed with attempts left, failed: given up).",
            ["channel", "result"],
            registry=self.registry,
        )
        # Every configured channel exports its zeros from the start, so increase() sees the
        # first failure.
        for channel in channels:
            for result in RESULTS:
                self._pages.labels(channel=channel, result=result)
        self._poll = Histogram(
            "zombietop_poll_seconds",
            "Seconds one look at the store took (successful polls).",
            buckets=POLL_BUCKETS,
            registry=self.registry,
        )
        self.otel_dropped: Callable[[], Mapping[str, int]] | None = None
        """By signal, what OpenTelemetry export dropped (``Telemetry.dropped``); None: off."""
        self.registry.register(_FleetCollector(self))

    def update(
        self,
        snapshot: Snapshot,
        *,
        incidents_open: int,
        deliveries: Iterable[DeliveryResult] = (),
    ) -> None:
        """Take in one look: its snapshot, the incidents open after it, the deliveries it made."""
        if snapshot.ok and snapshot.taken_at is not None:
            self._poll.observe(snapshot.poll_seconds)
        for result in deliveries:
            self._pages.labels(channel=result.channel, result=delivery_result(result)).inc()
        # One reference, replaced whole: a scrape on another thread sees one look or the next.
        self._latest = _Latest(snapshot=snapshot, incidents_open=incidents_open)

    @property
    def latest(self) -> tuple[Snapshot | None, int]:
        latest = self._latest
        return latest.snapshot, latest.incidents_open

    def render(self) -> bytes:
        """The Prometheus text format, as ``/metrics`` serves it."""
        return generate_latest(self.registry)

    def write_textfile(self, path: Path) -> None:
        """Write the text format to ``path`` atomically, for node_exporter's textfile collector
        (a new file beside it, renamed over it: the collector never reads half a file).

        The folder is node_exporter's, so the new file is made as zombietop makes its private
        ones: a random name opened with ``O_EXCL | O_NOFOLLOW``, never a name another user of
        the folder could have planted a link at.
        """
        try:
            replace_file(path, self.render(), mode=TEXTFILE_MODE)
        except OSError as exc:
            raise ZombietopError(
                f"cannot write metrics to {path}: {exc.strerror or exc}; "
                "check that its directory exists and is writable"
            ) from None


class _FleetCollector(Collector):
    """The series read from the latest snapshot at each collection."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        snapshot, incidents_open = self.metrics.latest
        up = snapshot is not None and snapshot.ok and snapshot.taken_at is not None
        yield GaugeMetricFamily(
            "zombietop_store_up",
            "1 when the latest look at the store succeeded, 0 when it could not be read.",
            value=1 if up else 0,
        )
        yield GaugeMetricFamily(
            "zombietop_incidents_open",
            "Incidents open (dead, stalled, reclaimable tasks and failed runs, paged and not yet "
            "all-clear).",
            value=incidents_open,
        )
        dropped = CounterMetricFamily(
            "zombietop_otel_dropped",
            "Spans and log records OpenTelemetry export gave up, by signal: its queue was "
            "full ([otel] queue_size) or the collector refused them (0 with export off).",
            labels=["signal"],
        )
        counts = self.metrics.otel_dropped() if self.metrics.otel_dropped else {}
        for signal in OTEL_SIGNALS:
            dropped.add_metric([signal], counts.get(signal, 0))
        yield dropped
        if not up or snapshot is None or snapshot.taken_at is None:
            return
        yield from fleet_families(snapshot, snapshot.taken_at)


def fleet_families(snapshot: Snapshot, now: float) -> Iterator[Metric]:
    """The task counts by health (the quiet tasks a poll counted without reading among them),
    the tasks left unread, and the series of every unfinished task, ages as of ``now``."""
    tasks = GaugeMetricFamily(
        "zombietop_tasks", "Tasks by health (finished ones within the window).", labels=["health"]
    )
    for health in Health:
        tasks.add_metric([str(health)], snapshot.counts.get(health, 0))
    # A schedule whose run never started has no task to count: DESIGN.md's `missed` stands
    # beside the task healths all the same, so one alert rule can page on either.
    tasks.add_metric(["missed"], snapshot.missed)
    yield tasks
    yield GaugeMetricFamily(
        "zombietop_tasks_unread",
        "Active tasks the latest poll did not read: past [monitor] read_at_most and not proven "
        "quiet, so neither judged nor paged nor in zombietop_tasks (0 when every task was read).",
        value=snapshot.left_unread,
    )

    labels = list(TASK_LABELS)
    age = GaugeMetricFamily(
        "zombietop_task_heartbeat_age_seconds",
        "Seconds since the task's latest heartbeat.",
        labels=labels,
    )
    lease = GaugeMetricFamily(
        "zombietop_task_lease_remaining_seconds",
        "Seconds until the task's lease expires; negative once it has.",
        labels=labels,
    )
    progress = GaugeMetricFamily(
        "zombietop_task_progress_ratio",
        "The task's reported progress, 0 to 1.",
        labels=labels,
    )
    info = InfoMetricFamily(
        "zombietop_task",
        "One series per unfinished task, with its health, stage and runbook link.",
        labels=labels,
    )
    for view in snapshot.tasks:
        if view.task.state.finished:
            continue
        key = _task_labels(view)
        beat = view.heartbeat
        if beat is not None:
            age.add_metric(key, now - beat.written_at)
            if beat.progress is not None:
                progress.add_metric(key, min(max(beat.progress / 100, 0.0), 1.0))
        held = view.lease
        if held is not None and held.held and held.expires_at is not None:
            lease.add_metric(key, held.expires_at - now)
        stage = beat.stage if beat is not None and beat.stage else ""
        runbook = runbook_for(view) or ""
        info.add_metric(key, {"health": str(view.health), "stage": stage, "runbook_url": runbook})
    yield from (age, lease, progress, info)
    yield from job_families(snapshot)


def job_families(snapshot: Snapshot) -> Iterator[Metric]:
    """Each job's latest successful durations (its summary's window) and its last success."""
    durations = HistogramMetricFamily(
        "zombietop_job_duration_seconds",
        "How long the job's latest successful runs took.",
        labels=["job"],
    )
    last = GaugeMetricFamily(
        "zombietop_job_last_success_timestamp_seconds",
        "When the job's latest successful run ended, in Unix time.",
        labels=["job"],
    )
    for name in sorted(snapshot.jobs):
        summary = snapshot.jobs[name]
        if summary.durations:
            buckets = [
                (f"{edge:g}", float(sum(1 for d in summary.durations if d <= edge)))
                for edge in JOB_BUCKETS
            ]
            buckets.append(("+Inf", float(len(summary.durations))))
            durations.add_metric([name], buckets, sum_value=sum(summary.durations))
        if summary.last_success_at is not None:
            last.add_metric([name], summary.last_success_at)
    yield from (durations, last)


def _task_labels(view: TaskView) -> list[str]:
    task = view.task
    return [task.task_id, task.step_type, task.host or ""]
