"""``zombietop serve --metrics``: the ping server's own figures at ``/metrics`` on its port, so
a host runs one port, not two.

The labels are the ping's kind and the answer's status, never the job: a job name is untrusted
text of any length, and one label value per job would let a client grow the page without end.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST


class ServeMetrics:
    """Counters of the answered pings, by kind, and of every answer, by status."""

    def __init__(self, open_connections: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        self.pings = Counter(
            "zombietop_serve_pings",
            "Pings applied to the store, by kind (start, success, fail, log, beat, exit)",
            ["ping"],
            registry=self.registry,
        )
        self.answers = Counter(
            "zombietop_serve_answers",
            "Ping requests answered, by HTTP status (404: a wrong key or an unknown job; 429: "
            "over the rate limit; 413: a body too large; 503: the store too busy to apply it)",
            ["status"],
            registry=self.registry,
        )
        connections = Gauge(
            "zombietop_serve_open_connections",
            "Connections open now",
            registry=self.registry,
        )
        connections.set_function(lambda: float(open_connections()))

    def render(self) -> bytes:
        return generate_latest(self.registry)
