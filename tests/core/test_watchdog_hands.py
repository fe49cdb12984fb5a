"""``Hands`` alone: how the watchdog's parts record events, queue pages and run actions, on a
real SQLite store; and the log channel that stands in for paging in a dry run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.test_watchdog import RecordingExecutor, start
from tests.core.watchdog_parts import ACTOR, hands_on
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.model import EventKind
from zombietop.page import PageKind
from zombietop.paging.notify import DeliveryResult, LogNotifier, Page
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore

pytestmark = pytest.mark.backends("sqlite")


async def test_an_event_is_recorded_as_the_watchdog(store: Store, clock: FakeClock) -> None:
    parts = hands_on(store, clock)
    await parts.hands.record(EventKind.WATCHDOG, "digest: 0 spinning", None, {"digest": True})
    (event,) = await parts.events(EventKind.WATCHDOG)
    assert (event.actor, event.message, event.data) == (
        ACTOR,
        "digest: 0 spinning",
        {"digest": True},
    )


async def test_a_dry_run_records_nothing_and_shows_its_pages(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    parts = hands_on(store, clock, dry_run=True)
    view, look = await parts.judged()
    await parts.hands.record(EventKind.WATCHDOG, "not written", None, {})
    parts.hands.page(look, "incident", "export-2031 stalled: it says so", view=view)
    results = await parts.hands.outbox.flush()
    assert await store.events(kind=EventKind.WATCHDOG) == []
    assert [r.notifier for r in results] == ["dry-run"]
    assert parts.logs == ["PAGE (incident) export-2031 stalled: it says so"]
    assert parts.notifier.pages == []  # the configured channels are left alone


async def test_an_event_that_cannot_be_written_is_logged_not_raised(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = await SQLiteStore.open(tmp_path / "z.db", create=True, clock=clock)
    parts = hands_on(store, clock)
    await store.close()
    await parts.hands.record(EventKind.WATCHDOG, "a transition", "t1", {})
    assert len(parts.logs) == 1
    assert parts.logs[0].startswith("could not record event (store ")
    assert parts.logs[0].endswith("is closed): a transition")


async def test_a_page_carries_the_tasks_health_host_and_last_sign_of_progress(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    beat_at = clock.now()
    clock.advance(200)  # silent: stalled
    parts = hands_on(store, clock)
    view, look = await parts.judged()
    page = parts.hands.page(look, "incident", "the line", view=view)
    assert look.pages == [page]
    assert (page.task_id, page.health, page.host) == ("export-2031", "stalled", view.task.host)
    assert page.since == beat_at and page.at == clock.now()
    # The all-clear of an incident speaks of the health it ends in, not the view's.
    clear = parts.hands.page(look, "all_clear", "now healthy", view=view, health=view.health)
    assert clear.health == "stalled"
    parts.hands.page_schedule(look, "incident", "nightly missed", incident="schedule:nightly:T")
    assert [p.line for p in await parts.sent()] == ["the line", "now healthy", "nightly missed"]
    missed = parts.notifier.pages[2]
    assert missed.health == "missed" and missed.task_id is None
    assert missed.incident == "schedule:nightly:T"


async def test_an_action_goes_through_the_executor_with_the_token_seen(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    executor = RecordingExecutor()
    parts = hands_on(store, clock, executor=executor)
    view, look = await parts.judged()
    outcome = await parts.hands.act(view, ActionKind.KILL, "stage ran too long", look)
    assert outcome is not None and look.actions == [outcome]
    (request,) = executor.requests
    assert (request.kind, request.expected_token, request.actor) == ("kill", token, ACTOR)
    assert look.logs == ["kill export-2031: term_sent"]


async def test_without_an_executor_an_action_is_only_said(store: Store, clock: FakeClock) -> None:
    await start(store)
    parts = hands_on(store, clock)
    view, look = await parts.judged()
    assert await parts.hands.act(view, ActionKind.RESUME, "auto_retry", look) is None
    assert look.logs == ["would resume export-2031: auto_retry"] and look.actions == []


async def test_each_delivery_attempt_is_recorded(store: Store, clock: FakeClock) -> None:
    parts = hands_on(store, clock)
    page = Page(kind=PageKind.INCIDENT, line="t1 stalled", task_id="t1", at=clock.now())
    failed = DeliveryResult(
        page=page,
        notifier="list",
        channel="list",
        ok=False,
        attempts=1,
        error="refused",
        final=False,
    )
    await parts.hands.delivered(failed)
    await parts.hands.delivered(
        DeliveryResult(page=page, notifier="list", channel="list", ok=True, attempts=2)
    )
    events = await parts.events(EventKind.DELIVERY)
    assert [e.message for e in events] == [
        "delivery failed, will retry: refused",
        "delivered via list (attempt 2)",
    ]
    assert events[0].data == {"ok": False, "notifier": "list", "attempts": 1, "final": False}
    assert parts.logs == [
        "delivery failed (will retry): refused",
        "delivered via list on attempt 2: t1 stalled",
    ]


async def test_the_log_channel_writes_each_page_as_a_line() -> None:
    said: list[str] = []
    page = Page(kind=PageKind.ALL_CLEAR, line="t1 all clear \x1b[2J", task_id="t1", at=0.0)
    plain, dry = LogNotifier(said.append), LogNotifier.dry_run(said.append)
    await plain.send(page)
    await dry.send(page)
    assert said == ["PAGE (all_clear) t1 all clear \\x1b[2J"] * 2
    assert (plain.name, plain.kind) == ("watch log", "log")
    assert (dry.name, dry.kind) == ("dry-run", "dry-run")
