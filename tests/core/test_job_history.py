"""A job's history: `zombietop history`, the summary in `status --json` and in the Prometheus
metrics, read from real runs of `zombietop run --job` in a real SQLite file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.core.realprocs import zombietop
from tests.stores import Reopen
from zombietop.clock import FakeClock
from zombietop.heartbeat_line import BeatLine
from zombietop.job_summary import HISTORY_WINDOW, JobSummary, percentile
from zombietop.judge.job_book import JobBook
from zombietop.model import Task, TaskState
from zombietop.run.job_runs import claim_run
from zombietop.store import Store
from zombietop.store.postgres import PostgresStore
from zombietop.store.sqlite import SCHEMA_VERSION as SQLITE_VERSION
from zombietop.store.sqlite import SQLiteStore


def _zombietop(db: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(zombietop(db, config, *args), capture_output=True, text=True, timeout=60)


def _nightly(db: Path, config: Path, script: str) -> None:
    result = _zombietop(db, config, "run", "--job", "nightly", "--", "sh", "-c", script)
    assert result.returncode in (0, 3), result.stderr


def test_history_lists_the_runs_and_the_summary_counts_only_successes(
    db: Path, fast_config_path: Path
) -> None:
    for seconds in ("0.2", "0.4", "0.6"):
        _nightly(db, fast_config_path, f"sleep {seconds}")
    # A failure that ran long: it must not move the median.
    _nightly(db, fast_config_path, 'sleep 1.5; echo "rsync: connection reset"; exit 3')

    result = _zombietop(db, fast_config_path, "history", "nightly", "--json")
    assert result.returncode == 0, result.stderr
    history: dict[str, Any] = json.loads(result.stdout)
    job = history["job"]
    assert (job["runs"], job["succeeded"], job["last_outcome"]) == (4, 3, "failed")
    assert job["success_rate"] == 0.75
    assert 0.4 <= job["median_s"] < 1.0 and job["median_s"] <= job["p95_s"] < 1.2
    runs = history["runs"]
    assert [run["run_number"] for run in runs] == [4, 3, 2, 1]
    assert [run["outcome"] for run in runs] == ["failed", "succeeded", "succeeded", "succeeded"]
    assert runs[0]["last_output"] == "rsync: connection reset" and runs[0]["exit_code"] == 3
    assert runs[1]["last_output"] is None and runs[0]["attempts"] == 1

    last = _zombietop(db, fast_config_path, "history", "nightly", "--last", "1")
    assert last.returncode == 0, last.stderr
    lines = last.stdout.splitlines()
    assert lines[0].startswith("nightly: 4 runs, 75% succeeded, median ")
    assert lines[0].endswith(", last failed")
    assert len(lines) == 4 and lines[3].split()[0] == "#4"
    assert "last output: rsync: connection reset" in lines[3]

    missing = _zombietop(db, fast_config_path, "history", "weekly")
    assert missing.returncode == 2 and "no run of job weekly" in missing.stderr

    status = _zombietop(db, fast_config_path, "status", "--json", "--all")
    tasks = json.loads(status.stdout)["tasks"]
    assert {task["job"]["name"] for task in tasks} == {"nightly"}
    summary = tasks[0]["job"]
    assert {"name", "runs", "median_s", "p95_s", "last_outcome"} <= summary.keys()
    assert (summary["runs"], summary["last_outcome"]) == (4, "failed")
    assert sorted(task["run_number"] for task in tasks) == [1, 2, 3, 4]

    metrics = _zombietop(db, fast_config_path, "status", "--prometheus").stdout
    assert 'zombietop_job_duration_seconds_count{job="nightly"} 3.0' in metrics
    assert 'zombietop_job_last_success_timestamp_seconds{job="nightly"}' in metrics


async def test_the_book_reads_only_the_jobs_changed_since_its_last_read(
    store: Store, clock: FakeClock
) -> None:
    for job in ("a", "b"):
        claim = await claim_run(store, job=job, owner="t", ttl=60.0)
        clock.advance(10)
        await store.finish_task(
            claim.task.task_id, owner="t", token=claim.token, state=TaskState.SUCCEEDED
        )
    book = JobBook()
    await book.refresh(store)
    assert {name: s.durations for name, s in book.jobs.items()} == {
        "a": (10.0,),
        "b": (10.0,),
    }
    clock.advance(5)
    claim = await claim_run(store, job="b", owner="t", ttl=60.0)
    clock.advance(20)
    await store.finish_task(
        claim.task.task_id, owner="t", token=claim.token, state=TaskState.FAILED
    )
    read_to = max(s.updated_at for s in book.jobs.values())
    changed = await store.job_summaries(read_to + 0.001)
    assert [s.name for s in changed] == ["b"]
    await book.refresh(store)
    assert book.jobs["b"].runs == 2 and book.jobs["b"].durations == (10.0,)
    assert book.jobs["b"].last_outcome is TaskState.FAILED
    # Discarding a run that already failed counts no second end.
    await store.discard_task(claim.task.task_id, expected_token=claim.token, actor="t")
    await book.refresh(store)
    assert book.jobs["b"].runs == 2


BEAT = 'echo "stage=copy p=100" >> "$ZOMBIETOP_HEARTBEAT_FILE"'


@pytest.mark.parametrize(
    "script",
    [f"sleep 1; {BEAT}", f"{BEAT}; sleep 1", "sleep 1"],
    ids=["beats-at-the-end", "beats-first", "never-beats"],
)
def test_a_run_lasts_from_its_claim_whenever_it_beats(
    db: Path, fast_config_path: Path, script: str
) -> None:
    """The reported fault: a run that beat once, at its end, was kept as taking 0 s."""
    for _ in range(2):
        _nightly(db, fast_config_path, script)
    result = _zombietop(db, fast_config_path, "history", "nightly", "--json")
    assert result.returncode == 0, result.stderr
    history: dict[str, Any] = json.loads(result.stdout)
    assert [run["outcome"] for run in history["runs"]] == ["succeeded", "succeeded"]
    assert all(1.0 <= run["duration_s"] < 10 for run in history["runs"])
    assert 1.0 <= history["job"]["median_s"] < 10


UNPARTITION_EVENTS = """
ALTER TABLE events RENAME TO events_by_day;
ALTER INDEX events_task RENAME TO events_by_day_task;
CREATE TABLE events (
    event_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        double precision NOT NULL,
    task_id   text,
    kind      text NOT NULL,
    actor     text NOT NULL,
    message   text NOT NULL,
    data      text NOT NULL DEFAULT '{}'
);
CREATE INDEX events_task ON events (task_id, event_id);
INSERT INTO events OVERRIDING SYSTEM VALUE SELECT * FROM events_by_day;
DROP TABLE events_by_day;
"""
"""The event log as it was before PostgreSQL's schema v20 (one table, not one a day)."""


