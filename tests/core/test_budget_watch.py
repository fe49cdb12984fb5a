"""``BudgetWatch`` alone: the layered timeouts applied to one task's view at a time, on a real
SQLite store: a stage overrun pages, the second overrun kills, a task overrun is only logged,
and none of it is said twice."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tests.core.test_clock_jump import start_with_pid
from tests.core.test_watchdog import RecordingExecutor, config, start
from tests.core.watchdog_parts import Parts, hands_on
from zombietop.clock import FakeClock
from zombietop.config import Config
from zombietop.health import Health
from zombietop.heartbeat_line import parse_line
from zombietop.model import EventKind
from zombietop.store import Store
from zombietop.watch.budget_watch import BudgetWatch
from zombietop.watch.clock_watch import ClockWatch
from zombietop.watch.incident_book import Incident, IncidentBook

pytestmark = pytest.mark.backends("sqlite")
HOUR = 3600.0


class Budgets:
    """A task that beats and moves on, and the budget watch over it."""

    def __init__(self, parts: Parts, token: int, *, factor: float = 2.0) -> None:
        self.parts = parts
        self.token = token
        self.book = IncidentBook(parts.hands, renotify=600.0)
        self.clocks = ClockWatch(local=False)
        self.watch = BudgetWatch(parts.hands, self.book, self.clocks, stage_kill_factor=factor)
        self.progress = 61

    async def beat_for(self, seconds: float, line: str = "") -> None:
        """Beat every 30 s for ``seconds``, the progress moving: only budgets can speak."""
        for _ in range(int(seconds // 30)):
            self.parts.clock.advance(30)
            self.progress += 1
            await self.parts.store.record_heartbeat(
                "export-2031",
                parse_line(f"stage=transform p={self.progress} {line}"),
                owner="w1",
                token=self.token,
            )

    async def check(self) -> tuple[list[str], list[str]]:
        """One look's check: the lines of the pages it queued, and the lines it logged."""
        view, look = await self.parts.judged()
        await self.watch.check(view, look)
        return [page.line for page in look.pages], look.logs


def budgets_config(**limits: float) -> Config:
    base = config()
    return replace(base, defaults=replace(base.defaults, **limits))


async def test_a_stage_overrun_pages_once_and_the_second_overrun_kills_once(
    store: Store, clock: FakeClock
) -> None:
    token = await start_with_pid(store)
    executor = RecordingExecutor()
    budgets = Budgets(hands_on(store, clock, config(stage=60.0), executor=executor), token)
    await budgets.beat_for(90)
    pages, _ = await budgets.check()
    assert len(pages) == 1
    assert pages[0].startswith("export-2031 stage_overrun: stage=transform p=64%")
    assert pages[0].endswith(" - killed gracefully at 2m in this stage")
    assert (await budgets.check())[0] == []  # said once per stage
    assert executor.requests == []
    await budgets.beat_for(30)  # two minutes in a stage of one: the second overrun
    pages, logs = await budgets.check()
    assert pages == [] and logs == ["kill export-2031: term_sent"]
    (kill,) = executor.requests
    assert kill.kind == "kill" and kill.reason == "stage transform ran 2m00s, 2 x its 1m budget"
    await budgets.beat_for(30)
    await budgets.check()
    assert len(executor.requests) == 1  # killed once
    recorded = [e.message for e in await budgets.parts.events(EventKind.WATCHDOG)]
    assert recorded == ["second stage overrun: killing export-2031"]


async def test_without_a_kill_factor_or_a_process_the_overrun_only_pages(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)  # no pid: nothing to kill
    executor = RecordingExecutor()
    parts = hands_on(store, clock, config(stage=60.0), executor=executor)
    budgets = Budgets(parts, token, factor=0.0)
    await budgets.beat_for(150)
    pages, _ = await budgets.check()
    assert len(pages) == 1 and " - killed gracefully" not in pages[0]
    budgets.watch.stage_kill_factor = 2.0
    await budgets.check()
    assert executor.requests == []


async def test_an_overrun_during_an_open_incident_is_logged_not_paged(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    budgets = Budgets(hands_on(store, clock, config(stage=60.0)), token)
    budgets.book.incidents["export-2031"] = Incident(
        task_id="export-2031", health=Health.STALLED, opened_at=clock.now()
    )
    await budgets.beat_for(90)
    pages, logs = await budgets.check()
    assert pages == []
    assert len(logs) == 1
    assert logs[0].startswith("stage_overrun during an open incident (not paged again): ")


async def test_a_task_overrun_is_logged_once_and_never_paged(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    budgets = Budgets(hands_on(store, clock, budgets_config(task=60.0)), token)
    await budgets.beat_for(90)
    pages, logs = await budgets.check()
    assert pages == [] and len(logs) == 1
    assert logs[0].startswith("task overrun (logged, not killed): export-2031 task_overrun:")
    assert await budgets.check() == ([], [])


async def test_a_request_overrun_pages_once_per_request(store: Store, clock: FakeClock) -> None:
    token = await start(store)
    budgets = Budgets(hands_on(store, clock), token)
    started = datetime.fromtimestamp(clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    await budgets.beat_for(120, f"req=fetch req_at={started}")  # its budget is 90s
    pages, _ = await budgets.check()
    assert len(pages) == 1 and "request_overrun" in pages[0]
    assert (await budgets.check())[0] == []


async def test_a_jump_of_the_stores_clock_is_no_time_the_stage_ran(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store, ttl=3 * HOUR)
    budgets = Budgets(hands_on(store, clock, config(stage=900.0)), token)
    budgets.clocks.check(clock.now(), (), (0.0, 0.1), clock.now())
    clock.advance(HOUR)  # the store's clock steps an hour between two looks 30 s apart
    budgets.clocks.check(clock.now(), (), (30.0, 30.1), clock.now())
    await budgets.beat_for(300)
    assert await budgets.check() == ([], [])  # five minutes in a stage of fifteen
    await budgets.beat_for(660)
    pages, _ = await budgets.check()
    assert len(pages) == 1 and "stage_overrun" in pages[0]


async def test_a_flag_that_pages_once_is_paged_once_per_task(
    store: Store, clock: FakeClock
) -> None:
    """queued_too_long pages once (FLAG_TRAITS), then says nothing more while it holds."""
    await store.create_task(
        task_id="export-2031", run_id="r", step="export", step_type="export", actor="test"
    )
    base = config()
    parts = hands_on(
        store, clock, replace(base, defaults=replace(base.defaults, queue_timeout=600.0))
    )
    budgets = Budgets(parts, 0)
    clock.advance(300)
    assert (await budgets.check())[0] == []  # not yet
    clock.advance(301)
    pages, _ = await budgets.check()
    assert pages == ["export-2031 queued, queued_too_long: queued 10m01s (queue timeout 10m)"]
    clock.advance(3600)
    assert (await budgets.check())[0] == []  # said once
    (event,) = await parts.events(EventKind.PAGE)
    assert event.data["page"] == "queued_too_long"
