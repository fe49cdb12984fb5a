"""OpenTelemetry out: the watchdog's spans, log records and metrics, sent over OTLP/HTTP.

An optional part (``zombietop[otel]``), turned on by ``[otel] endpoint`` or the standard
``OTEL_EXPORTER_OTLP_*`` variables. ``queues`` holds what waits to be sent, bounded, on a
thread of its own, so a collector that hangs delays no look; ``signals`` makes a run's span
and the log records of verdicts and pages; ``telemetry`` puts them together for the watchdog,
with the metrics. Only the watchdog loads this wing: never the job's side.
"""
