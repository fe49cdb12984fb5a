"""``status`` with a source that cannot be read (issue 29, item 1): zombietop's own tasks and the
other sources are printed all the same, the failing source is named with its error, and the
exit status is UNKNOWN for that part (CRITICAL still wins: what is known to need a human now).

The sources are SQLite files with Airflow 3's columns (``tests/airflow_by_hand.py``); the bad
one is cut short with ``truncate``, so SQLite reads it as "malformed".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.airflow_by_hand import add_finished, make_database
from tests.tui.test_cli_status import build_store, run_cli


@pytest.fixture
def sources(tmp_path: Path) -> tuple[str, str]:
    """A readable Airflow database and one cut short, each alone in its folder."""
    good, bad = tmp_path / "good" / "airflow.db", tmp_path / "bad" / "airflow.db"
    for path in (good, bad):
        path.parent.mkdir()
        make_database(path, "wal")
    add_finished(bad, 20_000)
    os.truncate(bad, 300_000)
    return f"airflow+sqlite:///{good}", f"airflow+sqlite:///{bad}"


def _status(
    capsys: pytest.CaptureFixture[str], db: Path, sources: tuple[str, str], *form: str
) -> tuple[int, str, str]:
    good, bad = sources
    return run_cli(capsys, "status", "--db", str(db), "--source", bad, "--source", good, *form)


def test_status_prints_the_rest_and_names_the_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sources: tuple[str, str]
) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["healthy"])
    bad_name = sources[1]

    code, out, err = _status(capsys, db, sources, "--json")
    assert code == 3 and err == ""
    report = json.loads(out)
    assert sorted(t["task_id"] for t in report["tasks"]) == ["etl/extract/r", "healthy-1"]
    (failed,) = report["source_errors"]
    assert failed["source"] == bad_name
    assert failed["error"].startswith(f"source {bad_name}: cannot read its schema (")
    assert "malformed" in failed["error"] and "PRAGMA integrity_check" in failed["error"]

    code, out, err = _status(capsys, db, sources)
    assert code == 3 and err == ""
    lines = out.splitlines()
    assert lines[1].startswith(f"UNKNOWN source {bad_name}: cannot read its schema")
    assert lines[1].endswith("(its tasks are not shown)")
    assert any(line.startswith("healthy ") and "healthy-1" in line for line in lines)
    assert any(line.startswith("queued ") and "etl/extract/r" in line for line in lines)

    code, out, _ = _status(capsys, db, sources, "--nagios")
    assert code == 3
    head, said = out.splitlines()[:2]
    assert head.startswith("ZOMBIETOP UNKNOWN - 1 source cannot be read | ")
    assert said.startswith(f"UNKNOWN source {bad_name}: ")

    # No file was made beside either database.
    for folder in ("good", "bad"):
        assert [p.name for p in (tmp_path / folder).iterdir()] == ["airflow.db"]


def test_a_critical_task_is_said_before_an_unreadable_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sources: tuple[str, str]
) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["stalled"])
    code, out, _ = _status(capsys, db, sources, "--nagios")
    assert code == 2
    assert out.startswith("ZOMBIETOP CRITICAL - 1 stalled, ")
    assert "1 over budget, 1 source cannot be read | " in out.splitlines()[0]
