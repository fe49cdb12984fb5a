"""What the watchdog sends to an OpenTelemetry collector, put together: the exporters, a
bounded queue each for spans and log records, and the metrics.

Metrics follow the CI/CD semantic conventions where they fit (``cicd.pipeline.run.duration``,
``cicd.pipeline.run.active``, ``cicd.worker.count``), beside zombietop's own (``zombietop.tasks``
by health, ``zombietop.detection.latency``). The SDK's metric reader sends them from a thread
of its own every ``[otel] metrics_interval``.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Mapping, Sequence

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from zombietop import __version__
from zombietop.config import OtelSettings
from zombietop.health import Health
from zombietop.otel.queues import SignalQueue


def _at(endpoint: str | None, signal: str) -> str | None:
    """``http://host:4318/v1/traces``; None lets the exporter read the standard variables."""
    return None if endpoint is None else f"{endpoint}/v1/{signal}"


EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http"
"""The OTLP/HTTP exporters' logger: each retry of an unreachable collector is a WARNING there,
a line a second in the watchdog's log; what was given up shows in
``zombietop_otel_dropped_total`` instead, and a batch given up is still logged (ERROR)."""


class Telemetry:
    """The exporters, their queues and the meters of one watchdog."""

    def __init__(self, settings: OtelSettings) -> None:
        logging.getLogger(EXPORTER_LOGGER).setLevel(logging.ERROR)
        self.resource = Resource.create(
            {
                "service.name": "zombietop",
                "service.version": __version__,
                "host.name": socket.gethostname(),
            }
        )
        timeout = settings.timeout
        spans = OTLPSpanExporter(endpoint=_at(settings.endpoint, "traces"), timeout=timeout)
        logs = OTLPLogExporter(endpoint=_at(settings.endpoint, "logs"), timeout=timeout)
        self.spans: SignalQueue[ReadableSpan] = SignalQueue(
            "spans",
            lambda batch: spans.export(batch) is SpanExportResult.SUCCESS,
            size=settings.queue_size,
        )
        self.logs: SignalQueue[ReadableLogRecord] = SignalQueue(
            "logs",
            lambda batch: logs.export(batch) is LogRecordExportResult.SUCCESS,
            size=settings.queue_size,
        )
        self._span_exporter, self._log_exporter = spans, logs
        self.reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=_at(settings.endpoint, "metrics"), timeout=timeout),
            export_interval_millis=settings.metrics_interval * 1000,
            export_timeout_millis=timeout * 1000,
        )
        self.meters = MeterProvider(resource=self.resource, metric_readers=[self.reader])
        meter = self.meters.get_meter("zombietop", __version__)
        self._counts: dict[Health, int] = {}
        self._active: dict[str, int] = {}
        self._workers = 0
        meter.create_observable_gauge(
            "zombietop.tasks", [self._tasks], unit="{task}", description="Tasks by health."
        )
        meter.create_observable_up_down_counter(
            "cicd.pipeline.run.active",
            [self._runs],
            unit="{run}",
            description="Runs not finished, by state (executing, pending).",
        )
        meter.create_observable_up_down_counter(
            "cicd.worker.count",
            [self._hosts],
            unit="{count}",
            description="Hosts with a run executing.",
        )
        self.duration = meter.create_histogram(
            "cicd.pipeline.run.duration", unit="s", description="How long a run took."
        )
        self.latency = meter.create_histogram(
            "zombietop.detection.latency",
            unit="s",
            description="From a task's last sign of progress to its incident's first page.",
        )

    def counted(
        self, counts: Mapping[Health, int], active: Mapping[str, int], workers: int
    ) -> None:
        """Take the counts of one look, for the next export of the metrics."""
        self._counts, self._active, self._workers = dict(counts), dict(active), workers

    def _tasks(self, options: CallbackOptions) -> Sequence[Observation]:
        return [Observation(n, {"zombietop.health": str(h)}) for h, n in self._counts.items()]

    def _runs(self, options: CallbackOptions) -> Sequence[Observation]:
        return [Observation(n, {"cicd.pipeline.run.state": s}) for s, n in self._active.items()]

    def _hosts(self, options: CallbackOptions) -> Sequence[Observation]:
        return [Observation(self._workers)]

    def dropped(self) -> dict[str, int]:
        """By signal, the items dropped because their queue was full or the collector
        refused them."""
        return {
            "spans": self.spans.dropped + self.spans.failed,
            "logs": self.logs.dropped + self.logs.failed,
        }

    def flush(self, timeout: float) -> None:
        """Send what waits, within about ``timeout`` (for a ``--once`` run, and tests)."""
        self.spans.flush(timeout)
        self.logs.flush(timeout)
        self.meters.force_flush(int(timeout * 1000))

    def close(self, timeout: float) -> None:
        """Send what waits within ``timeout``; whatever is left is given up."""
        self.spans.close(timeout)
        self.logs.close(timeout)
        # The exporters' shutdown() carries no annotations upstream (1.45).
        self._span_exporter.shutdown()  # type: ignore[no-untyped-call]
        self._log_exporter.shutdown()  # type: ignore[no-untyped-call]
        self.meters.shutdown(timeout_millis=timeout * 1000)
