"""``zombietop jobs`` on a real SQLite store filled by real ``zombietop run --job`` processes:
its table, its JSON (stable keys) and its order."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.core.realprocs import zombietop

BEAT_LAST = 'sleep 0.6; echo "stage=copy p=100" >> "$ZOMBIETOP_HEARTBEAT_FILE"'
ROW_KEYS = {
    "name",
    "runs",
    "succeeded",
    "success_rate",
    "median_s",
    "p95_s",
    "recent",
    "trend",
    "last_outcome",
    "last_finished_at",
    "next_run_at",
    "open_incident",
}


def _zombietop(db: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(zombietop(db, config, *args), capture_output=True, text=True, timeout=60)


def _run(db: Path, config: Path, job: str, script: str) -> None:
    result = _zombietop(db, config, "run", "--job", job, "--", "sh", "-c", script)
    assert result.returncode in (0, 3), result.stderr


def test_jobs_lists_each_job_with_its_trend_and_next_run(db: Path, fast_config_path: Path) -> None:
    config = fast_config_path
    config.write_text(
        config.read_text() + '\n[schedules.nightly]\njob = "nightly"\ncron = "30 2 * * *"\n'
    )
    for script in ("sleep 0.2", BEAT_LAST, "sleep 0.4"):
        _run(db, config, "nightly", script)
    _run(db, config, "report", "exit 3")
    _run(db, config, "backup", "true")

    result = _zombietop(db, config, "jobs", "--json")
    assert result.returncode == 0, result.stderr
    shown: dict[str, Any] = json.loads(result.stdout)
    assert shown["version"] == 1 and shown["generated_at"].endswith("Z")
    jobs = {job["name"]: job for job in shown["jobs"]}
    assert all(job.keys() == ROW_KEYS for job in jobs.values())
    # The failed job leads: its open incident is its failed run.
    assert [job["name"] for job in shown["jobs"]] == ["report", "backup", "nightly"]
    report = jobs["report"]
    assert (report["runs"], report["succeeded"], report["trend"]) == (1, 0, "x")
    assert report["open_incident"].startswith("report/") and report["last_outcome"] == "failed"
    nightly = jobs["nightly"]
    assert (nightly["runs"], nightly["success_rate"], nightly["open_incident"]) == (3, 1.0, None)
    # The run that beat only at its end lasted from its claim: the longest, the full bar.
    durations = [run["duration_s"] for run in nightly["recent"]]
    assert durations[1] >= 0.6 and max(durations) == durations[1]
    assert len(nightly["trend"]) == 3 and nightly["trend"][1] == "█"
    assert nightly["next_run_at"].endswith("T02:30:00Z")
    assert jobs["backup"]["next_run_at"] is None

    table = _zombietop(db, config, "jobs", "--sort", "name")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:5] == ["JOB", "RUNS", "OK", "MEDIAN", "P95"]
    assert [line.split()[0] for line in lines[1:]] == ["backup", "nightly", "report"]
    assert "100%" in lines[2] and nightly["trend"] in lines[2] and " in " in lines[2]
    assert "failed" in lines[3] and "ago" in lines[3]


def test_jobs_on_a_store_without_jobs_says_how_to_start_one(
    db: Path, fast_config_path: Path
) -> None:
    _zombietop(db, fast_config_path, "run", "--task", "alone", "--", "true")
    result = _zombietop(db, fast_config_path, "jobs")
    assert result.returncode == 0, result.stderr
    assert "no job in" in result.stdout and "zombietop run --job NAME" in result.stdout
