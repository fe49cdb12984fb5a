"""A store is made only where one was meant: never in a folder that a typo in ``--db`` names,
and never without saying where."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.core.realprocs import zombietop


def _run(db: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(zombietop(db, config, *args), capture_output=True, text=True, timeout=60)


def test_a_typo_in_db_makes_no_folder_and_says_so(tmp_path: Path, fast_config_path: Path) -> None:
    """The reported fault: the run exited 0 after making ``/nonexistent/dir/`` and a store in
    it, that no dashboard watches. Now no folder is made, and stderr names the missing folder.
    The job still runs (a broken monitor never stops a job): unwatched, with its own status."""
    db = tmp_path / "nonexistent" / "dir" / "x.db"
    result = _run(db, fast_config_path, "run", "--job", "j", "--", "sh", "-c", "exit 3")
    assert result.returncode == 3, result.stderr
    assert f"the folder {db.parent} does not exist" in result.stderr
    assert "typo" in result.stderr
    assert "unwatched" in result.stderr
    assert not (tmp_path / "nonexistent").exists()


def test_a_typo_in_db_refuses_a_task_run(tmp_path: Path, fast_config_path: Path) -> None:
    """``--task`` needs its lease, so a store that cannot be made refuses it (exit 2)."""
    db = tmp_path / "nonexistent" / "dir" / "x.db"
    result = _run(db, fast_config_path, "run", "--task", "t1", "--", "true")
    assert result.returncode == 2, result.stderr
    assert f"the folder {db.parent} does not exist" in result.stderr
    assert not (tmp_path / "nonexistent").exists()


def test_a_new_store_is_named_once(tmp_path: Path, fast_config_path: Path) -> None:
    db = tmp_path / "z.db"
    first = _run(db, fast_config_path, "run", "--job", "j", "--", "true")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("created a new store") == 1
    assert str(db) in first.stderr
    again = _run(db, fast_config_path, "run", "--job", "j", "--", "true")
    assert again.returncode == 0, again.stderr
    assert "created a new store" not in again.stderr
