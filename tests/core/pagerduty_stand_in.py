"""A stand-in for PagerDuty's Events API v2 on loopback: it checks every body against the
published schema (``pagerduty_events_v2.schema.json``), answers as PagerDuty does (202, or
400 for a body it cannot take), and keeps what it was sent. A test can plan the next answers
(``answers``: 500 then 202), as PagerDuty's bad minutes would give them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = json.loads((Path(__file__).with_name("pagerduty_events_v2.schema.json")).read_text())
ROUTING_KEY = "R0ut1ngKey0f32LettersAndDigits00"


@dataclass
class Received:
    event: dict[str, Any]
    status: int
    errors: list[str]
    """What the schema found wrong with the body (empty: a body PagerDuty takes)."""


@dataclass
class StandIn:
    url: str
    received: list[Received] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    """Statuses to answer with, first to last, before the plain 202s."""
    arrived: threading.Condition = field(default_factory=threading.Condition)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The bodies PagerDuty accepted (202), in order."""
        return [r.event for r in self.received if r.status == 202]

    def actions(self) -> list[tuple[str, str]]:
        return [(e["event_action"], e.get("dedup_key", "")) for e in self.events]

    def wait(self, count: int, timeout: float = 20.0) -> None:
        """Wait until ``count`` requests came in (of any answer)."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.received) >= count, timeout):
                raise AssertionError(f"{len(self.received)} of {count} events arrived")


def _handler(stand_in: StandIn) -> type[BaseHTTPRequestHandler]:
    validator = jsonschema.Draft202012Validator(
        SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                event = json.loads(body)
                errors = [error.message for error in validator.iter_errors(event)]
            except ValueError as exc:
                event, errors = {}, [f"not JSON: {exc}"]
            with stand_in.arrived:
                planned = stand_in.answers.pop(0) if stand_in.answers else None
                status = planned or (400 if errors else 202)
                stand_in.received.append(Received(event=event, status=status, errors=errors))
                stand_in.arrived.notify_all()
            if status == 202:
                answer = {"status": "success", "message": "Event processed",
                          "dedup_key": event.get("dedup_key", "")}  # fmt: skip
            else:
                # What a careless proxy might do: echo the body (and so the key) back.
                answer = {"status": "invalid event", "message": body.decode(errors="replace")}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def pagerduty(port: int) -> Iterator[StandIn]:
    stand_in = StandIn(url=f"http://127.0.0.1:{port}/v2/enqueue")
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(stand_in))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
