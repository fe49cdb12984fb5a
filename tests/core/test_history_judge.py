"""A run judged against its job's history, with real short runs of `zombietop run --job`:
slower_than_usual past 2x the median of 5 runs, finished_too_fast under 0.1x, nothing judged
before history_min_runs successes, and failed runs kept out of the median."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, wait_for, zombietop
from tests.core.test_watchdog import watchdog
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.health import Flag
from zombietop.job_summary import JobSummary
from zombietop.judge.history_judge import judge_history
from zombietop.judge.monitor import Monitor, Snapshot
from zombietop.model import Task, TaskState
from zombietop.store.sqlite import SQLiteStore

HISTORY = '\n[history]\nhistory_min_runs = 5\nslow_after = 2.0\nslow_min = "0s"\n'


@pytest.fixture
def judged_config(tmp_path: Path) -> Path:
    path = tmp_path / "judged.toml"
    path.write_text(FAST_CONFIG + HISTORY)
    return path


def _runs_at_once(db: Path, config: Path, count: int, script: str, expect: int = 0) -> None:
    """``count`` runs of the job ``nightly`` side by side (their names made unique)."""
    procs = [
        subprocess.Popen(
            zombietop(db, config, "run", "--job", "nightly", "--", "sh", "-c", script),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(count)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == expect, err


async def _look(db: Path, config: Path, at: float) -> Snapshot:
    """One poll of the store, judged at the store time ``at``."""
    store = await SQLiteStore.open(db, clock=FakeClock(at))
    try:
        snapshot = await Monitor(store, load_config(config), include_finished=True).poll()
    finally:
        await store.close()
    assert snapshot.ok, snapshot.error
    return snapshot


async def _running_run(db: Path, config: Path, children: Children) -> Task:
    wrapper = children.start(
        zombietop(db, config, "run", "--job", "nightly", "--", "sleep", "30"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    found: list[Task] = []

    async def running() -> bool:
        store = await SQLiteStore.open(db)
        try:
            found[:] = [run for run in await store.job_runs("nightly", 50) if run.state.executing]
        finally:
            await store.close()
        return bool(found)

    await wait_for(running, timeout=30, what="the long run to start", while_running=wrapper)
    return found[0]


def _median(snapshot: Snapshot) -> float:
    median = snapshot.jobs["nightly"].median_s
    assert median is not None
    return median


async def test_slower_than_usual_past_twice_the_median_of_five_runs(
    db: Path, judged_config: Path, children: Children
) -> None:
    _runs_at_once(db, judged_config, 5, "sleep 0.3")
    run = await _running_run(db, judged_config, children)
    begun = run.started_at or run.claimed_at or run.created_at
    median = _median(await _look(db, judged_config, begun))

    early = (await _look(db, judged_config, begun + 1.9 * median)).by_id()[run.task_id]
    assert Flag.SLOWER_THAN_USUAL not in early.verdict.flags
    late_at = begun + 2.1 * median
    late = (await _look(db, judged_config, late_at)).by_id()[run.task_id]
    assert Flag.SLOWER_THAN_USUAL in late.verdict.flags
    line = late.verdict.context(late_at)
    assert line.startswith(f"{run.task_id} ") and "slower_than_usual" in line
    assert re.search(r"running \d+s, usually \d+s \(p95 \d+s\)", line), line

    # `status` says it as a WARNING, once the real run is past twice the median.
    seen: list[subprocess.CompletedProcess[str]] = []

    def warned() -> bool:
        seen[:] = [
            subprocess.run(
                zombietop(db, judged_config, "status", "--json"),
                capture_output=True,
                text=True,
                timeout=30,
            )
        ]
        tasks = {task["task_id"]: task for task in json.loads(seen[0].stdout)["tasks"]}
        return "slower_than_usual" in tasks[run.task_id]["flags"]

    await wait_for(warned, timeout=30, what="status to flag the slow run")
    assert seen[0].returncode == 1


async def test_the_watchdog_pages_a_run_slower_than_usual_once(
    db: Path, judged_config: Path, children: Children
) -> None:
    """One page when the run passes twice its job's median, none at 1.9x, and no second one."""
    _runs_at_once(db, judged_config, 5, "sleep 0.3")
    run = await _running_run(db, judged_config, children)
    begun = run.started_at or run.claimed_at or run.created_at
    median = _median(await _look(db, judged_config, begun))
    clock = FakeClock(begun + 1.9 * median)
    store = await SQLiteStore.open(db, clock=clock)
    try:
        dog, notifier, _ = watchdog(store, clock, load_config(judged_config))
        await dog.tick()
        assert notifier.pages == []
        clock.advance(0.2 * median)
        await dog.tick()
        await dog.tick()
    finally:
        await store.close()
    assert [page.kind for page in notifier.pages] == ["slower_than_usual"]
    assert re.search(r"running \d+s, usually \d+s \(p95 \d+s\)", notifier.pages[0].line)


