"""Acks and silences in the store, on both backends: written with the store's clock, read back
while in force, and every change an event with who and why."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from zombietop import oncall
from zombietop.clock import FakeClock
from zombietop.config import OnCallSettings
from zombietop.errors import ActionRefused, TaskNotFound
from zombietop.model import EventKind, Matcher, TaskState
from zombietop.store import Store


async def _task(store: Store, task_id: str = "export-2031", step: str = "export") -> None:
    await store.create_task(task_id=task_id, run_id="r1", step=step, step_type=step, actor="test")


async def test_ack_lasts_until_its_end_and_records_who_and_why(
    store: Store, clock: FakeClock
) -> None:
    await _task(store)
    settings = OnCallSettings()
    ack = await oncall.ack(
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
    await oncall.ack(store, OnCallSettings(), "export-2031", by="ana")
    ended = await oncall.unack(store, "export-2031", by="bob")
    assert ended is not None and ended.by == "ana"
    assert await store.acks() == []
    assert await oncall.unack(store, "export-2031", by="bob") is None
    messages = [e.message for e in await store.events(kind=EventKind.ACK)]
    assert messages[0] == "ack by ana ended by bob: unacked"


async def test_ack_of_an_unknown_task_is_refused(store: Store) -> None:
    with pytest.raises(TaskNotFound, match="no task 'nope'"):
        await oncall.ack(store, OnCallSettings(), "nope", by="ana")


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
        await oncall.ack(store, OnCallSettings(), "export-2031", by="ana", duration=duration)
    with pytest.raises(ActionRefused, match=message):
        await oncall.silence(
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
        await oncall.silence(
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
    short = await oncall.silence(
        store,
        settings,
        matcher=Matcher.TASK,
        pattern="export-*",
        by="ana",
        reason="maintenance night",
        duration=60,
    )
    long = await oncall.silence(
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
        await oncall.unsilence(store, short.silence_id, by="bob")
    ended = await oncall.unsilence(store, long.silence_id, by="carol")
    assert ended.rule == "step_type reindex"
    assert await store.silences() == []
    with pytest.raises(ActionRefused, match="no silence 999"):
        await oncall.unsilence(store, 999, by="carol")
    events = await store.events(kind=EventKind.SILENCE)
    assert [e.data["action"] for e in events] == ["unsilence", "silence", "silence"]
    assert events[0].actor == "carol"


async def test_read_only_refuses_acks_and_silences(
    store: Store, reopen: Callable[..., Awaitable[Store]]
) -> None:
    await _task(store)
    async with await reopen(read_only=True) as ro:
        with pytest.raises(ActionRefused, match="read-only; ack is disabled"):
            await oncall.ack(ro, OnCallSettings(), "export-2031", by="ana")
        with pytest.raises(ActionRefused, match="read-only; silence is disabled"):
            await oncall.silence(
                ro,
                OnCallSettings(),
                matcher=Matcher.HOST,
                pattern="h",
                by="ana",
                reason="r",
                duration=60,
            )
        with pytest.raises(ActionRefused, match="read-only; unsilence is disabled"):
            await oncall.unsilence(ro, 1, by="ana")
        with pytest.raises(ActionRefused, match="read-only; unack is disabled"):
            await oncall.unack(ro, "export-2031", by="ana")


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
