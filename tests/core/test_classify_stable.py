"""``Verdict.stable_until``: the promise a dashboard leans on to reuse a verdict between polls.

Until that moment the same inputs must give the same health, flags and reason codes; only the
ages and countdowns may move, and a verdict carries the moments they are read from, so read at a
later ``now`` it says what a verdict reached then says. A promise that runs too long would leave a stalled task showing
healthy, so it is checked against ``classify`` itself over generated tasks, and pinned exactly
for the thresholds a fleet crosses most.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zombietop.config import default_limits
from zombietop.judge.classify import classify
from zombietop.judge.verdict import Verdict
from zombietop.model import Heartbeat, Lease, ProcessSample, Task, TaskState

NOW = 1_796_000_000.0
LIMITS = default_limits()  # heartbeat 2m, lease 5m, progress 30m, grace 1m; 90s < 15m < 6h


def judged(verdict: Verdict) -> tuple[object, ...]:
    return verdict.health, verdict.flags, tuple(r.code for r in verdict.reasons)


def read(verdict: Verdict, now: float) -> tuple[object, ...]:
    """Every age, countdown and word the faces read from a verdict at ``now``."""
    return (
        verdict.context(now),
        tuple((r.words(now), r.age(now), r.limit) for r in verdict.reasons),
        verdict.heartbeat_age(now),
        verdict.lease_expires_in(now),
        verdict.budgets(now),
    )


# Offsets around now wide enough to straddle every limit (the task budget is 6 h).
offsets = st.floats(min_value=-8 * 3600, max_value=600, allow_nan=False)


@st.composite
def inputs(draw: st.DrawFn) -> tuple[Task, Lease | None, Heartbeat | None, ProcessSample | None]:
    state = draw(st.sampled_from(list(TaskState)))
    created = NOW + draw(offsets)
    task = Task(
        task_id="t",
        run_id="r",
        step="s",
        step_type="default",
        state=state,
        created_at=created,
        claimed_at=draw(st.none() | st.just(created + 1)),
        started_at=draw(st.none() | st.just(created + 2)),
        finished_at=NOW - 5 if state.finished else None,
        updated_at=NOW,
        pid=4121,
        quarantined_at=draw(st.none() | offsets.map(lambda o: NOW + o)),
    )
    lease = None
    if draw(st.booleans()):
        lease = Lease(
            task_id="t",
            owner=draw(st.none() | st.just("w@h")),
            token=1,
            expires_at=NOW + draw(offsets),
        )
    beat = None
    if draw(st.booleans()):
        written = NOW + draw(st.floats(min_value=-8 * 3600, max_value=0))
        request = draw(st.booleans())
        beat = Heartbeat(
            task_id="t",
            stage="transform",
            progress=draw(st.none() | st.floats(min_value=0, max_value=100)),
            written_at=written,
            progress_changed_at=written - draw(st.floats(min_value=0, max_value=3 * 3600)),
            stage_started_at=written - draw(st.floats(min_value=0, max_value=3600)),
            request_name="fetch" if request else None,
            request_started_at=written - draw(st.floats(min_value=0, max_value=300))
            if request
            else None,
        )
    process = None
    if draw(st.booleans()):
        process = ProcessSample(
            pid=4121,
            alive=draw(st.booleans()),
            identity_ok=draw(st.booleans()),
            status=draw(st.sampled_from(["running", "sleeping", "zombie"])),
            sampled_at=NOW,
        )
    return task, lease, beat, process


@settings(max_examples=400, deadline=None)
@given(inputs(), st.floats(min_value=0, max_value=1, exclude_max=True))
def test_nothing_but_ages_change_before_stable_until(
    case: tuple[Task, Lease | None, Heartbeat | None, ProcessSample | None], fraction: float
) -> None:
    task, lease, beat, process = case
    first = classify(NOW, task, lease, beat, process, LIMITS)
    assert first.stable_until >= NOW
    end = first.stable_until if math.isfinite(first.stable_until) else NOW + 30 * 86400
    for later in (NOW + (end - NOW) * fraction, math.nextafter(end, NOW)):
        if later < NOW:
            continue
        again = classify(later, task, lease, beat, process, LIMITS)
        assert judged(again) == judged(first), f"changed at {later - NOW:+.3f}s"
        assert read(first, later) == read(again, later), f"read at {later - NOW:+.3f}s"


def running(**overrides: Any) -> Task:
    fields: dict[str, Any] = {
        "task_id": "t",
        "run_id": "r",
        "step": "s",
        "step_type": "default",
        "state": TaskState.RUNNING,
        "created_at": NOW - 600,
        "claimed_at": NOW - 600,
        "started_at": NOW - 600,
        "updated_at": NOW,
    }
    fields.update(overrides)
    return Task(**fields)


def beat_at(written: float, progress_changed: float, stage_started: float) -> Heartbeat:
    return Heartbeat(
        task_id="t",
        written_at=written,
        progress_changed_at=progress_changed,
        stage_started_at=stage_started,
    )


def held_until(expires_at: float) -> Lease:
    return Lease(task_id="t", owner="w@h", token=1, expires_at=expires_at)


@pytest.mark.parametrize(
    ("case", "lease", "beat", "until", "then"),
    [
        # The heartbeat goes stale first: 2 min after it was written.
        (
            "stale next",
            held_until(NOW + 290),
            beat_at(NOW - 5, NOW - 5, NOW - 60),
            NOW + 115,
            "stalled",
        ),
        # The lease runs out before the heartbeat is late.
        (
            "lease next",
            held_until(NOW + 30),
            beat_at(NOW - 5, NOW - 5, NOW - 60),
            NOW + 30,
            "reclaimable",
        ),
        # Beating but stuck: spinning once progress is unchanged for 30 min.
        (
            "stuck next",
            held_until(NOW + 290),
            beat_at(NOW - 1, NOW - 1790, NOW - 60),
            NOW + 10,
            "spinning",
        ),
        # Already stalled: what comes next is the stage budget (15 min), a flag.
        (
            "budget next",
            held_until(NOW + 290),
            beat_at(NOW - 850, NOW - 850, NOW - 880),
            NOW + 20,
            "stalled",
        ),
    ],
)
def test_stable_until_is_the_next_threshold(
    case: str, lease: Lease, beat: Heartbeat, until: float, then: str
) -> None:
    task = running()
    verdict = classify(NOW, task, lease, beat, None, LIMITS)
    assert verdict.stable_until == pytest.approx(until, abs=1e-6), case
    after = classify(until + 0.001, task, lease, beat, None, LIMITS)
    assert judged(after) != judged(verdict), case
    assert str(after.health) == then, case


@pytest.mark.parametrize(
    "state", [TaskState.SUCCEEDED, TaskState.FAILED, TaskState.QUEUED, TaskState.INTERRUPTED]
)
def test_a_task_not_executing_is_stable_for_good(state: TaskState) -> None:
    task = running(state=state, finished_at=NOW - 60 if state.finished else None)
    assert classify(NOW, task, None, None, None, LIMITS).stable_until == math.inf