async def test_the_migration_counts_kept_durations_from_the_claims(
    store: Store, clock: FakeClock, reopen: Reopen
) -> None:
    """Durations kept before the fix (from the first heartbeat) are counted again from the
    claims when the store is opened."""
    for _ in range(3):
        claim = await claim_run(store, job="nightly", owner="t", ttl=60.0)
        clock.advance(2.9)
        await store.record_heartbeat(
            claim.task.task_id, BeatLine(stage="copy", progress=100.0), owner="t", token=claim.token
        )
        clock.advance(0.1)
        await store.finish_task(
            claim.task.task_id, owner="t", token=claim.token, state=TaskState.SUCCEEDED
        )
        clock.advance(60)
    [summary] = await store.job_summaries()
    assert summary.durations == pytest.approx((3.0, 3.0, 3.0))
    # Write the list as the old code kept it, and step the schema back to before the fix: the
    # versions after it added the columns `ends` and the trace's, the samples' host index,
    # (PostgreSQL) the event log by day, the kept pages' trace columns, and the index of the
    # samples of gone processes, which go too.
    if isinstance(store, PostgresStore):
        await store._conn.execute("UPDATE jobs SET durations = '[0.1, 0.1, 0.1]'")
        await store._conn.execute("ALTER TABLE jobs DROP COLUMN ends")
        for column in ("trace_id", "span_id", "parent_span_id"):
            await store._conn.execute(f"ALTER TABLE tasks DROP COLUMN {column}")
        await store._conn.execute("DROP INDEX process_samples_host")
        await store._conn.execute(UNPARTITION_EVENTS)
        for column in ("trace_id", "trace_url"):
            await store._conn.execute(f"ALTER TABLE pending_pages DROP COLUMN {column}")
        await store._conn.execute("DROP INDEX process_samples_gone")
        await store._conn.execute("UPDATE zombietop_store SET schema_version = schema_version - 7")
    else:
        assert isinstance(store, SQLiteStore)
        await store._db.execute("UPDATE jobs SET durations = '[0.1, 0.1, 0.1]'")
        await store._db.execute("ALTER TABLE jobs DROP COLUMN ends")
        for column in ("trace_id", "span_id", "parent_span_id"):
            await store._db.execute(f"ALTER TABLE tasks DROP COLUMN {column}")
        await store._db.execute("DROP INDEX process_samples_host")
        for column in ("trace_id", "trace_url"):
            await store._db.execute(f"ALTER TABLE pending_pages DROP COLUMN {column}")
        await store._db.execute("DROP INDEX process_samples_gone")
        await store._db.execute(f"PRAGMA user_version = {SQLITE_VERSION - 6}")
        await store._db.commit()
    await store.close()
    again = await reopen()
    try:
        [summary] = await again.job_summaries()
        assert summary.durations == pytest.approx((3.0, 3.0, 3.0))
    finally:
        await again.close()


@pytest.mark.parametrize(
    ("values", "median", "p95"),
    [
        ((), None, None),
        ((40.0,), 40.0, 40.0),
        ((10.0, 20.0, 30.0, 40.0, 50.0), 30.0, 48.0),
        ((1.0, 2.0), 1.5, 1.95),
    ],
)
def test_median_and_p95(values: tuple[float, ...], median: float | None, p95: float | None) -> None:
    summary = JobSummary(name="j", durations=values)
    assert summary.median_s == median
    assert summary.p95_s == (None if p95 is None else pytest.approx(p95))
    assert percentile(values, 0.5) == median


def test_the_summary_keeps_only_the_latest_successful_durations() -> None:
    summary = JobSummary(name="j", durations=tuple(float(n) for n in range(HISTORY_WINDOW)))
    run = Task(
        task_id="j/x",
        run_id="x",
        step="j",
        step_type="j",
        state=TaskState.SUCCEEDED,
        created_at=0.0,
        started_at=1000.0,
        finished_at=1500.0,
        updated_at=1500.0,
        job="j",
    )
    after = summary.with_run(run, 1500.0)
    assert len(after.durations) == HISTORY_WINDOW
    assert after.durations[0] == 1.0 and after.durations[-1] == 500.0
    assert (after.runs, after.succeeded, after.last_success_at) == (1, 1, 1500.0)
