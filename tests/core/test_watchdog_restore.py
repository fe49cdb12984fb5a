"""A watchdog that starts (a restart, or ``watch --once`` from cron) remembers every incident
still open, however many page events came after it opened: the store is asked for the open
incidents, never for the newest N events."""

from __future__ import annotations

from tests.core.test_watchdog import start, watchdog
from tests.core.test_watchdog_oncall import RENOTIFY, cfg
from zombietop.clock import FakeClock
from zombietop.model import EventKind, TaskState
from zombietop.store import Store

OTHER_PAGES = 5_001
"""More page events than the old restore read back (its newest 5,000)."""


async def test_an_open_incident_is_remembered_past_thousands_of_newer_page_events(
    store: Store, clock: FakeClock
) -> None:
    await start(store, "old-one")
    clock.advance(200)  # stalled
    first, notifier, _ = watchdog(store, clock, cfg())
    await first.tick()
    assert [p.kind for p in notifier.pages] == ["incident"]
    opened_at = first.incidents["old-one"].opened_at
    # A busy stretch of other incidents' notices buries the opening page deep in the log.
    for number in range(OTHER_PAGES):
        await store.record_event(
            kind=EventKind.PAGE,
            actor="watchdog@elsewhere",
            message=f"busy-{number % 60} renotify",
            task_id=f"busy-{number % 60}",
            data={"page": "renotify", "notice": 2},
        )
    clock.advance(RENOTIFY / 2)  # not due for its 2nd notice yet
    second, notifier, _ = watchdog(store, clock, cfg())
    await second.tick()
    assert notifier.pages == []
    assert second.incidents["old-one"].opened_at == opened_at
    clock.advance(RENOTIFY / 2)
    third, notifier, _ = watchdog(store, clock, cfg())
    await third.tick()
    assert [p.kind for p in notifier.pages] == ["renotify"]
    assert notifier.pages[0].line.endswith("(2nd notice, open 10m00s)")


async def test_a_closed_incident_stays_closed(store: Store, clock: FakeClock) -> None:
    token = await start(store, "closed-one")
    clock.advance(200)
    first, notifier, _ = watchdog(store, clock, cfg())
    await first.tick()
    await store.finish_task(
        "closed-one", owner="w1", token=token, state=TaskState.SUCCEEDED, exit_code=0
    )
    await first.tick()
    assert [p.kind for p in notifier.pages] == ["incident", "all_clear"]
    await first.book.restore(store, print)
    assert first.incidents == {}
    assert "closed-one" not in first.notices.keys()
