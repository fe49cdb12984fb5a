"""Channel secrets never reach a log or an event, and a webhook URL with userinfo is sent with
HTTP basic auth, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from tests.core.test_watchdog import config, start
from zombietop.clock import FakeClock
from zombietop.config import ConfigError, load_config
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind
from zombietop.paging.notify import AppriseNotifier, WebhookNotifier
from zombietop.redact import redact_url
from zombietop.store import Store
from zombietop.watch.watchdog import Watchdog

SECRET = "xoxb-S3CRET-token"
PASSWORD = "p@ss:w0rd"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"https://hooks.slack.com/services/T0/B0/{SECRET}", "https://hooks.slack.com"),
        (
            f"https://u:{PASSWORD}@hooks.example.com:8443/x?token={SECRET}",
            "https://hooks.example.com:8443",
        ),
        (f"http://127.0.0.1:9/hook?k={SECRET}#frag", "http://127.0.0.1:9"),
        (f"http://[::1]:81/{SECRET}", "http://[::1]:81"),
        (f"pagerduty://{SECRET}@ROUTINGKEY", "pagerduty://***"),
        (f"tgram://{SECRET}/12345", "tgram://***"),
        (f"mailto://user:{PASSWORD}@example.com", "mailto://example.com"),
        (f"json://localhost:8080/{SECRET}", "json://localhost:8080"),
        ("https://host:notaport/x", "https://***"),
    ],
)
def test_a_channel_is_named_by_scheme_host_and_port_only(url: str, shown: str) -> None:
    assert redact_url(url) == shown


class _Hook(BaseHTTPRequestHandler):
    expected: str | None = None
    received: list[tuple[str | None, dict[str, object]]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization")
        type(self).received.append((auth, body))
        self.send_response(200 if auth == type(self).expected else 401)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[tuple[int, type[_Hook]]]:
    expected = "Basic " + base64.b64encode(f"robot:{PASSWORD}".encode()).decode()
    handler = type("Hook", (_Hook,), {"received": [], "expected": expected})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server.server_address[1], handler
    finally:
        server.shutdown()
        server.server_close()


async def test_userinfo_is_sent_as_basic_auth_and_never_logged_or_stored(
    store: Store, clock: FakeClock, hook: tuple[int, type[_Hook]]
) -> None:
    port, handler = hook
    quoted = PASSWORD.replace("@", "%40").replace(":", "%3A")
    url = f"http://robot:{quoted}@127.0.0.1:{port}/services/T/B/{SECRET}?k={SECRET}"
    logs: list[str] = []
    cfg = config()
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, reuse_verdicts=True),
        cfg,
        executor=None,
        notifiers=[WebhookNotifier(url, timeout=5)],
        clock=clock,
        log=logs.append,
    )
    await start(store, "a", ttl=60)
    clock.advance(200)
    report = await dog.tick()
    deliveries = [*report.deliveries, *await dog.outbox.settle()]
    assert [d.ok for d in deliveries] == [True], deliveries
    assert [auth for auth, _ in handler.received] == [handler.expected]
    assert handler.received[0][1]["task_id"] == "a"
    events = await store.events(kind=EventKind.DELIVERY, limit=10)
    assert events and events[0].data["notifier"] == f"webhook http://127.0.0.1:{port}"
    said = "\n".join([*logs, *(e.message + json.dumps(e.data) for e in events)])
    for secret in (SECRET, PASSWORD, quoted, "robot", "/services"):
        assert secret not in said


async def test_a_failed_delivery_names_the_channel_without_its_secrets(
    store: Store, clock: FakeClock, hook: tuple[int, type[_Hook]]
) -> None:
    port, _ = hook
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    urls = [
        f"http://robot:wrong{SECRET}@127.0.0.1:{port}/hook/{SECRET}",  # 401: wrong password
        f"http://robot:{SECRET}@127.0.0.1:{dead}/hook/{SECRET}",  # connection refused
    ]
    logs: list[str] = []
    cfg = config()
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, reuse_verdicts=True),
        cfg,
        executor=None,
        notifiers=[WebhookNotifier(u, timeout=5) for u in urls],
        clock=clock,
        log=logs.append,
    )
    await start(store, "a", ttl=60)
    clock.advance(200)
    report = await dog.tick()
    deliveries = sorted(
        [*report.deliveries, *await dog.outbox.settle()], key=lambda d: "refused" in (d.error or "")
    )
    assert [d.ok for d in deliveries] == [False, False]
    assert "HTTP 401" in (deliveries[0].error or "")
    assert "refused" in (deliveries[1].error or "")
    events = await store.events(kind=EventKind.DELIVERY, limit=10)
    said = "\n".join([*logs, *(d.error or "" for d in deliveries)])
    said += "\n".join(e.message + json.dumps(e.data) for e in events)
    assert f"webhook http://127.0.0.1:{port}" in said
    assert SECRET not in said and "robot" not in said


def test_apprise_channels_are_named_without_their_keys() -> None:
    pytest.importorskip("apprise")
    notifier = AppriseNotifier([f"pagerduty://{SECRET}@ROUTINGKEY123", "json://localhost/x"])
    assert notifier.name == "apprise pagerduty://***, json://localhost"


def test_a_bad_webhook_in_the_config_is_named_without_its_secret(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f'[notify]\nwebhook = "ftp://u:{PASSWORD}@files.example.com/{SECRET}"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "ftp://files.example.com" in str(caught.value)
    assert SECRET not in str(caught.value) and PASSWORD not in str(caught.value)
