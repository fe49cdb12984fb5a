"""The watchdog with a fake clock and a real store: one page per incident, all-clears, overruns,
digests, deliveries that fail and later land, and a detector that will not page on stale data."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.clock import FakeClock
from zombietop.config import Config, NotifySettings, WatchSettings, default_config
from zombietop.health import Health
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind, TaskState
from zombietop.paging.notify import Page, WebhookNotifier
from zombietop.store import Store, open_store
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

INTERVAL = 30.0


class RecordingExecutor:
    """Stands in for the executor: records every request and answers with a fixed outcome."""

    read_only = False

    def __init__(self) -> None:
        self.requests: list[ActionRequest] = []

    async def run(self, request: ActionRequest) -> ActionOutcome:
        self.requests.append(request)
        outcome = Outcome.TERM_SENT if request.kind is ActionKind.KILL else Outcome.REQUEUED
        return ActionOutcome(request=request, outcome=outcome, message=f"{outcome}")

    async def complete_pending_kills(self) -> list[ActionOutcome]:
        return []


class ListNotifier:
    name = kind = "list"
    keeps_incidents = False

    def __init__(self) -> None:
        self.pages: list[Page] = []

    async def send(self, page: Page) -> None:
        self.pages.append(page)


def config(stage: float = 900.0, **watch: float) -> Config:
    base = default_config()
    return replace(
        base,
        defaults=replace(base.defaults, stage=stage),
        watch=WatchSettings(**{"interval": INTERVAL, **watch}),
        notify=NotifySettings(retry_backoff=10.0, max_attempts=5),
    )


def watchdog(
    store: Store,
    clock: FakeClock,
    cfg: Config | None = None,
    executor: RecordingExecutor | None = None,
    notifier: ListNotifier | None = None,
    **kwargs: object,
) -> tuple[Watchdog, ListNotifier, list[str]]:
    cfg = cfg or config()
    notifier = notifier or ListNotifier()
    logs: list[str] = []
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, reuse_verdicts=True),
        cfg,
        executor=executor,
        notifiers=[notifier],
        clock=clock,
        log=logs.append,
        **kwargs,
    )  # type: ignore[arg-type]
    return dog, notifier, logs


async def start(
    store: Store, task_id: str = "export-2031", ttl: float = 3600, step_type: str = "d"
) -> int:
    await store.create_task(
        task_id=task_id, run_id="r", step="export", step_type=step_type, actor="t"
    )
    lease = await store.acquire_lease(task_id, owner="w1", ttl=ttl)
    await store.record_heartbeat(
        task_id, parse_line("stage=transform p=61"), owner="w1", token=lease.token
    )
    return lease.token


async def test_a_task_that_stops_beating_is_paged_once_in_time(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    last_beat = clock.now()
    dog, notifier, _ = watchdog(store, clock)
    for _ in range(5):  # healthy and beating: no page
        await dog.tick()
        clock.advance(INTERVAL)
        last_beat = clock.now()
        await store.record_heartbeat(
            "export-2031", parse_line(f"stage=transform p={61}"), owner="w1", token=token
        )
    assert notifier.pages == []
    for _ in range(40):  # silent for 20 minutes
        clock.advance(INTERVAL)
        await dog.tick()
    incidents = [p for p in notifier.pages if p.kind == "incident"]
    assert len(incidents) == 1
    page = incidents[0]
    assert page.at - last_beat <= 120 + INTERVAL
    assert page.health == "stalled"
    assert page.line.startswith("export-2031 stalled: stage=transform p=61% heartbeat")
    assert page.line.endswith("- resume or discard")
    task = await store.get_task("export-2031")
    assert task.quarantined and task.quarantined_by == dog.actor
    # Beating again: one all-clear, and the hold the watchdog placed is lifted.
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    await dog.tick()
    await dog.tick()
    clears = [p for p in notifier.pages if p.kind == "all_clear"]
    assert [p.line.split(" (was")[0] for p in clears] == ["export-2031 all clear: now healthy"]
    assert not (await store.get_task("export-2031")).quarantined
    kinds = [e.kind for e in await store.events(task_id="export-2031", limit=50)]
    assert (
        EventKind.TRANSITION in kinds
        and EventKind.QUARANTINED in kinds
        and kinds.count(EventKind.PAGE) == 2
    )


async def test_a_resolved_task_gets_one_all_clear(store: Store, clock: FakeClock) -> None:
    token = await start(store)
    dog, notifier, _ = watchdog(store, clock)
    clock.advance(200)
    await dog.tick()
    # A human decided: the task finishes (discard and resume end incidents the same way).
    await store.finish_task(
        "export-2031", owner="w1", token=token, state=TaskState.FAILED, exit_code=1
    )
    await dog.tick()
    await dog.tick()
    # The stall is over; the failure it ended in is an incident of its own (issue 30).
    assert [p.kind for p in notifier.pages] == ["incident", "all_clear", "incident"]
    assert notifier.pages[1].line.startswith("export-2031 all clear: now failed (was stalled")
    assert notifier.pages[2].line.startswith("export-2031 failed: exit 1 after ")
    assert notifier.pages[2].line.endswith(" - rerun, resume or discard")


async def test_a_cron_watchdog_remembers_open_incidents(store: Store, clock: FakeClock) -> None:
    await start(store)
    clock.advance(200)
    first, notifier1, _ = watchdog(store, clock)
    await first.tick()
    clock.advance(300)
    second, notifier2, _ = watchdog(store, clock)  # as `zombietop watch --once` from cron would
    await second.tick()
    assert [p.kind for p in notifier1.pages] == ["incident"]
    assert notifier2.pages == []


async def test_spinning_is_not_paged_but_in_the_digest(store: Store, clock: FakeClock) -> None:
    token = await start(store, ttl=4 * 3600)
    dog, notifier, logs = watchdog(store, clock, config(stage=4 * 3600, digest_every=3600))
    await dog.tick()  # the first tick sends an (empty) digest
    for _ in range(70):  # beating every 30 s, never moving, for 35 minutes
        clock.advance(INTERVAL)
        await store.record_heartbeat(
            "export-2031", parse_line("stage=transform p=61"), owner="w1", token=token
        )
        await dog.tick()
    assert notifier.pages == []
    assert sum("spinning (not paged)" in line for line in logs) == 1
    clock.advance(3600)
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=61"), owner="w1", token=token
    )
    await dog.tick()
    digest = [line for line in logs if line.startswith("digest: 1 spinning")]
    assert len(digest) == 1 and "export-2031 spinning: stage=transform p=61%" in digest[0]
    events = await store.events(kind=EventKind.WATCHDOG, limit=10)
    assert any(e.data.get("digest") and e.data["spinning"] for e in events)


async def test_stage_overrun_pages_then_kills_and_task_overrun_only_logs(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store, ttl=10 * 3600)
    async with store._write() as db:  # a task with a process to kill
        await db.execute("UPDATE tasks SET pid = 4242 WHERE task_id = 'export-2031'")
    executor = RecordingExecutor()
    dog, notifier, logs = watchdog(store, clock, executor=executor)
    # Keep beating with moving progress so only the budgets speak; stage limit 15m, task 6h.
    for minute in range(1, 32):
        clock.advance(60)
        await store.record_heartbeat(
            "export-2031",
            parse_line(f"stage=transform p=61 rows={minute}"),
            owner="w1",
            token=token,
        )
        await dog.tick()
    overruns = [p for p in notifier.pages if p.kind == "stage_overrun"]
    assert len(overruns) == 1
    assert overruns[0].line.endswith(
        "stage running 16m00s (budget 15m) - killed gracefully at 30m in this stage"
    )
    kills = [r for r in executor.requests if r.kind is ActionKind.KILL]
    assert (
        len(kills) == 1 and kills[0].expected_token == token and kills[0].task_id == "export-2031"
    )
    assert "stage transform ran 30m00s, 2 x its 15m budget" in (kills[0].reason or "")
    # The task budget: logged once, never paged, never killed.
    clock.advance(6 * 3600)
    await store.record_heartbeat(
        "export-2031", parse_line("stage=load p=90"), owner="w1", token=token
    )
    await dog.tick()
    await dog.tick()
    assert sum(line.startswith("task overrun (logged, not killed)") for line in logs) == 1
    assert [p.kind for p in notifier.pages] == ["stage_overrun"]
    assert len([r for r in executor.requests if r.kind is ActionKind.KILL]) == 1


async def test_a_hung_request_is_paged(store: Store, clock: FakeClock) -> None:
    token = await start(store)
    dog, notifier, _ = watchdog(store, clock)
    await store.record_heartbeat(
        "export-2031", parse_line("stage=fetch p=10 req=vendor-api"), owner="w1", token=token
    )
    for _ in range(4):
        clock.advance(INTERVAL)
        await store.record_heartbeat(
            "export-2031", parse_line("stage=fetch p=10 req=vendor-api"), owner="w1", token=token
        )
        await dog.tick()
    requests = [p for p in notifier.pages if p.kind == "request_overrun"]
    assert len(requests) == 1 and "request vendor-api" in requests[0].line


@pytest.fixture
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, object]]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def start_hook(port: int, received: list[dict[str, object]]) -> HTTPServer:
    handler = type("Hook", (_Hook,), {"received": received})
    server = HTTPServer(("127.0.0.1", port), handler)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server


async def test_a_failing_webhook_never_stops_detection(
    store: Store, clock: FakeClock, free_port: int
) -> None:
    received: list[dict[str, object]] = []
    hook = WebhookNotifier(f"http://127.0.0.1:{free_port}/hook", timeout=2)
    cfg = config()
    logs: list[str] = []
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, reuse_verdicts=True),
        cfg,
        executor=None,
        notifiers=[hook],
        clock=clock,
        log=logs.append,
    )
    await start(store, "a")
    await start(store, "b", ttl=60)
    clock.advance(200)
    report = await dog.tick()  # nobody listens on the port yet
    assert {p.task_id for p in report.pages} == {"a", "b"}
    deliveries = [*report.deliveries, *await dog.outbox.settle()]
    assert all(not d.ok for d in deliveries) and len(deliveries) == 2
    assert "Connection refused" in (deliveries[0].error or "")
    clock.advance(5)
    report = await dog.tick()  # detection goes on; the retry is not due yet
    assert report.withheld is None and report.deliveries == ()
    assert dog.outbox.in_flight == 0
    server = start_hook(free_port, received)
    try:
        clock.advance(10)
        report = await dog.tick()
        deliveries = [*report.deliveries, *await dog.outbox.settle()]
    finally:
        server.shutdown()
        server.server_close()
    assert all(d.ok and d.attempts == 2 for d in deliveries) and len(deliveries) == 2
    assert sorted(str(body["task_id"]) for body in received) == ["a", "b"]
    assert all(str(body["text"]).startswith(f"{body['task_id']} ") for body in received)
    failures = [
        e for e in await store.events(kind=EventKind.DELIVERY, limit=10) if not e.data["ok"]
    ]
    assert len(failures) == 2


async def test_no_verdicts_on_stale_data_and_one_page_when_the_store_is_unreadable(
    db_path: Path, clock: FakeClock
) -> None:
    store = await open_store(db_path, create=True, clock=clock)
    assert isinstance(store, SQLiteStore)
    await start(store)
    dog, notifier, logs = watchdog(store, clock)
    await dog.tick()
    await store.close()
    clock.advance(600)  # the task would be stalled now, but nobody can know
    for _ in range(3):
        report = await dog.tick()
        assert report.withheld is not None and "is closed" in report.withheld
    assert [p.kind for p in notifier.pages] == ["watchdog"]
    assert notifier.pages[0].line.startswith("zombietop watchdog cannot read store")
    # Said once for the stretch, not at every look.
    assert sum(line.startswith("verdicts withheld: cannot read store") for line in logs) == 1


async def test_auto_retry_only_for_idempotent_step_types_with_backoff_and_a_limit(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from zombietop.config import load_config

    path = tmp_path / "c.toml"
    path.write_text('[step_types.idem]\nauto_retry = true\nmax_retries = 2\nretry_backoff = "1m"\n')
    cfg = replace(load_config(path), watch=WatchSettings(interval=INTERVAL))
    await start(store, "idem-1", ttl=60, step_type="idem")
    await start(store, "other-1", ttl=60, step_type="d")
    executor = RecordingExecutor()
    dog, _, logs = watchdog(store, clock, cfg, executor=executor)
    clock.advance(61)
    await dog.tick()  # reclaimable: incident opened, backoff not yet over
    assert executor.requests == []
    clock.advance(60)
    await dog.tick()
    assert [(r.kind, r.task_id) for r in executor.requests] == [(ActionKind.RESUME, "idem-1")]
    assert "auto_retry: attempt 2 of 2" in (executor.requests[0].reason or "")
    # At the limit it stops and says so once.
    async with store._write() as db:
        await db.execute("UPDATE tasks SET attempt = 2 WHERE task_id = 'idem-1'")
    dog.incidents.clear()
    for _ in range(5):
        clock.advance(600)
        await dog.tick()
    assert len(executor.requests) == 1
    assert sum("auto_retry stopped after 2 attempts" in line for line in logs) == 1


async def test_dry_run_prints_and_changes_nothing(store: Store, clock: FakeClock) -> None:
    await start(store)
    clock.advance(200)
    dog, notifier, logs = watchdog(store, clock, dry_run=True)
    await dog.tick()
    assert notifier.pages == []
    assert any(line.startswith("PAGE (incident) export-2031 stalled:") for line in logs)
    assert any(line.startswith("would quarantine export-2031") for line in logs)
    assert not (await store.get_task("export-2031")).quarantined
    assert await store.events(kind=EventKind.PAGE) == []


def test_health_vocabulary_used_by_pages() -> None:
    assert {h for h in Health if h.pages} == {
        Health.DEAD,
        Health.ORPHANED,
        Health.RECLAIMABLE,
        Health.STALLED,
    }


async def test_apprise_carries_pages_to_the_long_tail_of_services(
    store: SQLiteStore, clock: FakeClock, free_port: int
) -> None:
    """apprise's json:// service posts to a local server here, as PagerDuty or Slack would be."""
    from zombietop.paging.notify import AppriseNotifier

    received: list[dict[str, object]] = []
    server = start_hook(free_port, received)
    try:
        notifier = AppriseNotifier([f"json://127.0.0.1:{free_port}/hook"])
        cfg = config()
        dog = Watchdog(
            Monitor(store, cfg, clock=clock, reuse_verdicts=True),
            cfg,
            executor=None,
            notifiers=[notifier],
            clock=clock,
            log=lambda _: None,
        )
        await start(store)
        clock.advance(200)
        report = await dog.tick()
        deliveries = [*report.deliveries, *await dog.outbox.settle()]
    finally:
        server.shutdown()
        server.server_close()
    assert [d.ok for d in deliveries] == [True]
    assert len(received) == 1
    assert str(received[0]["message"]).startswith("export-2031 stalled: stage=transform p=61%")
    assert received[0]["title"] == "zombietop: export-2031 stalled"


def test_an_unknown_apprise_scheme_is_a_config_error() -> None:
    from zombietop.errors import ZombietopError
    from zombietop.paging.notify import AppriseNotifier

    with pytest.raises(ZombietopError, match="nosuch:// is not a URL apprise knows"):
        AppriseNotifier(["nosuch://x"])


async def test_the_all_clear_of_a_killed_task_says_it_was_interrupted(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    dog, notifier, _ = watchdog(store, clock)
    clock.advance(200)
    await dog.tick()  # stalled: quarantined and paged
    # A human killed it: its wrapper records the interruption; the hold stays.
    await store.finish_task("export-2031", owner="w1", token=token, state=TaskState.INTERRUPTED)
    await dog.tick()
    assert [p.kind for p in notifier.pages] == ["incident", "all_clear"]
    clear = notifier.pages[1]
    assert clear.line.startswith(
        "export-2031 all clear: now interrupted (still quarantined) (was stalled for "
    ), clear.line
    assert clear.health == "interrupted"
