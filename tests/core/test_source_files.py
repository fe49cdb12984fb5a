"""A read-only zombietop never makes, changes the owner of, or leaves a file beside an engine's
SQLite database (issue 29, item 1).

Airflow's user owns the database in a folder its group may write; zombietop runs as another
user of that group. Both are real users, made here with useradd (root only: the tests skip
otherwise). After zombietop's read, the folder holds what it held before, and a plain sqlite3
write as Airflow's user (standing in for Airflow) still works. The database has Airflow 3's
columns, made by hand (``tests/airflow_by_hand.py``): these tests need no Airflow venv.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.airflow_by_hand import add_task, make_database
from zombietop.clock import FakeClock
from zombietop.sources.airflow import AirflowSource
from zombietop.sources.sqlite_files import read_only_uri

pytestmark = pytest.mark.slow

READER = """
import asyncio, json, sys
from zombietop.errors import SourceError
from zombietop.sources.airflow import AirflowSource
from zombietop.sources.sqlite_files import read_only_uri

async def main():
    source = AirflowSource(sys.argv[1])
    try:
        await source.open()
        found = await source.poll(None, "here")
        print(json.dumps({"tasks": sorted(f.record.task.task_id for f in found)}))
    except SourceError as exc:
        print(json.dumps({"error": str(exc)}))
    finally:
        await source.close()

asyncio.run(main())
"""


@dataclass
class Users:
    """Airflow's user and zombietop's, both in ``group``."""

    airflow: pwd.struct_passwd
    zombietop: pwd.struct_passwd
    group: int

    def run(self, user: pwd.struct_passwd, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                "setpriv",
                f"--reuid={user.pw_uid}",
                f"--regid={user.pw_gid}",
                f"--groups={self.group}",
                "--",
                *argv,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )

    def read(self, path: Path) -> dict[str, object]:
        """zombietop's read of the source, as zombietop's user."""
        done = self.run(self.zombietop, sys.executable, "-c", READER, f"airflow+sqlite:///{path}")
        assert done.returncode == 0, done.stderr
        found: dict[str, object] = json.loads(done.stdout)
        return found

    def airflow_writes(self, path: Path, task_id: str) -> subprocess.CompletedProcess[str]:
        code = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            'c.execute("INSERT INTO task_instance (dag_id, task_id, run_id, state) '
            "VALUES ('etl', ?, 'r', 'queued')\", (sys.argv[2],)); c.commit()"
        )
        return self.run(self.airflow, sys.executable, "-c", code, str(path), task_id)


@pytest.fixture(scope="module")
def users() -> Iterator[Users]:
    if os.geteuid() != 0:
        pytest.skip("needs root to create two users with useradd; run the suite as root")
    if shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.skip("useradd, groupadd and setpriv (util-linux) are needed to act as other users")
    tag = uuid.uuid4().hex[:6]
    group, names = f"ztg{tag}", [f"zta{tag}", f"ztz{tag}"]
    subprocess.run(["groupadd", group], check=True, capture_output=True)
    try:
        for name in names:
            subprocess.run(
                ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "-G", group, name],
                check=True,
                capture_output=True,
            )
        yield Users(
            airflow=pwd.getpwnam(names[0]),
            zombietop=pwd.getpwnam(names[1]),
            group=grp.getgrnam(group).gr_gid,
        )
    finally:
        for name in names:
            subprocess.run(["userdel", name], check=False, capture_output=True)
        subprocess.run(["groupdel", group], check=False, capture_output=True)


@pytest.fixture
def folder(users: Users) -> Iterator[Path]:
    """Airflow's folder: its user's, writable by its group (as the issue found it)."""
    top = Path(tempfile.mkdtemp(prefix="zombietop-airflow-files-"))
    top.chmod(0o755)
    where = top / "airflow"
    where.mkdir()
    try:
        yield where
    finally:
        shutil.rmtree(top)


def hand_over(folder: Path, users: Users, mode: int) -> None:
    """Give the folder and its files to Airflow's user: the folder ``mode``, the files 0644."""
    for path in [folder, *folder.iterdir()]:
        os.chown(path, users.airflow.pw_uid, users.group)
        path.chmod(mode if path == folder else 0o644)


def files_in(folder: Path) -> dict[str, tuple[int, int]]:
    return {path.name: (path.stat().st_uid, path.stat().st_mode) for path in folder.iterdir()}


@pytest.mark.parametrize(
    ("journal", "mode"),
    [
        ("wal", 0o2775),  # Airflow stopped: no -wal, no -shm; zombietop could make them
        ("wal", 0o2755),  # ... in a folder zombietop cannot write
        ("delete", 0o2775),  # a rollback journal
    ],
)
def test_a_stopped_airflow_gets_no_file(
    users: Users, folder: Path, journal: str, mode: int
) -> None:
    db = folder / "airflow.db"
    make_database(db, journal)
    hand_over(folder, users, mode)
    before = files_in(folder)
    assert before.keys() == {"airflow.db"}

    assert users.read(db) == {"tasks": ["etl/extract/r"]}
    assert users.read(db) == {"tasks": ["etl/extract/r"]}  # and a second poll

    assert files_in(folder) == before
    written = users.airflow_writes(db, "load")
    assert written.returncode == 0, written.stderr


