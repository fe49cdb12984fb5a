"""The on-call loop in the watchdog, with a fake clock and a real store: re-notify until acked,
silences that hold pages until they end, and schedules paged like stalls. Each step uses a fresh
watchdog, as `zombietop watch --once` from cron would, so the memory is the event log's."""

from __future__ import annotations

from dataclasses import replace

from tests.core.test_watchdog import config, start, watchdog
from zombietop.clock import FakeClock
from zombietop.config import Config, OnCallSettings, Schedule
from zombietop.heartbeat_line import parse_line
from zombietop.model import EventKind, Matcher, TaskState
from zombietop.oncall import acks
from zombietop.paging.notify import Page
from zombietop.store import Store

RENOTIFY = 600.0


def cfg(**changes: object) -> Config:
    base = config(renotify=RENOTIFY)
    return replace(base, **changes)  # type: ignore[arg-type]


async def once(store: Store, clock: FakeClock, c: Config | None = None) -> list[Page]:
    """One pass of a fresh watchdog: what it paged."""
    dog, notifier, _ = watchdog(store, clock, c or cfg())
    await dog.tick()
    return notifier.pages


async def test_an_open_incident_is_paged_again_until_acked(store: Store, clock: FakeClock) -> None:
    await start(store)
    clock.advance(200)  # stalled
    (first,) = await once(store, clock)
    assert first.kind == "incident" and first.line.endswith("- resume or discard")
    clock.advance(RENOTIFY / 2)
    assert await once(store, clock) == []
    clock.advance(RENOTIFY / 2)
    (second,) = await once(store, clock)
    assert second.kind == "renotify"
    assert second.line.startswith("export-2031 stalled: stage=transform p=61% heartbeat")
    assert second.line.endswith("- resume or discard (2nd notice, open 10m00s)")
    clock.advance(RENOTIFY)
    (third,) = await once(store, clock)
    assert third.line.endswith("(3rd notice, open 20m00s)")

    await acks.ack(store, OnCallSettings(), "export-2031", by="ana", reason="on it", duration=1800)
    for _ in range(2):
        clock.advance(RENOTIFY)
        assert await once(store, clock) == []
    clock.advance(RENOTIFY + 1)  # the ack ran out: the incident is loud again
    (fourth,) = await once(store, clock)
    assert fourth.line.endswith("(4th notice, open 50m01s)")


async def test_renotify_zero_pages_once(store: Store, clock: FakeClock) -> None:
    await start(store)
    clock.advance(200)
    off = cfg(watch=replace(cfg().watch, renotify=0.0))
    assert len(await once(store, clock, off)) == 1
    for _ in range(5):
        clock.advance(3600)
        assert await once(store, clock, off) == []


