"""Acks and silences in the store, on both backends: written with the store's clock, read back
while in force (each silence capped by the reader's max_silence), and every change an event with
who and why; and when each schedule was first seen."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tests.stores import count_rows
from zombietop.clock import FakeClock
from zombietop.config import Config, OnCallSettings, Schedule, default_config
from zombietop.errors import ActionRefused, TaskNotFound
from zombietop.health import ScheduleHealth
from zombietop.heartbeat_line import format_timestamp
from zombietop.judge.monitor import Monitor
from zombietop.model import Ack, EventKind, Matcher, TaskState
from zombietop.oncall import acks
from zombietop.store import Store


async def _task(store: Store, task_id: str = "export-2031", step: str = "export") -> None:
    await store.create_task(task_id=task_id, run_id="r1", step=step, step_type=step, actor="test")


async def test_ack_lasts_until_its_end_and_records_who_and_why(
    store: Store, clock: FakeClock
) -> None:
    await _task(store)
    settings = OnCallSettings()
    ack = await acks.ack(
        store, settings, "export-2031", by="ana", reason="restarting the partner API", duration=600
    )
    assert (ack.by, ack.reason, ack.until - ack.acked_at) == (
        "ana",
        "restarting the partner API",
        600,
    )
    assert [a.task_id for a in await store.acks()] == ["export-2031"]
    event = (await store.events(kind=EventKind.ACK))[0]
    assert event.actor == "ana"
    assert event.data["reason"] == "restarting the partner API"
    assert event.message == "acked by ana for 10m00s: restarting the partner API"
    clock.advance(601)
    assert await store.acks() == []


async def test_unack_removes_it_once(store: Store) -> None:
    await _task(store)
    await acks.ack(store, OnCallSettings(), "export-2031", by="ana")
    ended = await acks.unack(store, "export-2031", by="bob")
    assert ended is not None and ended.by == "ana"
    assert await store.acks() == []
    assert await acks.unack(store, "export-2031", by="bob") is None
    messages = [e.message for e in await store.events(kind=EventKind.ACK)]
    assert messages[0] == "ack by ana ended by bob: unacked"


async def test_ack_of_an_unknown_task_is_refused(store: Store) -> None:
    with pytest.raises(TaskNotFound, match="no task 'nope'"):
        await acks.ack(store, OnCallSettings(), "nope", by="ana")


@pytest.mark.parametrize(
    ("duration", "message"),
    [
        (0.0, "must last longer than zero"),
        (8 * 86400.0, r'longer than \[oncall\] max_silence = "7d"'),
    ],
)
async def test_durations_outside_the_bounds_are_refused(
    store: Store, duration: float, message: str
) -> None:
    await _task(store)
    with pytest.raises(ActionRefused, match=message):
        await acks.ack(store, OnCallSettings(), "export-2031", by="ana", duration=duration)
    with pytest.raises(ActionRefused, match=message):
        await acks.silence(
            store,
            OnCallSettings(),
            matcher=Matcher.HOST,
            pattern="web-3",
            by="ana",
            reason="maintenance",
            duration=duration,
        )


async def test_silence_needs_a_reason(store: Store) -> None:
    with pytest.raises(ActionRefused, match="needs a reason"):
        await acks.silence(
            store,
            OnCallSettings(),
            matcher=Matcher.TASK,
            pattern="export-*",
            by="ana",
            reason="  ",
            duration=60,
        )


async def test_silences_end_by_expiry_or_by_hand(store: Store, clock: FakeClock) -> None:
    settings = OnCallSettings()
    short = await acks.silence(
        store,
        settings,
        matcher=Matcher.TASK,
        pattern="export-*",
        by="ana",
        reason="maintenance night",
        duration=60,
    )
    long = await acks.silence(
        store,
        settings,
        matcher=Matcher.STEP_TYPE,
        pattern="reindex",
        by="bob",
        reason="known slow",
        duration=3600,
    )
    assert [s.silence_id for s in await store.silences()] == [short.silence_id, long.silence_id]
    clock.advance(61)
    assert [s.silence_id for s in await store.silences()] == [long.silence_id]
    with pytest.raises(ActionRefused, match="has already ended"):
        await acks.unsilence(store, short.silence_id, by="bob")
    ended = await acks.unsilence(store, long.silence_id, by="carol")
    assert ended.rule == "step_type reindex"
    assert await store.silences() == []
    with pytest.raises(ActionRefused, match="no silence 999"):
        await acks.unsilence(store, 999, by="carol")
    events = await store.events(kind=EventKind.SILENCE)
    assert [e.data["action"] for e in events] == ["unsilence", "silence", "silence"]
    assert events[0].actor == "carol"


async def test_read_only_refuses_acks_and_silences(
    store: Store, reopen: Callable[..., Awaitable[Store]]
) -> None:
    await _task(store)
    async with await reopen(read_only=True) as ro:
        with pytest.raises(ActionRefused, match="read-only; ack is disabled"):
            await acks.ack(ro, OnCallSettings(), "export-2031", by="ana")
        with pytest.raises(ActionRefused, match="read-only; silence is disabled"):
            await acks.silence(
                ro,
                OnCallSettings(),
                matcher=Matcher.HOST,
                pattern="h",
                by="ana",
                reason="r",
                duration=60,
            )
        with pytest.raises(ActionRefused, match="read-only; unsilence is disabled"):
            await acks.unsilence(ro, 1, by="ana")
        with pytest.raises(ActionRefused, match="read-only; unack is disabled"):
            await acks.unack(ro, "export-2031", by="ana")


async def test_step_runs_say_when_a_step_last_started_and_what_still_runs(
    store: Store, clock: FakeClock
) -> None:
    assert (await store.step_runs("export")).last_started is None
    await _task(store, "export-1")
    lease = await store.acquire_lease("export-1", owner="w", ttl=60)
    first = clock.now()
    clock.advance(30)
    await _task(store, "export-2")
    lease2 = await store.acquire_lease("export-2", owner="w", ttl=60)
    runs = await store.step_runs("export")
    assert (runs.last_started, runs.running_since) == (first + 30, first)
    await store.finish_task("export-1", owner="w", token=lease.token, state=TaskState.SUCCEEDED)
    await store.finish_task("export-2", owner="w", token=lease2.token, state=TaskState.SUCCEEDED)
    runs = await store.step_runs("export")
    assert (runs.last_started, runs.running_since) == (first + 30, None)


# First seen (issue N2 #17): the store remembers when each schedule was first seen.
LEAP_DAY = Schedule(name="leap", step="leap", cron="0 0 29 2 *", grace=600.0)
NIGHTLY = Schedule(name="nightly", step="export", cron="30 2 * * *", grace=600.0)
KEY = {"name": "nightly", "step": "export", "cron": "30 2 * * *", "tz": "UTC"}


async def test_a_schedule_is_first_seen_once(
    store: Store, reopen: Callable[..., Awaitable[Store]]
) -> None:
    assert await store.schedule_seen(**KEY) is None
    assert await store.see_schedule(**KEY, at=1000.0) == 1000.0
    assert await store.see_schedule(**KEY, at=2000.0) == 1000.0  # the first time stays
    assert await store.schedule_seen(**KEY) == 1000.0
    # A changed cron or zone is a new schedule, first seen when it changed.
    assert await store.see_schedule(**{**KEY, "cron": "0 3 * * *"}, at=3000.0) == 3000.0
    assert await store.see_schedule(**{**KEY, "tz": "Europe/Berlin"}, at=4000.0) == 4000.0
    async with await reopen(read_only=True) as ro:
        assert await ro.schedule_seen(**KEY) == 1000.0
    assert await count_rows(store, "schedules_seen") == 3


def _with(*schedules: Schedule, written_at: float | None = None, **oncall: float) -> Config:
    base = default_config()
    return replace(
        base, schedules=schedules, written_at=written_at, oncall=OnCallSettings(**oncall)
    )


async def test_a_new_leap_day_schedule_is_not_missed_for_2024(
    store: Store, clock: FakeClock
) -> None:
    clock.set(datetime(2026, 6, 1, 12, tzinfo=UTC).timestamp())
    snapshot = await Monitor(store, _with(LEAP_DAY), clock=clock).poll()
    (view,) = snapshot.schedules
    assert view.health is ScheduleHealth.OK, view.line
    assert view.first_seen == clock.now()
    assert await store.schedule_seen(name="leap", step="leap", cron="0 0 29 2 *", tz="UTC") == (
        clock.now()
    )


async def test_fire_times_after_the_first_sight_are_judged(
    store: Store, clock: FakeClock, reopen: Callable[..., Awaitable[Store]]
) -> None:
    """Seen at 01:00 by a reader that can write; at 02:41 every reader, a fresh one and a
    read-only one too, calls the 02:30 fire time missed."""
    clock.set(datetime(2026, 6, 1, 1, tzinfo=UTC).timestamp())
    (first,) = (await Monitor(store, _with(NIGHTLY), clock=clock).poll()).schedules
    assert first.health is ScheduleHealth.OK
    clock.advance(101 * 60)
    (again,) = (await Monitor(store, _with(NIGHTLY), clock=clock).poll()).schedules
    assert again.health is ScheduleHealth.MISSED, again.line
    async with await reopen(read_only=True) as ro:
        (view,) = (await Monitor(ro, _with(NIGHTLY), clock=clock).poll()).schedules
    assert view.health is ScheduleHealth.MISSED
    assert view.first_seen == first.first_seen


async def test_a_read_only_reader_counts_from_when_the_config_was_written(
    store: Store, clock: FakeClock, reopen: Callable[..., Awaitable[Store]]
) -> None:
    clock.set(datetime(2026, 6, 1, 2, 41, tzinfo=UTC).timestamp())
    written = datetime(2026, 6, 1, 1, tzinfo=UTC).timestamp()
    async with await reopen(read_only=True) as ro:
        monitor = Monitor(ro, _with(NIGHTLY, written_at=written), clock=clock)
        (view,) = (await monitor.poll()).schedules
        assert (view.health, view.first_seen) == (ScheduleHealth.MISSED, written)
        # A config written after 02:30: that fire time is not judged.
        later = Monitor(ro, _with(NIGHTLY, written_at=written + 2 * 3600), clock=clock)
        (view,) = (await later.poll()).schedules
        assert view.health is ScheduleHealth.OK
    assert await store.schedule_seen(**KEY) is None  # a read-only reader writes nothing
    (view,) = (
        await Monitor(store, _with(NIGHTLY, written_at=written), clock=clock).poll()
    ).schedules
    assert await store.schedule_seen(**KEY) == written


# Every reader caps a silence at its own max_silence (issue N2 #10).
async def test_a_reader_caps_a_silence_at_its_own_max_silence(
    store: Store, clock: FakeClock
) -> None:
    await _task(store, "export-1")
    big = OnCallSettings(ack_for=7200.0, max_silence=36500 * 86400.0)
    made = await acks.silence(
        store,
        big,
        matcher=Matcher.TASK,
        pattern="*",
        by="mallory",
        reason="forever",
        duration=36500 * 86400.0,
    )
    week = 7 * 86400.0
    (held,) = (await Monitor(store, _with(), clock=clock).poll()).oncall.silences
    assert (held.until, held.set_until) == (made.created_at + week, made.until)
    assert acks.capped_words(held) == (
        f" (set to end {format_timestamp(math.floor(made.until))}; this reader's "
        '[oncall] max_silence = "7d" ends it sooner)'
    )
    (as_set,) = (
        await Monitor(store, _with(max_silence=36500 * 86400.0), clock=clock).poll()
    ).oncall.silences
    assert (as_set.until, as_set.set_until) == (made.until, None)
    assert acks.capped_words(as_set) == ""
    clock.advance(week)
    assert (await Monitor(store, _with(), clock=clock).poll()).oncall.silences == ()
    assert [s.silence_id for s in await store.silences()] == [made.silence_id]


AIRFLOW = "airflow+sqlite:///srv/airflow/airflow.db"
STAGING = "airflow+sqlite:///srv/staging/airflow.db"


async def test_an_ack_on_a_sources_task_is_kept_by_its_source_and_id(
    store: Store, clock: FakeClock
) -> None:
    """The store holds no row of an Airflow task instance; its ack is kept all the same, by
    the source's name and the task id, so another source's task of the same id (and this
    store's own) is acked apart."""
    await _task(store, "etl/load/r")
    settings = OnCallSettings()
    made = await acks.ack(
        store, settings, "etl/load/r", by="ana", reason="on it", duration=600, source=AIRFLOW
    )
    assert (made.task_id, made.source, made.by, made.reason) == (
        "etl/load/r",
        AIRFLOW,
        "ana",
        "on it",
    )
    await acks.ack(store, settings, "etl/load/r", by="bob", duration=900, source=STAGING)
    await acks.ack(store, settings, "etl/load/r", by="cy", duration=300)
    assert sorted((a.source or "", a.by) for a in await store.acks()) == [
        ("", "cy"),
        (AIRFLOW, "ana"),
        (STAGING, "bob"),
    ]
    event = (await store.events(kind=EventKind.ACK))[-1]
    assert (event.task_id, event.data["source"]) == ("etl/load/r", AIRFLOW)

    ended = await acks.unack(store, "etl/load/r", by="dee", source=AIRFLOW)
    assert ended is not None and (ended.by, ended.source) == ("ana", AIRFLOW)
    assert await acks.unack(store, "etl/load/r", by="dee", source=AIRFLOW) is None
    assert sorted(a.source or "" for a in await store.acks()) == ["", STAGING]
    last = (await store.events(kind=EventKind.ACK))[0]
    assert last.message == "ack by ana ended by dee: unacked"
    assert last.data["source"] == AIRFLOW

    clock.advance(901)  # every ack has ended: the next source ack takes the ended ones away
    assert await store.acks() == []
    await acks.ack(store, settings, "etl/other/r", by="ana", duration=60, source=AIRFLOW)
    assert await count_rows(store, "source_acks") == 1
    assert await count_rows(store, "acks") == 1  # this store's own: gone with its task


async def test_an_ack_on_a_sources_task_needs_no_row_and_its_own_needs_one(store: Store) -> None:
    with pytest.raises(TaskNotFound, match="no task 'etl/load/r'"):
        await acks.ack(store, OnCallSettings(), "etl/load/r", by="ana")
    await acks.ack(store, OnCallSettings(), "etl/load/r", by="ana", source=AIRFLOW)
    assert [(a.task_id, a.source) for a in await store.acks()] == [("etl/load/r", AIRFLOW)]


def _ack(task_id: str, source: str | None) -> Ack:
    return Ack(task_id=task_id, by="ana", reason=None, acked_at=0.0, until=100.0, source=source)


@pytest.mark.parametrize(
    ("given", "owners", "acked"),
    [
        pytest.param([_ack("t", None)], {}, {"t": None}, id="own task, own ack"),
        pytest.param([_ack("t", AIRFLOW)], {"t": AIRFLOW}, {"t": AIRFLOW}, id="source's ack"),
        pytest.param([_ack("t", STAGING)], {"t": AIRFLOW}, {}, id="another source's ack"),
        pytest.param([_ack("t", AIRFLOW)], {}, {}, id="source ack, own task"),
        pytest.param([_ack("t", None)], {"t": AIRFLOW}, {}, id="own ack, source's task"),
        pytest.param(
            [_ack("t", None), _ack("t", AIRFLOW), _ack("t", STAGING)],
            {"t": STAGING},
            {"t": STAGING},
            id="three of one id",
        ),
    ],
)
def test_an_ack_counts_only_for_the_task_of_its_own_source(
    given: list[Ack], owners: dict[str, str], acked: dict[str, str | None]
) -> None:
    found = acks.current(50.0, given, [], owners=owners)
    assert {task_id: ack.source for task_id, ack in found.acks.items()} == acked


async def test_the_dashboards_desk_acks_a_sources_task_by_its_source(store: Store) -> None:
    """The dashboard's ack key: the desk asks which source the task came from."""
    owners = {"etl/load/r": AIRFLOW}
    desk = acks.Desk(store, OnCallSettings(), by="ana", source_of=owners.get)
    made = await desk.ack("etl/load/r", reason=None, duration=60)
    assert made.source == AIRFLOW
    ended = await desk.unack("etl/load/r")
    assert ended is not None and ended.source == AIRFLOW


async def test_notes_keep_who_and_when_newest_first(store: Store, clock: FakeClock) -> None:
    await _task(store)
    await acks.note(store, "export-2031", "looking at the\nlogs", by="ana")
    clock.advance(60)
    await acks.note(store, "export-2031", "waiting on partner API", by="bob")
    notes = await store.notes("export-2031")
    assert [(n.by, n.text) for n in notes] == [
        ("bob", "waiting on partner API"),
        ("ana", "looking at the logs"),
    ]
    assert notes[0].at - notes[1].at == 60
    event = (await store.events(kind=EventKind.INCIDENT_NOTE))[0]
    assert (event.actor, event.message) == ("bob", "note by bob: waiting on partner API")


async def test_a_note_on_a_source_task_and_the_refusals(store: Store) -> None:
    note = await acks.note(store, "etl/load/run1", "engine says queued", by="ana", source="af")
    assert note.source == "af"
    assert [n.source for n in await store.notes("etl/load/run1")] == ["af"]
    with pytest.raises(TaskNotFound):
        await acks.note(store, "no-such-task", "hello", by="ana")
    await _task(store)
    with pytest.raises(ActionRefused, match="needs some text"):
        await acks.note(store, "export-2031", "  \n ", by="ana")
    long = await acks.note(store, "export-2031", "x " * 1000, by="ana")
    assert len(long.text) <= acks.NOTE_LIMIT
