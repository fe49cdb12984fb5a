"""Jobs and their runs: `zombietop run --job` and the SDK's `Job(job=...)` start a new run of
one name each night, as real processes against a real SQLite file."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.realprocs import zombietop
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import ConfigError, TaskFinished
from zombietop.model import StepRuns
from zombietop.run.job_runs import claim_run, run_stamp
from zombietop.sdk import Job
from zombietop.store.sqlite import SQLiteStore

RUN_ID = re.compile(r"^nightly-export/\d{8}T\d{6}Z(-\d+)?$")


def _runs(db: Path) -> list[tuple[str, str, int, str, str, str]]:
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT task_id, job, run_number, step, step_type, state FROM tasks ORDER BY run_number"
    ).fetchall()
    con.close()
    return rows


def _run(db: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        zombietop(db, config, "run", *args), capture_output=True, text=True, timeout=60
    )


def test_two_nightly_runs_of_one_job_through_run_job(db: Path, fast_config_path: Path) -> None:
    for _night in range(2):
        result = _run(db, fast_config_path, "--job", "nightly-export", "--", "true")
        assert result.returncode == 0, result.stderr
    runs = _runs(db)
    assert [(job, number, step, kind, state) for _, job, number, step, kind, state in runs] == [
        ("nightly-export", 1, "nightly-export", "nightly-export", "succeeded"),
        ("nightly-export", 2, "nightly-export", "nightly-export", "succeeded"),
    ]
    first, second = runs[0][0], runs[1][0]
    assert RUN_ID.match(first) and RUN_ID.match(second) and first != second
    # The wrapper says which run it started, since nobody named it.
    assert "zombietop: task nightly-export/" in result.stderr


def test_a_named_run_and_the_helpful_error_on_a_finished_task_id(
    db: Path, fast_config_path: Path
) -> None:
    assert (
        _run(db, fast_config_path, "--job", "copyjob", "--run", "r1", "--", "true").returncode == 0
    )
    assert _run(db, fast_config_path, "--task", "single", "--", "true").returncode == 0
    again = _run(db, fast_config_path, "--task", "single", "--", "true")
    assert again.returncode == 2
    assert re.search(
        r"zombietop: single finished \(succeeded \d+s ago\): give each run its own id, or use "
        r"--job single to start a new run of it",
        again.stderr,
    ), again.stderr
    assert "Traceback" not in again.stderr
    named = _run(db, fast_config_path, "--job", "copyjob", "--run", "r1", "--", "true")
    assert named.returncode == 2 and "--job copyjob to start a new run" in named.stderr
    both = _run(db, fast_config_path, "--job", "a", "--task", "b", "--", "true")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_two_nightly_runs_of_one_job_through_the_sdk(
    db: Path, fast_config_path: Path, tmp_path: Path
) -> None:
    script = tmp_path / "nightly.py"
    script.write_text(
        "from zombietop.sdk import Job\n"
        "with Job(job='nightly-export') as job:\n"
        "    job.beat('copy', 100)\n"
        "    print(job.task_id)\n"
    )
    env = {**os.environ, "ZOMBIETOP_DB": str(db), "ZOMBIETOP_CONFIG": str(fast_config_path)}
    seen = []
    for _night in range(2):
        result = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env
        )
        assert result.returncode == 0, result.stderr
        seen.append(result.stdout.strip())
    runs = _runs(db)
    assert [row[0] for row in runs] == seen and len(set(seen)) == 2
    assert all(RUN_ID.match(task_id) for task_id in seen)
    assert [(row[2], row[5]) for row in runs] == [(1, "succeeded"), (2, "succeeded")]


def test_the_sdk_under_run_job_adopts_the_wrappers_run(
    db: Path, fast_config_path: Path, tmp_path: Path
) -> None:
    script = tmp_path / "wrapped.py"
    script.write_text(
        "from zombietop.sdk import Job\n"
        "with Job(job='nightly-export') as job:\n"
        "    assert job.still_owner()\n"
        "    job.beat('inside', 42)\n"
    )
    env = {**os.environ, "ZOMBIETOP_CONFIG": str(fast_config_path)}
    result = subprocess.run(
        zombietop(
            db,
            fast_config_path,
            "run",
            "--job",
            "nightly-export",
            "--",
            sys.executable,
            str(script),
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert [(row[2], row[5]) for row in _runs(db)] == [(1, "succeeded")]


def test_the_sdk_raises_a_clear_error_on_a_finished_task_id(
    db: Path, fast_config_path: Path, tmp_path: Path
) -> None:
    config = load_config(fast_config_path)
    with Job("copyjob", db=db, config=config):
        pass
    with pytest.raises(TaskFinished) as raised, Job("copyjob", db=db, config=config):
        pass
    assert str(raised.value).startswith("copyjob finished (succeeded ")
    assert "use --job copyjob to start a new run of it" in str(raised.value)
    # Raised on its own: no store frames chained behind the message.
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


async def test_runs_in_one_second_are_made_unique_and_numbered(db: Path) -> None:
    clock = FakeClock(1_764_556_200.0)  # 2025-12-01T02:30:00Z
    store = await SQLiteStore.open(db, create=True, clock=clock)
    try:
        ids = []
        for _ in range(3):
            claim = await claim_run(store, job="export", owner="test", ttl=60.0)
            ids.append((claim.task.task_id, claim.task.run_number, claim.task.step_type))
        stamp = run_stamp(clock.now())
        assert ids == [
            (f"export/{stamp}", 1, "export"),
            (f"export/{stamp}-2", 2, "export"),
            (f"export/{stamp}-3", 3, "export"),
        ]
        assert stamp == "20251201T023000Z"
        runs = await store.step_runs("export", job="export")
        assert runs == StepRuns(last_started=clock.now(), running_since=clock.now())
        assert await store.step_runs("no-such-step", job="export") == runs
    finally:
        await store.close()


def test_a_schedule_names_a_job_or_a_step(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[schedules.nightly]\njob = "nightly-export"\ncron = "30 2 * * *"\n')
    (schedule,) = load_config(path).schedules
    assert (schedule.job, schedule.step) == ("nightly-export", "nightly-export")
    path.write_text('[schedules.nightly]\njob = "x"\nstep = "y"\ncron = "30 2 * * *"\n')
    with pytest.raises(ConfigError, match="give one of step"):
        load_config(path)
