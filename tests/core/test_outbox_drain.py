"""``Outbox.drain``: before a ``--once`` run exits, failed deliveries get a bounded chance to
land; what is still failing at the end of the window is said and left for the next run."""

from __future__ import annotations

import asyncio

from zombietop.clock import FakeClock
from zombietop.config import NotifySettings
from zombietop.notify import DeliveryError, Outbox, Page
from zombietop.page import PageKind


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
