"""Signals out: with [otel] endpoint set, the watchdog sends a span per run (claim to end,
linked to the run's trace, its command's spans below it), a log record per verdict change and
page, and metrics, to a loopback OTLP/HTTP receiver that decodes them with opentelemetry-proto;
a collector that accepts and never answers delays no look (as a hung pager does not)."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.otlp_receiver import Receiver
from tests.core.realprocs import FAST_CONFIG, zombietop
from tests.core.test_watchdog import config, start, watchdog
from zombietop.clock import FakeClock
from zombietop.config import Config, OtelSettings, load_config
from zombietop.errors import ConfigError
from zombietop.heartbeat_line import parse_line
from zombietop.procs import read_start
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.trace_context import TRACEPARENT, TraceContext

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    server.thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _attributes(item: object) -> dict[str, object]:
    found: dict[str, object] = {}
    for pair in item.attributes:  # type: ignore[attr-defined]
        value = pair.value
        kind = value.WhichOneof("value")
        found[pair.key] = (
            list(v.string_value for v in value.array_value.values)
            if kind == "array_value"
            else getattr(value, kind)
        )
    return found


async def _real_now(db: Path) -> float:
    store = await SQLiteStore.open(db)
    try:
        return await store.now()
    finally:
        await store.close()


async def test_a_wrapped_runs_span_reaches_the_collector_in_its_trace(
    db: Path, tmp_path: Path, receiver: Receiver
) -> None:
    path = tmp_path / "otel.toml"
    path.write_text(FAST_CONFIG + f'\n[otel]\nendpoint = "{receiver.endpoint}"\n')
    cfg = load_config(path)
    # A first run makes the store; the watchdog starts; then the run it sees end.
    subprocess.run(zombietop(db, path, "run", "--job", "warmup", "--", "true"), check=True)
    clock = FakeClock(await _real_now(db))
    store = await SQLiteStore.open(db, clock=clock)
    try:
        dog, _, _ = watchdog(store, clock, cfg)
        assert dog.otel is not None
        done = subprocess.run(
            zombietop(db, path, "run", "--job", "traced", "--", "sh", "-c", 'echo "$TRACEPARENT"'),
            env={**os.environ, TRACEPARENT: f"00-{TRACE}-{PARENT}-01"},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        _, child_trace, run_span, _ = done.stdout.strip().split("-")
        clock.set(await _real_now(db))
        await dog.tick()
        dog.otel.telemetry.flush(30)
    finally:
        await store.close()
        dog.otel.telemetry.close(5)
    [span] = [s for s in receiver.spans() if s.trace_id.hex() == TRACE]
    assert child_trace == TRACE
    assert (span.span_id.hex(), span.parent_span_id.hex()) == (run_span, PARENT)
    assert span.name == "run traced" and span.end_time_unix_nano > span.start_time_unix_nano
    attributes = _attributes(span)
    assert attributes["cicd.pipeline.name"] == "traced"
    assert attributes["cicd.pipeline.result"] == "success"
    assert attributes["process.exit.code"] == 0 and attributes["zombietop.attempts"] == 1
    assert "cicd.pipeline.run.duration" in receiver.metric_names()


def _otel(endpoint: str, **more: object) -> Config:
    base = config()
    return replace(base, otel=OtelSettings(endpoint=endpoint, **more))  # type: ignore[arg-type]


async def _traced_task(store: Store, task_id: str) -> tuple[int, TraceContext]:
    token = await start(store, task_id, ttl=3600)
    trace = TraceContext(trace_id=TRACE, span_id="1111111111111111", parent_id=PARENT)
    began = read_start(os.getpid())
    assert began is not None
    await store.set_process(
        task_id,
        owner="w1",
        token=token,
        pid=os.getpid(),
        pid_start_time=began.time,
        pid_start_identity=began.identity,
        host=socket.gethostname(),
        trace=trace,
    )
    return token, trace


async def test_a_stall_and_its_page_are_log_records_in_the_tasks_trace(
    store: Store, clock: FakeClock, receiver: Receiver
) -> None:
    token, _ = await _traced_task(store, "export-2031")
    dog, notifier, _ = watchdog(store, clock, _otel(receiver.endpoint))
    assert dog.otel is not None
    await dog.tick()
    clock.advance(200)  # past the 2m heartbeat timeout
    await dog.tick()
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=70"), owner="w1", token=token
    )
    clock.advance(5)
    await dog.tick()
    dog.otel.telemetry.flush(30)
    dog.otel.telemetry.close(5)
    assert [page.kind for page in notifier.pages] == ["incident", "all_clear"]
    records = [(_attributes(r), r) for r in receiver.logs()]
    verdicts = [(a, r) for a, r in records if a["zombietop.event"] == "verdict"]
    pages = [(a, r) for a, r in records if a["zombietop.event"] == "page"]
    # Beating again, it reads quarantined in that look, until the watchdog lets go of its hold.
    assert [a["zombietop.health"] for a, _ in verdicts] == ["stalled", "quarantined"]
    stalled, record = verdicts[0]
    assert "heartbeat_stale" in stalled["zombietop.reasons"]
    assert record.severity_text == "ERROR" and record.trace_id.hex() == TRACE
    assert record.body.string_value.startswith("export-2031 healthy -> stalled: ")
    assert [a["zombietop.page"] for a, _ in pages] == ["incident", "all_clear"]
    assert pages[0][1].trace_id.hex() == TRACE
    assert "trace 4bf92f35..." in pages[0][1].body.string_value
    names = receiver.metric_names()
    for name in (
        "zombietop.tasks",
        "cicd.pipeline.run.active",
        "cicd.worker.count",
        "zombietop.detection.latency",
    ):
        assert name in names, names


@pytest.fixture
def silent_collector() -> Iterator[int]:
    """A collector that accepts every connection and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


async def test_a_hung_collector_never_holds_up_a_look(
    store: Store, clock: FakeClock, silent_collector: int
) -> None:
    endpoint = f"http://127.0.0.1:{silent_collector}"
    dog, notifier, _ = watchdog(store, clock, _otel(endpoint, timeout=120.0, queue_size=16))
    assert dog.otel is not None
    for number in range(12):
        await _traced_task(store, f"t{number}")
    await dog.tick()
    clock.advance(200)
    report = await dog.tick()
    # The look went on: every task paged, while the first export still waits on the collector.
    assert len(report.pages) == 12 and len(notifier.pages) == 12
    clock.advance(30)
    report = await dog.tick()  # and the next look too
    assert report.withheld is None
    logs = dog.otel.telemetry.logs
    assert logs.sent == 0 and logs.dropped > 0  # 24 records, a queue of 16: the rest counted
    assert dog.otel.telemetry.dropped()["logs"] == logs.dropped
    dog.otel.telemetry.close(0.1)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[otel]\nendpoint = "collector:4318"\n', "endpoint must be the collector's OTLP/HTTP"),
        ('[otel]\nendpoint = "http://collector :4318"\n', "endpoint has spaces"),
        ("[otel]\nqueue = 5\n", "queue"),
    ],
)
def test_otel_settings_are_checked(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert error in str(raised.value) and "[otel]" in str(raised.value)


async def test_export_is_off_unless_asked_for(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    dog, _, _ = watchdog(store, clock, config())
    assert dog.otel is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:1/v1/traces")
    dog, _, _ = watchdog(store, clock, config())
    assert dog.otel is not None
    dog.otel.telemetry.close(0.1)
