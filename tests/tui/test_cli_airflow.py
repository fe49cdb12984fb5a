"""``status --json``, ``watch --once --dry-run`` and the action commands over a real Airflow
database (made by ``airflow db migrate``, filled through Airflow's own tables), read-only.

Each runs the real command line in a child process, as an on-call engineer would, and checks
that the Airflow database is unchanged byte for byte after it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.airflow_env import AirflowDatabase
from zombietop.procs import this_host

pytestmark = pytest.mark.slow

RUN = "manual__2026-12-01"


@pytest.fixture
def sleeper() -> Iterator[int]:
    """A real local process that does nothing: a hung Airflow task's code. Not our child (its
    shell exits at once), as an Airflow task is not zombietop's: whoever adopts it reaps it."""
    shell = subprocess.run(
        ["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True
    )
    pid = int(shell.stdout)
    yield pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def rows(now: float, sleeper: int) -> list[dict[str, Any]]:
    """Running fresh (a real local pid), stale, NULL heartbeat, queued and finished, every
    one minutes away from a threshold so that no verdict flips while the test runs."""
    born = psutil.Process(sleeper).create_time()
    etl = {
        "dag_id": "etl",
        "run_id": RUN,
        "operator": "PythonOperator",
        "logical_date": 1_796_083_200.0,
    }
    return [
        {**etl, "task_id": "extract", "state": "running", "hostname": this_host(),
         "pid": sleeper, "start_date": born + 0.5, "last_heartbeat_at": now - 5, "try_number": 1},
        {**etl, "task_id": "transform", "state": "running", "hostname": "worker-7", "pid": 4121,
         "start_date": now - 3000, "last_heartbeat_at": now - 900, "try_number": 2},
        {**etl, "task_id": "load", "state": "running", "hostname": "worker-7", "pid": 4122,
         "start_date": now - 600},
        {**etl, "task_id": "publish", "state": "queued", "queued_dttm": now - 30},
        {**etl, "task_id": "split", "map_index": 2, "state": "success", "hostname": "worker-7",
         "start_date": now - 400, "end_date": now - 200},
    ]  # fmt: skip


def zombietop(
    tmp_path: Path, airflow: AirflowDatabase, *args: str
) -> subprocess.CompletedProcess[str]:
    store = tmp_path / "zombietop.db"
    config = tmp_path / "config.toml"
    if not config.exists():
        config.write_text("")
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(store), "--config", str(config)]
    if not store.exists():
        subprocess.run([*base, "init"], check=True, capture_output=True)
    return subprocess.run(
        [*base, *args[:1], "--source", airflow.url, *args[1:]],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _sha(path: Path | None) -> str:
    assert path is not None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_status_json_judges_task_instances(
    airflow_sqlite: AirflowDatabase, tmp_path: Path, sleeper: int
) -> None:
    airflow_sqlite.write(rows(time.time(), sleeper))
    before = _sha(airflow_sqlite.path)
    done = zombietop(tmp_path, airflow_sqlite, "status", "--json")
    assert done.returncode == 2, done.stderr  # CRITICAL: two stalled
    assert _sha(airflow_sqlite.path) == before
    report = json.loads(done.stdout)
    tasks = {t["task_id"]: t for t in report["tasks"]}
    assert {k: t["health"] for k, t in tasks.items()} == {
        f"etl/transform/{RUN}": "stalled",
        f"etl/load/{RUN}": "stalled",
        f"etl/publish/{RUN}": "queued",
        f"etl/extract/{RUN}": "healthy",
        f"etl/split/{RUN}[2]": "succeeded",
    }
    stale = tasks[f"etl/transform/{RUN}"]
    assert stale["step_type"] == "etl"
    assert stale["reasons"][0]["code"] == "heartbeat_stale"
    assert stale["reasons"][0]["limit_s"] == 300.0
    assert stale["source"]["kind"] == "airflow"
    assert stale["source"]["capability"] == "read-only"
    assert stale["source"]["airflow"] == {
        "dag_id": "etl",
        "task_id": "transform",
        "run_id": RUN,
        "map_index": -1,
        "try_number": 2,
        "operator": "PythonOperator",
        "state": "running",
        "hostname": "worker-7",
        "logical_date": "2026-12-01T00:00:00+00:00",
    }
    assert tasks[f"etl/split/{RUN}[2]"]["source"]["airflow"]["map_index"] == 2
    hung = tasks[f"etl/extract/{RUN}"]
    assert hung["process"]["alive"] is True and hung["process"]["seen_by"] == "this host"
    assert hung["pid"] == sleeper


def test_watch_once_dry_run_pages_and_would_hold(
    airflow3_sqlite: AirflowDatabase, tmp_path: Path, sleeper: int
) -> None:
    airflow3_sqlite.write(rows(time.time(), sleeper))
    before = _sha(airflow3_sqlite.path)
    done = zombietop(tmp_path, airflow3_sqlite, "watch", "--once", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert _sha(airflow3_sqlite.path) == before
    lines = [line.split(" ", 1)[1] for line in done.stdout.splitlines()]
    assert lines[0].startswith(f"watching {tmp_path / 'zombietop.db'} (read-only) and ")
    assert lines[0].endswith(" (read-only) once (dry run: nothing sent, nothing changed)")
    pages = [line for line in lines if line.startswith("PAGE")]
    assert len(pages) == 2
    assert pages[0].startswith(f"PAGE (incident) etl/transform/{RUN} stalled: ")
    # Ages move with the clock (a loaded machine takes seconds between writing and reading).
    # resume and discard are refused for Airflow's task: the page names what works.
    assert re.search(
        r"supervisor heartbeat 1[5-9]m\d\ds old - clear it in Airflow, mark it failed, or kill it$",
        pages[0],
    )
    assert re.match(
        rf"PAGE \(incident\) etl/load/{RUN} stalled: no heartbeat yet \(1\dm\d\ds since claim\)",
        pages[1],
    )
    holds = [line for line in lines if line.startswith("would hold")]
    assert holds == [
        f"would hold etl/transform/{RUN} in zombietop only (airflow is read-only: nothing "
        f"written there): stalled: {pages[0].split('stalled: supervisor ')[1].split(' - ')[0]} "
        "(timeout 5m)",
        f"would hold etl/load/{RUN} in zombietop only (airflow is read-only: nothing written "
        f"there): stalled: no first heartbeat {holds_age(lines)} after claim (start grace 1m)",
    ]


def holds_age(lines: list[str]) -> str:
    """The age the NULL-heartbeat hold line gives (it moves with the clock; read it back)."""
    line = next(line for line in lines if "no first heartbeat" in line)
    return line.split("no first heartbeat ")[1].split(" after claim")[0]


def test_resume_and_discard_refused_with_the_airflow_command(
    airflow3_sqlite: AirflowDatabase, tmp_path: Path, sleeper: int
) -> None:
    airflow3_sqlite.write(rows(time.time(), sleeper))
    before = _sha(airflow3_sqlite.path)
    task = f"etl/transform/{RUN}"
    resume = zombietop(tmp_path, airflow3_sqlite, "resume", task, "--yes")
    assert resume.returncode == 1
    assert resume.stdout.strip() == (
        f"{task}: refused: {task} is Airflow's (read-only source {airflow3_sqlite.url}); "
        "zombietop never writes to it. Re-run it in Airflow: airflow tasks clear etl "
        "-t '^transform$' -s 2026-12-01T00:00:00+00:00 -e 2026-12-01T00:00:00+00:00 -y "
        '(or POST /api/v2/dags/etl/clearTaskInstances {"dag_run_id": '
        f'"{RUN}", "task_ids": ["transform"], "dry_run": false, "only_failed": false}})'
    )
    discard = zombietop(tmp_path, airflow3_sqlite, "discard", task, "--yes")
    assert discard.returncode == 1
    assert discard.stdout.strip() == (
        f"{task}: refused: {task} is Airflow's (read-only source {airflow3_sqlite.url}); "
        "zombietop never writes to it. Mark it failed in Airflow: PATCH "
        f"/api/v2/dags/etl/dagRuns/{RUN}/taskInstances/transform "
        '{"new_state": "failed"} (Airflow 2: /api/v1/...), or in the UI: Mark as failed'
    )
    kill = zombietop(tmp_path, airflow3_sqlite, "kill", task, "--yes")
    assert kill.returncode == 1
    # Another host's process: asked of that host's agent, which is not there.
    assert kill.stdout.splitlines()[-1] == (
        f"{task}: requested: no agent on worker-7: the kill stays queued until "
        "`zombietop agent` runs there"
    )
    assert _sha(airflow3_sqlite.path) == before


def test_kill_a_local_airflow_task_checks_its_identity(
    airflow3_sqlite: AirflowDatabase, tmp_path: Path, sleeper: int
) -> None:
    airflow3_sqlite.write(rows(time.time(), sleeper))
    before = _sha(airflow3_sqlite.path)
    done = zombietop(tmp_path, airflow3_sqlite, "kill", f"etl/extract/{RUN}", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    # The executor's kill: SIGTERM with a kill record in zombietop's store, then the exit.
    sent, exited = done.stdout.splitlines()
    assert sent == (
        f"etl/extract/{RUN}: term_sent: SIGTERM sent to pid {sleeper} of etl/extract/{RUN}; "
        "SIGKILL in 30s if it is still alive"
    )
    # How long the exit took depends on the machine's load: a tenth of a second or two.
    assert re.fullmatch(
        rf"{re.escape(f'etl/extract/{RUN}')}: exited: pid {sleeper} exited after TERM in 0\.\d s",
        exited,
    ), exited
    assert not psutil.pid_exists(sleeper) or psutil.Process(sleeper).status() == "zombie"
    assert _sha(airflow3_sqlite.path) == before


def test_the_watchdogs_hold_stays_in_zombietop(
    airflow3_sqlite: AirflowDatabase, tmp_path: Path, sleeper: int
) -> None:
    airflow3_sqlite.write(rows(time.time(), sleeper))
    before = _sha(airflow3_sqlite.path)
    watched = zombietop(tmp_path, airflow3_sqlite, "watch", "--once")
    assert watched.returncode == 0, watched.stderr
    assert f"held etl/transform/{RUN} in zombietop only" in watched.stdout
    status = zombietop(tmp_path, airflow3_sqlite, "status", "--json")
    tasks = {t["task_id"]: t for t in json.loads(status.stdout)["tasks"]}
    assert tasks[f"etl/transform/{RUN}"]["quarantined"] is True
    assert tasks[f"etl/load/{RUN}"]["quarantined"] is True
    assert tasks[f"etl/extract/{RUN}"]["quarantined"] is False
    # Shown and paged, and never written into Airflow.
    assert tasks[f"etl/transform/{RUN}"]["health"] == "stalled"
    assert _sha(airflow3_sqlite.path) == before


def test_ack_a_task_instance_in_zombietops_store(
    airflow3_sqlite: AirflowDatabase, tmp_path: Path, sleeper: int
) -> None:
    """Item 9.3: `ack` of an Airflow task instance is kept in zombietop's store (its id and
    the source's name), shown by `status`, refused for a finished one, ended by `unack`; the
    Airflow database is never written."""
    airflow3_sqlite.write(rows(time.time(), sleeper))
    before = _sha(airflow3_sqlite.path)
    task = f"etl/transform/{RUN}"
    acked = zombietop(tmp_path, airflow3_sqlite, "ack", task, "--for", "1h", "--reason", "on it")
    assert acked.returncode == 0, acked.stderr
    assert acked.stdout.startswith(f"{task}: acked by ")
    assert acked.stdout.rstrip().endswith("(1h00m): on it")
    status = zombietop(tmp_path, airflow3_sqlite, "status", "--json")
    tasks = {t["task_id"]: t for t in json.loads(status.stdout)["tasks"]}
    assert tasks[task]["ack"]["reason"] == "on it"
    assert tasks[f"etl/load/{RUN}"]["ack"] is None

    finished = zombietop(tmp_path, airflow3_sqlite, "ack", f"etl/split/{RUN}[2]")
    assert finished.returncode == 2
    assert "has finished (succeeded): it pages nobody" in finished.stderr
    unknown = zombietop(tmp_path, airflow3_sqlite, "ack", "etl/nope/r")
    assert unknown.returncode == 2
    assert "no task 'etl/nope/r' in store" in unknown.stderr
    assert f"nor among the recent tasks of {airflow3_sqlite.url}" in unknown.stderr

    unacked = zombietop(tmp_path, airflow3_sqlite, "unack", task)
    assert unacked.returncode == 0, unacked.stderr
    assert unacked.stdout.startswith(f"{task}: ack by ")
    status = zombietop(tmp_path, airflow3_sqlite, "status", "--json")
    tasks = {t["task_id"]: t for t in json.loads(status.stdout)["tasks"]}
    assert tasks[task]["ack"] is None
    assert _sha(airflow3_sqlite.path) == before