async def test_finished_too_fast_under_a_tenth_of_the_median(db: Path, judged_config: Path) -> None:
    _runs_at_once(db, judged_config, 5, "sleep 2")
    _runs_at_once(db, judged_config, 1, "true")
    store = await SQLiteStore.open(db)
    try:
        (fast, *_) = await store.job_runs("nightly", 1)
        now = await store.now()
    finally:
        await store.close()
    view = (await _look(db, judged_config, now)).by_id()[fast.task_id]
    assert Flag.FINISHED_TOO_FAST in view.verdict.flags
    line = view.verdict.context(now)
    assert "succeeded, finished_too_fast" in line and "usually 2s" in line
    status = subprocess.run(
        zombietop(db, judged_config, "status", "--all"), capture_output=True, text=True, timeout=30
    )
    assert status.returncode == 1, status.stdout


async def test_the_watchdog_pages_a_run_that_finished_too_fast_once(
    db: Path, judged_config: Path
) -> None:
    """A backup that copied nothing: one page, with the job's usual time, and no second one."""
    _runs_at_once(db, judged_config, 5, "sleep 2")
    _runs_at_once(db, judged_config, 1, "true")
    store = await SQLiteStore.open(db)
    try:
        (fast, *_) = await store.job_runs("nightly", 1)
        dog, notifier, _ = watchdog(store, FakeClock(await store.now()), load_config(judged_config))
        await dog.tick()
        await dog.tick()
    finally:
        await store.close()
    pages = [(page.kind, page.line) for page in notifier.pages]
    assert [kind for kind, _ in pages] == ["finished_too_fast"], pages
    line = pages[0][1]
    assert line.startswith(f"{fast.task_id} succeeded, finished_too_fast") and "usually 2s" in line


async def test_fewer_than_min_runs_judge_nothing_and_failures_keep_out_of_the_median(
    db: Path, judged_config: Path, children: Children
) -> None:
    _runs_at_once(db, judged_config, 4, "sleep 0.3")
    # Long failures: were they counted, the median would move and there would be 5 runs.
    _runs_at_once(db, judged_config, 3, "sleep 1.5; exit 3", expect=3)
    run = await _running_run(db, judged_config, children)
    begun = run.started_at or run.claimed_at or run.created_at
    snapshot = await _look(db, judged_config, begun + 15)  # 15 s: 40x the median, in budget
    summary = snapshot.jobs["nightly"]
    assert (summary.runs, summary.succeeded, len(summary.durations)) == (7, 4, 4)
    assert _median(snapshot) < 1.0
    assert snapshot.by_id()[run.task_id].verdict.flags == ()


def _run(state: TaskState, took: float | None, *, start: float = 1000.0) -> Task:
    return Task(
        task_id="nightly/x",
        run_id="x",
        step="nightly",
        step_type="nightly",
        state=state,
        created_at=start,
        started_at=start,
        finished_at=None if took is None else start + took,
        updated_at=start,
        job="nightly",
    )


@pytest.mark.parametrize(
    ("state", "took", "at", "durations", "flag"),
    [
        # Running: 2x the median of 100 s is 200 s, and slow_min 5m puts it at 400 s.
        (TaskState.RUNNING, None, 399.0, (100.0,) * 5, None),
        (TaskState.RUNNING, None, 401.0, (100.0,) * 5, Flag.SLOWER_THAN_USUAL),
        (TaskState.RUNNING, None, 9999.0, (100.0,) * 4, None),
        (TaskState.SUCCEEDED, 9.0, 0.0, (100.0,) * 5, Flag.FINISHED_TOO_FAST),
        # Its own duration is in the summary already: 5 others are needed besides it.
        (TaskState.SUCCEEDED, 9.0, 0.0, (100.0,) * 4 + (9.0,), None),
        (TaskState.SUCCEEDED, 11.0, 0.0, (100.0,) * 5, None),
        (TaskState.FAILED, 1.0, 0.0, (100.0,) * 5, None),
    ],
)
def test_history_rules(
    state: TaskState, took: float | None, at: float, durations: tuple[float, ...], flag: Flag | None
) -> None:
    limits = load_config(None).defaults
    task = _run(state, took)
    summary = JobSummary(name="nightly", durations=durations, runs=len(durations))
    verdict, _ = judge_history(1000.0 + at, task, summary, limits)
    assert (None if verdict is None else verdict.flag) == flag
