"""``Outbox.drain``: before a ``--once`` run exits, failed deliveries get a bounded chance to
land; what is still failing at the end of the window is said and left for the next run."""

from __future__ import annotations

import asyncio

from zombietop.clock import FakeClock
from zombietop.config import NotifySettings
from zombietop.health import ScheduleHealth
from zombietop.page import PageKind
from zombietop.paging.notify import DeliveryError, Outbox, Page
from zombietop.store import Store


class FlakyNotifier:
    """A channel that fails its first ``fails`` attempts, then delivers."""

    name = kind = "flaky"
    keeps_incidents = False

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.pages: list[Page] = []

    async def send(self, page: Page) -> None:
        if self.fails > 0:
            self.fails -= 1
            raise DeliveryError("flaky: connection refused")
        self.pages.append(page)


def outbox(notifier: FlakyNotifier, said: list[str], *, backoff: float) -> Outbox:
    settings = NotifySettings(retry_backoff=backoff, max_attempts=5)
    outbox = Outbox([notifier], settings, FakeClock(), log=said.append)
    outbox.put(Page(kind=PageKind.INCIDENT, line="t1 stalled", task_id="t1", at=0.0))
    return outbox


async def test_a_delivery_that_fails_once_lands_before_the_run_exits() -> None:
    said: list[str] = []
    notifier = FlakyNotifier(fails=1)
    box = outbox(notifier, said, backoff=0.0)  # the retry is due at once
    await box.flush()
    await box.drain(60.0, asyncio.Event())
    assert [page.line for page in notifier.pages] == ["t1 stalled"]
    assert box.pending == 0 and said == []


async def test_a_delivery_still_failing_when_the_window_ends_is_said_and_left() -> None:
    said: list[str] = []
    box = outbox(FlakyNotifier(fails=99), said, backoff=600.0)  # no retry due in the window
    await box.flush()
    await box.drain(0.2, asyncio.Event())
    assert box.pending == 1
    assert said == [
        "1 page deliveries not delivered yet; giving up for this run "
        "(the store keeps them for the next one)"
    ]


async def test_a_stop_ends_the_drain_at_once() -> None:
    said: list[str] = []
    box = outbox(FlakyNotifier(fails=99), said, backoff=600.0)
    await box.flush()
    stop = asyncio.Event()
    stop.set()
    await box.drain(3600.0, stop)
    assert box.pending == 1 and said == []


async def test_a_kept_page_of_a_kind_this_version_does_not_know_is_dropped_and_said(
    store: Store, clock: FakeClock
) -> None:
    """A page a newer zombietop left in the store is dropped, never a crash of the watchdog;
    a known one is read back with its kind and health as members."""
    said: list[str] = []
    notifier = FlakyNotifier(fails=0)
    for kind, health in (("a_later_kind", "stalled"), ("incident", "a_later_health")):
        await store.keep_page(notifier="flaky", kind=kind, line=f"{kind} {health}", task_id="t1",
                              health=health, page_at=0.0, attempts=0, next_at=0.0)  # fmt: skip
    await store.keep_page(notifier="flaky", kind="incident", line="t2 missed", task_id="t2",
                          health="missed", page_at=0.0, attempts=0, next_at=0.0)  # fmt: skip
    box = Outbox([notifier], NotifySettings(), clock, log=said.append, keeper=store)
    assert await box.load() == 1
    assert said == [
        "dropping a page of an unknown kind or health: a_later_kind stalled",
        "dropping a page of an unknown kind or health: incident a_later_health",
    ]
    await box.flush()
    [page] = notifier.pages
    assert page.kind is PageKind.INCIDENT and page.health is ScheduleHealth.MISSED
    assert [row.line for row in await store.pending_pages()] == []