def test_a_running_airflow_is_read_through_its_own_files(users: Users, folder: Path) -> None:
    """Airflow's -wal and -shm are there, its user's and not writable by zombietop's: zombietop
    reads the commits still in the log, and neither writes nor keeps a file of its own."""
    db = folder / "airflow.db"
    make_database(db, "wal")
    hand_over(folder, users, 0o2775)
    code = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA wal_autocheckpoint = 0')\n"
        'c.execute("INSERT INTO task_instance (dag_id, task_id, run_id, state) '
        "VALUES ('etl', 'in_log', 'r', 'running')\")\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        'c.execute("INSERT INTO task_instance (dag_id, task_id, run_id, state) '
        "VALUES ('etl', 'after', 'r', 'queued')\")\n"
        "print('wrote', flush=True)\n"
    )
    with subprocess.Popen(
        [
            "setpriv",
            f"--reuid={users.airflow.pw_uid}",
            f"--regid={users.airflow.pw_gid}",
            f"--groups={users.group}",
            "--",
            sys.executable,
            "-c",
            code,
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.umask(0o022),
    ) as airflow:
        assert airflow.stdin is not None and airflow.stdout is not None
        assert airflow.stdout.readline() == "ready\n"
        before = files_in(folder)
        assert before.keys() == {"airflow.db", "airflow.db-wal", "airflow.db-shm"}
        assert all(uid == users.airflow.pw_uid for uid, _ in before.values())

        found = users.read(db)

        assert files_in(folder) == before
        airflow.stdin.write("\n")
        airflow.stdin.flush()
        assert airflow.stdout.readline() == "wrote\n"
    assert found == {"tasks": ["etl/extract/r", "etl/in_log/r"]}
    assert all(path.stat().st_uid == users.airflow.pw_uid for path in folder.iterdir())


def test_a_log_without_its_index_is_not_read(users: Users, folder: Path) -> None:
    """Commits in a -wal with no -shm: SQLite would have to make the -shm to read them."""
    made = folder.parent / "made"
    made.mkdir()
    make_database(made / "airflow.db", "wal")
    conn = sqlite3.connect(made / "airflow.db", isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("INSERT INTO task_instance (dag_id, task_id, run_id) VALUES ('etl', 'x', 'r')")
    for name in ("airflow.db", "airflow.db-wal"):
        shutil.copy(made / name, folder / name)
    conn.close()
    hand_over(folder, users, 0o2775)
    before = files_in(folder)

    found = users.read(folder / "airflow.db")

    assert "holds commits that SQLite reads only with" in str(found["error"])
    assert "-shm, which is missing" in str(found["error"])
    assert files_in(folder) == before


async def test_airflow_starting_and_stopping_is_followed(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    """Read while stopped (immutable), while running (its files), and stopped again: each poll
    sees every commit, and no file is left behind by zombietop."""
    db = tmp_path / "airflow.db"
    make_database(db, "wal")
    source = AirflowSource(f"airflow+sqlite:///{db}", clock=fake_clock)

    async def ids() -> list[str]:
        return sorted(found.record.task.task_id for found in await source.poll(None, "here"))

    try:
        assert await ids() == ["etl/extract/r"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["airflow.db"]
        with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as airflow:
            airflow.execute("PRAGMA wal_autocheckpoint = 0")
            airflow.execute(
                "INSERT INTO task_instance (dag_id, task_id, run_id) VALUES ('etl', 'two', 'r')"
            )
            assert await ids() == ["etl/extract/r", "etl/two/r"]
        await source.close()  # the kept connection ends, so Airflow's last one tidies up
        add_task(db, "three")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["airflow.db"]
        assert await ids() == ["etl/extract/r", "etl/three/r", "etl/two/r"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["airflow.db"]
    finally:
        await source.close()


def test_an_unreadable_file_says_what_to_do(users: Users, folder: Path) -> None:
    db = folder / "airflow.db"
    make_database(db, "delete")
    hand_over(folder, users, 0o2775)
    db.chmod(0o600)

    found = users.read(db)

    assert "cannot read" in str(found["error"]) or "cannot open" in str(found["error"])
    assert f"zombietop's user cannot read {db}" in str(found["error"])


def test_a_stopped_airflows_file_is_opened_read_only(tmp_path: Path) -> None:
    """The URI for a stopped Airflow's file is read-only too: when the file is gone between the
    look and the open (Airflow's folder cleaned up), the open fails and makes no empty
    database in Airflow's folder."""
    db = tmp_path / "airflow.db"
    make_database(db, "wal")
    uri, immutable = read_only_uri(db, "airflow+sqlite:///airflow.db")
    assert immutable
    db.unlink()

    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        sqlite3.connect(uri, uri=True).execute("SELECT 1").fetchone()

    assert list(tmp_path.iterdir()) == []
