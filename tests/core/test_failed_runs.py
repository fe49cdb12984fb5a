"""A failed run is an incident: real runs of `zombietop run --job`, a watchdog on the same
SQLite file, and `status` exiting CRITICAL while the failure is open."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from tests.core.realprocs import FAST_CONFIG, zombietop
from tests.core.test_watchdog import watchdog
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.model import TaskState
from zombietop.store.sqlite import SQLiteStore
from zombietop.tui.testing import NOW, sample_snapshot
from zombietop.watch.failed_runs import failure_line

FAILS = (
    'echo "stage=copy p=40" >> "$ZOMBIETOP_HEARTBEAT_FILE"; echo "rsync: connection reset"; exit 3'
)
PAGE = re.compile(
    r"^nightly-export/\d{8}T\d{6}Z failed: exit 3 after \d+s at stage=copy p=40%; "
    r"last output \d+s ago: rsync: connection reset - rerun, resume or discard$"
)


def _run(db: Path, config: Path, script: str) -> int:
    argv = zombietop(db, config, "run", "--job", "nightly-export", "--", "sh", "-c", script)
    return subprocess.run(argv, capture_output=True, timeout=60).returncode


def _status(db: Path, config: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    argv = zombietop(db, config, "status", *(flags or ("--nagios",)))
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def _incidents_open(metrics: str) -> float:
    (line,) = [line for line in metrics.splitlines() if line.startswith("zombietop_incidents_open")]
    return float(line.split()[-1])


def _short_window(tmp_path: Path) -> Path:
    config = tmp_path / "window.toml"
    config.write_text(FAST_CONFIG + '\n[monitor]\nfinished_window = "1s"\n')
    return config


def _left_the_window(db: Path, config: Path) -> None:
    """Wait until ``status --json`` no longer shows the finished runs (1s window)."""
    deadline = time.monotonic() + 20
    while '"tasks": []' not in _status(db, config, "--json").stdout:
        assert time.monotonic() < deadline, "the run never left the finished window"


async def test_a_failed_run_pages_once_and_the_next_success_sends_the_all_clear(
    db: Path, fast_config_path: Path
) -> None:
    assert _run(db, fast_config_path, FAILS) == 3
    store = await SQLiteStore.open(db)
    try:
        dog, notifier, _ = watchdog(store, FakeClock(time.time()), load_config(fast_config_path))
        await dog.tick()
        await dog.tick()
        assert [page.kind for page in notifier.pages] == ["incident"]
        assert PAGE.match(notifier.pages[0].line), notifier.pages[0].line
        status = _status(db, fast_config_path)
        assert status.returncode == 2, status.stdout
        assert status.stdout.startswith("ZOMBIETOP CRITICAL - 1 failed run")

        assert _run(db, fast_config_path, "true") == 0
        await dog.tick()
        await dog.tick()
        assert [page.kind for page in notifier.pages] == ["incident", "all_clear"]
        clear = notifier.pages[1].line
        assert re.match(
            r"^nightly-export/\S+ all clear: now a later run of nightly-export succeeded "
            r"\(was failed for \d+s\)$",
            clear,
        ), clear
        assert _status(db, fast_config_path).returncode == 0
    finally:
        await store.close()


async def test_page_on_failure_false_turns_it_off(db: Path, tmp_path: Path) -> None:
    config = tmp_path / "quiet.toml"
    config.write_text(FAST_CONFIG + "\n[step_types.nightly-export]\npage_on_failure = false\n")
    assert _run(db, config, FAILS) == 3
    store = await SQLiteStore.open(db)
    try:
        dog, notifier, _ = watchdog(store, FakeClock(time.time()), load_config(config))
        await dog.tick()
        assert notifier.pages == []
    finally:
        await store.close()
    assert _status(db, config).returncode == 0


async def test_resuming_or_discarding_the_failed_run_ends_it(
    db: Path, fast_config_path: Path
) -> None:
    assert _run(db, fast_config_path, FAILS) == 3
    store = await SQLiteStore.open(db)
    try:
        dog, notifier, _ = watchdog(store, FakeClock(time.time()), load_config(fast_config_path))
        await dog.tick()
        (run,) = await store.job_runs("nightly-export", 1)
        lease = await store.get_lease(run.task_id)
        assert lease is not None
        await store.discard_task(run.task_id, expected_token=lease.token, actor="t")
        await dog.tick()
        assert [page.kind for page in notifier.pages] == ["incident", "all_clear"]
        assert " all clear: now discarded (was failed for " in notifier.pages[1].line
    finally:
        await store.close()
    assert _status(db, fast_config_path).returncode == 0


async def test_a_failed_run_is_renotified_until_acked(db: Path, fast_config_path: Path) -> None:
    assert _run(db, fast_config_path, FAILS) == 3
    config = load_config(fast_config_path)
    clock = FakeClock(time.time())
    store = await SQLiteStore.open(db, clock=clock)  # one clock: no jump for the watchdog
    try:
        dog, notifier, _ = watchdog(store, clock, config)
        await dog.tick()
        clock.advance(config.watch.renotify + 1)
        await dog.tick()
        assert [page.kind for page in notifier.pages] == ["incident", "renotify"]
        assert "(2nd notice, open " in notifier.pages[1].line
        assert notifier.pages[1].line.startswith("nightly-export/")
        (run,) = await store.job_runs("nightly-export", 1)
        await store.ack_task(run.task_id, by="oncall", reason="on it", duration=7200)
        clock.advance(config.watch.renotify + 1)
        await dog.tick()
        assert [page.kind for page in notifier.pages] == ["incident", "renotify"]
    finally:
        await store.close()


def test_status_stays_critical_past_the_finished_window(db: Path, tmp_path: Path) -> None:
    """Once the failed run has left the window it is still the latest run of its job: the
    jobs table says so, and ``status`` stays CRITICAL until a run succeeds; the Prometheus
    ``zombietop_incidents_open`` counts it."""
    config = _short_window(tmp_path)
    assert _run(db, config, FAILS) == 3
    assert _incidents_open(_status(db, config, "--prometheus").stdout) == 1
    _left_the_window(db, config)
    later = _status(db, config)
    assert later.returncode == 2, later.stdout + later.stderr
    assert later.stdout.startswith("ZOMBIETOP CRITICAL - 1 failed run"), later.stdout
    assert "nightly-export/" in later.stdout.splitlines()[-1], later.stdout
    assert _incidents_open(_status(db, config, "--prometheus").stdout) == 1
    assert _run(db, config, "true") == 0
    assert _status(db, config).returncode == 0
    assert _incidents_open(_status(db, config, "--prometheus").stdout) == 0


async def test_a_resumed_failed_run_past_the_window_is_no_longer_critical(
    db: Path, tmp_path: Path
) -> None:
    config = _short_window(tmp_path)
    assert _run(db, config, FAILS) == 3
    _left_the_window(db, config)
    assert _status(db, config).returncode == 2
    store = await SQLiteStore.open(db)
    try:
        (run,) = await store.job_runs("nightly-export", 1)
        lease = await store.get_lease(run.task_id)
        assert lease is not None
        await store.resume_task(run.task_id, expected_token=lease.token, actor="t")
    finally:
        await store.close()
    assert "failed run" not in _status(db, config).stdout


async def test_a_resumed_failed_run_that_then_succeeds_counts_once(
    db: Path, tmp_path: Path
) -> None:
    config = _short_window(tmp_path)
    assert _run(db, config, FAILS) == 3
    store = await SQLiteStore.open(db)
    try:
        (run,) = await store.job_runs("nightly-export", 1)
        lease = await store.get_lease(run.task_id)
        assert lease is not None
        await store.resume_task(run.task_id, expected_token=lease.token, actor="t")
        done = await store.acquire_lease(run.task_id, owner="t", ttl=30)
        await store.finish_task(run.task_id, owner="t", token=done.token, state=TaskState.SUCCEEDED)
        (summary,) = await store.job_summaries()
    finally:
        await store.close()
    assert (summary.runs, summary.succeeded) == (1, 1)
    assert summary.last_outcome is TaskState.SUCCEEDED


def test_an_engine_tasks_failure_page_names_the_engines_actions() -> None:
    """zombietop refuses rerun, resume and discard for an engine's task: its failure page ends
    with what works, as its stalled page does."""
    view = sample_snapshot().by_id()["backup-0731"]
    assert view.task.state is TaskState.FAILED
    assert failure_line(view, None, NOW).endswith(" - rerun, resume or discard")
    actions = "clear it in Airflow, mark it failed, or kill it"
    airflow = replace(view, limits=replace(view.limits, engine="Airflow", engine_actions=actions))
    line = failure_line(airflow, None, NOW)
    assert line.endswith(f" - {actions}") and "rerun" not in line
