"""``IncidentBook`` alone: an incident opened, paged again, held by a silence, retried and
closed, one task's view at a time, on a real SQLite store; and read back by a new book."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.realprocs import Children
from tests.core.test_watchdog import INTERVAL, RecordingExecutor, start
from tests.core.watchdog_parts import Parts, hands_on
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.config import OnCallSettings, WatchSettings, load_config
from zombietop.health import Health
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Snapshot
from zombietop.model import EventKind, Matcher, TaskState
from zombietop.oncall import acks
from zombietop.page import incident_key
from zombietop.procs import PsutilProbe, read_start, this_host
from zombietop.store import Store
from zombietop.watch.incident_book import IncidentBook

pytestmark = pytest.mark.backends("sqlite")
RENOTIFY = 600.0


def book_of(parts: Parts) -> IncidentBook:
    return IncidentBook(parts.hands, renotify=RENOTIFY)


async def judge(parts: Parts, book: IncidentBook, task_id: str = "export-2031") -> list[str]:
    """One look's judgement of one task; the kinds of the pages it queued."""
    view, look = await parts.judged(task_id)
    await book.judge(view, look)
    return [page.kind for page in look.pages]


async def test_an_incident_opens_with_a_hold_and_one_page_then_a_notice_per_renotify(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    clock.advance(200)  # silent: stalled
    parts = hands_on(store, clock)
    book = book_of(parts)
    view, look = await parts.judged()
    await book.judge(view, look)
    (page,) = look.pages
    assert page.kind == "incident"
    assert page.line.startswith("export-2031 stalled: stage=transform p=61% heartbeat 3m20s old")
    assert (await store.get_task("export-2031")).quarantined  # held before it is paged
    incident = book.incidents["export-2031"]
    assert (incident.health, incident.opened_at) == (Health.STALLED, look.now)
    (event,) = await parts.events(EventKind.PAGE)
    key = f"incident:export-2031:1:{look.now}"
    name = incident_key("export-2031", look.now)  # the name every channel knows it by
    assert page.incident == name
    assert event.data == {"page": "incident", "key": key, "health": "stalled", "incident": name}
    clock.advance(RENOTIFY / 2)
    assert await judge(parts, book) == []  # not due yet
    clock.advance(RENOTIFY / 2)
    view, look = await parts.judged()
    await book.judge(view, look)
    assert [p.kind for p in look.pages] == ["renotify"]
    assert look.pages[0].line.endswith("- resume or discard (2nd notice, open 10m00s)")


async def test_an_incident_closes_with_the_hold_let_go_of_and_an_all_clear(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    book = book_of(parts)
    await judge(parts, book)
    clock.advance(60)
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    view, look = await parts.judged()
    await book.judge(view, look)
    assert [p.line for p in look.pages] == [
        "export-2031 all clear: now healthy (was stalled for 1m00s)"
    ]
    assert look.pages[0].health == "healthy"
    assert book.incidents == {} and "export-2031" not in book.notices.keys()
    assert not (await store.get_task("export-2031")).quarantined


async def test_a_task_still_held_by_a_human_keeps_its_incident_open(
    store: Store, clock: FakeClock
) -> None:
    """Out of stalled into quarantined, held by someone: no "all clear: now quarantined" (the
    hold asks a human to resolve it); the incident stays open and is paged again."""
    token = await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    book = book_of(parts)
    await judge(parts, book)
    # Ana takes the hold over from the watchdog: hers stays when the task beats again.
    await store.set_quarantine("export-2031", quarantined=False, actor="ana", reason="mine")
    await store.set_quarantine("export-2031", quarantined=True, actor="ana", reason="looking")
    clock.advance(60)
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    view, look = await parts.judged()
    assert view.health is Health.QUARANTINED
    await book.judge(view, look)
    assert look.pages == [] and "export-2031" in book.incidents
    clock.advance(RENOTIFY)
    view, look = await parts.judged()
    await book.judge(view, look)
    assert [p.kind for p in look.pages] == ["renotify"]
    # The human lets go of a task that beats: now the all-clear.
    await store.set_quarantine("export-2031", quarantined=False, actor="ana", reason="done")
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=70"), owner="w1", token=token
    )
    view, look = await parts.judged()
    await book.judge(view, look)
    assert [p.line for p in look.pages] == [
        "export-2031 all clear: now healthy (was stalled for 11m00s)"
    ]


async def test_a_silence_holds_the_page_and_an_incident_never_paged_ends_quietly(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    await acks.silence(
        store,
        OnCallSettings(),
        matcher=Matcher.TASK,
        pattern="export-*",
        by="ana",
        reason="maintenance night",
        duration=1800,
    )
    clock.advance(200)
    parts = hands_on(store, clock)
    book = book_of(parts)
    view, look = await parts.judged()
    await book.judge(view, look)
    assert look.pages == [] and "export-2031" in book.incidents
    assert look.logs[-1].startswith("silenced (not paged: silence 1, task export-*")
    (held,) = [e for e in await parts.events(EventKind.WATCHDOG) if e.data.get("held")]
    assert held.message.startswith("held by silence 1: export-2031 stalled")
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    view, look = await parts.judged()
    await book.judge(view, look)
    assert look.pages == [] and book.incidents == {}
    assert look.logs == [
        "silenced (not paged): export-2031 all clear: now healthy (was stalled for 0s)"
    ]


async def test_the_incident_of_a_task_gone_from_the_store_closes(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    book = book_of(parts)
    await judge(parts, book)
    look = parts.look()
    await book.close_vanished(Snapshot(taken_at=clock.now()), look)
    assert [p.line for p in look.pages] == ["export-2031 all clear: no longer active (was stalled)"]
    assert book.incidents == {}


async def test_auto_retry_waits_its_backoff_and_stops_at_its_limit(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[step_types.idem]\nauto_retry = true\nmax_retries = 2\nretry_backoff = "1m"\n')
    cfg = replace(load_config(path), watch=WatchSettings(interval=INTERVAL))
    await start(store, "idem-1", ttl=60, step_type="idem")
    executor = RecordingExecutor()
    parts = hands_on(store, clock, cfg, executor=executor)
    book = book_of(parts)
    clock.advance(61)  # the lease expired: reclaimable
    assert await judge(parts, book, "idem-1") == ["incident"]
    assert executor.requests == []  # the backoff is not over
    clock.advance(60)
    await judge(parts, book, "idem-1")
    (request,) = executor.requests
    assert request.kind is ActionKind.RESUME
    assert request.reason == "auto_retry: attempt 2 of 2 after reclaimable"
    async with store._write() as db:  # type: ignore[attr-defined]
        await db.execute("UPDATE tasks SET attempt = 2 WHERE task_id = 'idem-1'")
    for _ in range(3):
        clock.advance(600)
        await judge(parts, book, "idem-1")
    assert len(executor.requests) == 1
    said = [e.message for e in await parts.events(EventKind.WATCHDOG)]
    assert said == [
        "auto_retry: attempt 2 of 2 after reclaimable: requeued",
        "idem-1: auto_retry stopped after 2 attempts; a human decides",  # once
    ]


async def test_a_new_book_reads_the_open_incidents_back_from_the_event_log(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    first = book_of(parts)
    await judge(parts, first)
    said: list[str] = []
    second = book_of(hands_on(store, clock))
    await second.restore(store, said.append)
    assert second.incidents == first.incidents and said == []
    assert second.notices.keys() == ["export-2031"]
    opened_at = first.incidents["export-2031"].opened_at
    assert f"incident:export-2031:1:{opened_at}" in second.once
    # It remembers the page: the next look sends no second one.
    assert await judge(parts, second) == []


async def test_the_all_clear_counts_to_the_tasks_own_end_time(
    store: Store, clock: FakeClock
) -> None:
    """A task that failed 69 s into its incident, seen by the next look minutes later, was
    stalled for 1m09s, not until the look (an engine's end_date, or our own finish)."""
    token = await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    book = book_of(parts)
    await judge(parts, book)
    clock.advance(69)
    await store.finish_task(
        "export-2031", owner="w1", token=token, state=TaskState.FAILED, exit_code=1
    )
    clock.advance(127)
    view, look = await parts.judged()
    await book.judge(view, look)
    # The stall's all-clear, then the failed run's own incident (a failed run pages).
    line, failed = [p.line for p in look.pages]
    assert line.startswith("export-2031 all clear: now ") and line.endswith(" for 1m09s)")
    assert failed.startswith("export-2031 failed: exit 1")


async def test_an_orphan_opens_an_incident_and_is_paged_but_not_held(
    store: Store, clock: FakeClock, children: Children
) -> None:
    """A real process outlives its finished task: paged with "kill it", never quarantined
    (nothing is left to hold), and the all-clear comes once the process is gone."""
    await store.create_task(
        task_id="export-2031",
        run_id="r",
        step="export",
        step_type="d",
        actor="t",
        command=("sleep", "60"),
    )
    lease = await store.acquire_lease("export-2031", owner="w1", ttl=3600)
    alive = children.start(["sleep", "60"])
    started = read_start(alive.pid)
    assert started is not None
    await store.set_process(
        "export-2031",
        owner="w1",
        token=lease.token,
        pid=alive.pid,
        pid_start_time=started.time,
        pid_start_identity=started.identity,
        host=this_host(),
    )
    await store.finish_task(
        "export-2031", owner="w1", token=lease.token, state=TaskState.FAILED, exit_code=1
    )
    clock.advance(60)
    parts = hands_on(store, clock)
    parts.hands.monitor.probe = PsutilProbe()
    book = book_of(parts)
    view, look = await parts.judged()
    await book.judge(view, look)
    (page,) = look.pages
    assert page.kind == "incident"
    assert page.line.startswith(
        f"export-2031 orphaned: pid {alive.pid} alive 1m00s after it finished"
    )
    assert page.line.endswith(" - kill it")
    assert not (await store.get_task("export-2031")).quarantined
    alive.kill()
    alive.wait(10)
    view, look = await parts.judged()
    await book.judge(view, look)
    # The orphan's all-clear; the failed run stays to be rerun, resumed or discarded.
    all_clear, failed = [p.line for p in look.pages]
    assert all_clear == "export-2031 all clear: now failed (was orphaned for 0s)"
    assert failed.startswith("export-2031 failed: exit 1") and failed.endswith("resume or discard")


async def test_a_stalled_task_that_finishes_while_its_process_lives_is_paged_as_orphaned(
    store: Store, clock: FakeClock, children: Children
) -> None:
    """Airflow's case: the supervisor dies, the task stalls (paged), then Airflow marks it
    failed while its process runs on. The open incident is paged again: now "kill it"."""
    await store.create_task(
        task_id="export-2031",
        run_id="r",
        step="export",
        step_type="d",
        actor="t",
        command=("sleep", "60"),
    )
    token = (await store.acquire_lease("export-2031", owner="w1", ttl=3600)).token
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=61"), owner="w1", token=token
    )
    alive = children.start(["sleep", "60"])
    started = read_start(alive.pid)
    assert started is not None
    await store.set_process(
        "export-2031",
        owner="w1",
        token=token,
        pid=alive.pid,
        pid_start_time=started.time,
        pid_start_identity=started.identity,
        host=this_host(),
    )
    clock.advance(200)
    parts = hands_on(store, clock)
    parts.hands.monitor.probe = PsutilProbe()
    book = book_of(parts)
    assert await judge(parts, book) == ["incident"]  # stalled
    await store.finish_task(
        "export-2031", owner="w1", token=token, state=TaskState.FAILED, exit_code=1
    )
    clock.advance(30)
    view, look = await parts.judged()
    await book.judge(view, look)
    (page,) = look.pages
    assert page.kind == "incident" and " orphaned: " in page.line
    assert page.line.endswith(" - kill it")
    assert book.incidents["export-2031"].health is Health.ORPHANED
    assert await judge(parts, book) == []  # paged once
