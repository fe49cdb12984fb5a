"""A loopback OTLP/HTTP receiver for the tests: it keeps each request it is sent, decoded with
opentelemetry-proto, and answers as a collector does."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

REQUESTS: dict[str, Any] = {
    "/v1/traces": ExportTraceServiceRequest,
    "/v1/logs": ExportLogsServiceRequest,
    "/v1/metrics": ExportMetricsServiceRequest,
}


class Receiver(ThreadingHTTPServer):
    """Collects the decoded requests by path; ``wait`` blocks until one arrives."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: dict[str, list[Any]] = {path: [] for path in REQUESTS}
        self.arrived = threading.Condition()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def keep(self, path: str, message: Any) -> None:
        with self.arrived:
            self.received[path].append(message)
            self.arrived.notify_all()

    def spans(self) -> Iterator[Any]:
        for request in self.received["/v1/traces"]:
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    yield from scope.spans

    def logs(self) -> Iterator[Any]:
        for request in self.received["/v1/logs"]:
            for resource in request.resource_logs:
                for scope in resource.scope_logs:
                    yield from scope.log_records

    def metric_names(self) -> set[str]:
        return {
            metric.name
            for request in self.received["/v1/metrics"]
            for resource in request.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        kind = REQUESTS.get(self.path)
        if kind is None:
            self.send_response(404)
            self.end_headers()
            return
        message = kind()
        message.ParseFromString(body)
        self.server.keep(self.path, message)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass  # the test's output is the test's