async def test_the_all_clear_still_goes_out_and_ends_the_ack(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    clock.advance(200)
    await once(store, clock)
    await acks.ack(store, OnCallSettings(), "export-2031", by="ana", duration=3600)
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    (clear,) = await once(store, clock)
    assert clear.kind == "all_clear"
    assert await store.acks() == []
    (ended,) = [e for e in await store.events(kind=EventKind.ACK) if e.data["action"] == "unack"]
    assert ended.message.endswith("the incident ended")


async def test_a_silence_holds_pages_until_it_ends_then_the_page_goes_out(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
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
    dog, notifier, logs = watchdog(store, clock, cfg())
    report = await dog.tick()
    assert notifier.pages == []
    assert any(line.startswith("silenced (not paged: silence 1, task export-*)") for line in logs)
    assert (await store.get_task("export-2031")).quarantined  # detected and held all the same
    assert report.counts and dog.monitor.last.silenced == 1
    for _ in range(2):  # the silence outlasts the renotify interval: still nothing
        clock.advance(RENOTIFY)
        assert await once(store, clock) == []
    clock.advance(RENOTIFY)  # the silence ended while the task is still stalled
    (page,) = await once(store, clock)
    assert page.kind == "incident"
    assert page.line.endswith("- resume or discard (1st notice, open 30m00s)")
    clock.advance(RENOTIFY)
    (again,) = await once(store, clock)
    assert again.line.endswith("(2nd notice, open 40m00s)")


async def test_a_silence_longer_than_this_watchdogs_max_silence_ends_at_its_bound(
    store: Store, clock: FakeClock
) -> None:
    """Issue N2 #10: a silence made under a config with max_silence = "36500d" held a 7-day
    watchdog's pages until 2126. The watchdog caps it at its own bound, says so, and pages the
    incident once its own bound is over."""
    await start(store)
    big = OnCallSettings(max_silence=36500 * 86400.0)
    await acks.silence(
        store,
        big,
        matcher=Matcher.TASK,
        pattern="*",
        by="mallory",
        reason="forever",
        duration=36500 * 86400.0,
    )
    clock.advance(200)
    dog, notifier, logs = watchdog(store, clock, cfg())
    await dog.tick()
    assert notifier.pages == []
    (held,) = [line for line in logs if line.startswith("silenced (not paged")]
    assert held.startswith("silenced (not paged: silence 1, task * (set to end 21")
    assert """; this reader's [oncall] max_silence = "7d" ends it sooner)): """ in held
    clock.advance(7 * 86400.0 - 200 - 1)
    assert await once(store, clock) == []  # still inside this watchdog's seven days
    clock.advance(1)
    (page,) = await once(store, clock)
    assert page.kind == "incident" and "(1st notice, open 6d23h)" in page.line


async def test_a_silence_by_step_type_or_host_holds_too_and_an_unpaged_incident_ends_quietly(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store, step_type="export")
    await acks.silence(
        store,
        OnCallSettings(),
        matcher=Matcher.STEP_TYPE,
        pattern="export",
        by="ana",
        reason="known flaky",
        duration=7200,
    )
    clock.advance(200)
    assert await once(store, clock) == []
    await store.finish_task("export-2031", owner="w1", token=token, state=TaskState.FAILED)
    assert await once(store, clock) == []  # nobody was paged, so no all-clear either
    clock.advance(7200)
    assert await once(store, clock) == []


async def test_a_silence_for_another_task_changes_nothing(store: Store, clock: FakeClock) -> None:
    await start(store)
    await acks.silence(
        store,
        OnCallSettings(),
        matcher=Matcher.HOST,
        pattern="elsewhere",
        by="ana",
        reason="rack move",
        duration=3600,
    )
    clock.advance(200)
    assert [p.kind for p in await once(store, clock)] == ["incident"]


NIGHTLY = Schedule(name="nightly", step="export", cron="0 3 * * *", grace=600.0)


async def test_a_missed_schedule_is_paged_renotified_and_cleared_by_a_run(
    store: Store, clock: FakeClock
) -> None:
    # 2026-12-01 03:00 UTC is the fire time; the clock starts just before it.
    clock.set(1_796_094_000.0 - 60)
    c = cfg(schedules=(NIGHTLY,))
    assert await once(store, clock, c) == []  # 02:59: the watchdog sees the schedule first
    clock.advance(60 * 5)  # 03:04, no run yet: late, not paged
    dog, notifier, _ = watchdog(store, clock, c)
    await dog.tick()
    assert notifier.pages == []
    assert [v.health for v in dog.monitor.last.schedules] == ["late"]
    clock.advance(60 * 7)  # 03:11: the grace is over
    (page,) = await once(store, clock, c)
    assert page.kind == "incident" and page.health == "missed"
    assert page.line.startswith(
        "nightly missed: no export run started within 10m of 2026-12-01 03:00 UTC"
    )
    clock.advance(60)
    assert await once(store, clock, c) == []
    clock.advance(RENOTIFY)
    (again,) = await once(store, clock, c)
    assert again.kind == "renotify" and "(2nd notice, open 11m00s)" in again.line
    await start(store, "export-late")  # someone ran it by hand
    (clear,) = await once(store, clock, c)
    assert clear.kind == "all_clear"
    assert clear.line.startswith("schedule nightly all clear: now ok (was missed for 11m")


async def test_a_schedule_that_runs_on_time_stays_ok(store: Store, clock: FakeClock) -> None:
    clock.set(1_796_094_000.0 + 30)  # 03:00:30: the run starts
    c = cfg(schedules=(NIGHTLY,))
    token = await start(store, "export-nightly")
    for _ in range(24):  # twelve minutes, beating, past the grace
        clock.advance(30)
        await store.record_heartbeat(
            "export-nightly", parse_line("stage=transform p=10"), owner="w1", token=token
        )
        pages = await once(store, clock, c)
        assert pages == []
    dog, _, _ = watchdog(store, clock, c)
    await dog.tick()
    assert [v.health for v in dog.monitor.last.schedules] == ["ok"]


async def test_a_note_rides_in_the_next_renotify(store: Store, clock: FakeClock) -> None:
    await start(store)
    clock.advance(200)  # stalled
    (first,) = await once(store, clock)
    assert "note by" not in first.line
    clock.advance(RENOTIFY - 300)
    await acks.note(store, "export-2031", "waiting on\x1b[2J partner API", by="ana")
    clock.advance(300)
    (second,) = await once(store, clock)
    assert second.line.endswith(
        "- resume or discard; note by ana 5m00s ago: waiting on\\x1b[2J partner API "
        "(2nd notice, open 10m00s)"
    )
