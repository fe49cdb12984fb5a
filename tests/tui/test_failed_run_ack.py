"""A failed run's incident takes acks, notes and silences like any other, by its task id or by
its job's name: real ``zombietop run --job`` runs that fail, and real ``zombietop watch --once``
passes paging through a real notifier command."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tui.test_oncall_cli import ME, RENOTIFY, Zombietop, age_the_pages


def _fail(zt: Zombietop, job: str) -> str:
    """Run ``job`` once, failing with exit 3; its task id."""
    done = zt("run", "--job", job, "--", "sh", "-c", "echo 'FATAL: disk full'; exit 3")
    assert done.returncode == 3, done.stderr
    runs = json.loads(zt("history", job, "--json").stdout)["runs"]
    return str(runs[0]["task_id"])


def test_a_failed_run_is_acked_by_its_id_or_its_jobs_name_and_renotify_stops(
    tmp_path: Path,
) -> None:
    """The reported fault: ``ack flaky-report/<run>`` was refused ("it pages nobody") while
    the watchdog sent notice after notice of that run's incident."""
    zt = Zombietop(tmp_path, f'[watch]\nrenotify = "{RENOTIFY:g}s"\n')
    by_id, by_job, loud = (_fail(zt, job) for job in ("flaky-report", "backup", "export"))
    first = zt.watch()
    assert sorted(line.split(" ")[0] for line in first) == sorted([by_id, by_job, loud])
    assert all("last output" in line and "FATAL: disk full" in line for line in first)

    done = zt("ack", by_id, "--for", "1h", "--reason", "rerunning by hand")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{by_id}: acked by {ME} until ")
    done = zt("ack", "backup", "--reason", "disk swapped")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{by_job}: acked by {ME} until ")
    noted = zt("note", "backup", "new disk in slot 3")
    assert noted.returncode == 0, noted.stderr
    assert noted.stdout == f"{by_job}: note by {ME}: new disk in slot 3\n"

    for notice in ("2nd", "3rd"):
        age_the_pages(zt.db, RENOTIFY)
        (page,) = zt.watch()  # only the run nobody acked is paged again
        assert page.startswith(f"{loud} failed: exit 3 after ")
        assert f"({notice} notice, open " in page
    tasks = {t["task_id"]: t for t in json.loads(zt("status", "--json").stdout)["tasks"]}
    assert tasks[by_id]["ack"]["reason"] == "rerunning by hand"
    assert tasks[by_job]["ack"]["reason"] == "disk swapped"
    assert tasks[loud]["ack"] is None


def test_a_silence_by_job_holds_its_open_incident(tmp_path: Path) -> None:
    zt = Zombietop(tmp_path, f'[watch]\nrenotify = "{RENOTIFY:g}s"\n')
    held, loud = _fail(zt, "flaky-report"), _fail(zt, "export")
    done = zt("silence", "--job", "flaky-report", "--for", "1h", "--reason", "known bad")
    assert done.returncode == 0, done.stderr
    assert f"(task {held}) by {ME}" in done.stdout
    assert done.stdout.rstrip().endswith("it matches 1 task now")
    (page,) = zt.watch()
    assert page.startswith(f"{loud} failed: ")


def test_a_job_with_nothing_open_says_so(tmp_path: Path) -> None:
    zt = Zombietop(tmp_path)
    assert zt("run", "--job", "nightly", "--", "true").returncode == 0
    for argv in (
        ["ack", "nightly"],
        ["silence", "--job", "nightly", "--for", "1h", "--reason", "x"],
    ):
        done = zt(*argv)
        assert done.returncode == 2
        assert (
            "job nightly has no open incident (no run of it is failed or stuck now)" in done.stderr
        )


def test_a_task_run_alone_is_its_own_job_of_one_run(tmp_path: Path) -> None:
    """docs/howto/cron-and-pings.md: a bare ``--task`` run is its own job of one run; ``history``
    said "no run of job"."""
    zt = Zombietop(tmp_path)
    done = zt("run", "--task", "copy-2031", "--", "sh", "-c", "echo 'rsync: reset'; exit 3")
    assert done.returncode == 3, done.stderr
    shown = zt("history", "copy-2031")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "copy-2031: 1 runs, 0% succeeded, median -, p95 -, last failed"
    assert lines[3].split()[0] == "-" and "last output: rsync: reset" in lines[3]
    history = json.loads(zt("history", "copy-2031", "--json").stdout)
    assert [run["task_id"] for run in history["runs"]] == ["copy-2031"]
    assert zt("ack", "copy-2031", "--reason", "on it").returncode == 0
