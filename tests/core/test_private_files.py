"""State directories are private and files in them are never written through a link.

The attack: another user plants ``<store>.d/heartbeats/T.1.hb -> /victim``; root's
``zombietop run`` used to truncate /victim. Real symlinks, real processes and, when the suite
runs as root, a real second user created here with useradd (and deleted afterwards).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.realprocs import zombietop
from zombietop.errors import UnsafePath
from zombietop.locations import state_dir, task_file_name
from zombietop.private import create_new, open_append, private_dir, state_subdir
from zombietop.sdk import Job

VICTIM_TEXT = b"precious: must survive zombietop\n"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_bytes(VICTIM_TEXT)
    return path


def test_run_never_writes_through_a_planted_heartbeat_link(
    tmp_path: Path, db: Path, fast_config_path: Path, victim: Path
) -> None:
    beats = state_dir(db) / "heartbeats"
    beats.mkdir(parents=True)
    for token in range(1, 4):  # whatever token the claim gets
        (beats / f"{task_file_name('T')}.{token}.hb").symlink_to(victim)
    result = subprocess.run(
        zombietop(
            db,
            fast_config_path,
            "run",
            "--task",
            "T",
            "--",
            "sh",
            "-c",
            'echo "stage=load p=5" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
            'stat -c "%a %h %F" "$ZOMBIETOP_HEARTBEAT_FILE" "$(dirname "$ZOMBIETOP_HEARTBEAT_FILE")"',
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert victim.read_bytes() == VICTIM_TEXT
    file_line, dir_line = result.stdout.splitlines()
    assert file_line == "600 1 regular file"  # a new file of its own, not the link
    assert dir_line.startswith("700 ")
    assert _mode(state_dir(db)) == 0o700


def test_a_link_where_a_log_goes_is_refused_and_not_followed(tmp_path: Path, victim: Path) -> None:
    logs = state_subdir(tmp_path / "z.db", "logs")
    (logs / "T.1.log").symlink_to(victim)
    with pytest.raises(UnsafePath, match=r"T\.1\.log is a symbolic link"):
        open_append(logs / "T.1.log")
    assert victim.read_bytes() == VICTIM_TEXT


def test_a_hard_link_where_a_log_goes_is_refused(tmp_path: Path) -> None:
    logs = state_subdir(tmp_path / "z.db", "logs")
    other = tmp_path / "other"
    other.write_bytes(VICTIM_TEXT)
    os.link(other, logs / "T.1.log")
    with pytest.raises(UnsafePath, match="2 names"):
        open_append(logs / "T.1.log")
    assert other.read_bytes() == VICTIM_TEXT


def test_logs_are_0600_and_an_open_directory_is_tightened_to_0700(tmp_path: Path) -> None:
    folder = tmp_path / "z.db.d"
    folder.mkdir(mode=0o777)
    os.chmod(folder, 0o777)
    logs = state_subdir(tmp_path / "z.db", "logs")
    os.close(open_append(logs / "a.log"))
    os.close(create_new(logs / "b.log"))
    assert (_mode(folder), _mode(logs)) == (0o700, 0o700)
    assert (_mode(logs / "a.log"), _mode(logs / "b.log")) == (0o600, 0o600)


def test_a_state_directory_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "z.db.d").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match=r"z\.db\.d is a symbolic link"):
        state_subdir(tmp_path / "z.db", "heartbeats")
    assert list(elsewhere.iterdir()) == []


def test_the_sdk_checkpoint_is_0600_and_replaces_a_planted_link(
    tmp_path: Path, db: Path, fast_config_path: Path, victim: Path
) -> None:
    folder = state_dir(db) / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "T.json").symlink_to(victim)
    (folder / "T.json.partial").symlink_to(victim)
    with Job("T", db=db, config=fast_config_path, handle_sigterm=False) as job:
        with pytest.raises(UnsafePath, match="never follows one"):
            job.load_checkpoint()  # a link is not read either
        path = job.checkpoint({"offset": 3})
        assert job.load_checkpoint() == {"offset": 3}
    assert victim.read_bytes() == VICTIM_TEXT
    assert not path.is_symlink() and _mode(path) == 0o600
    assert (_mode(folder), _mode(state_dir(db))) == (0o700, 0o700)


def test_the_demo_pages_log_and_job_logs_are_private(tmp_path: Path) -> None:
    from zombietop.tui.demo.command import demo_paths, write_files

    paths = demo_paths(tmp_path / "demo" / "demo.db")
    write_files(paths, speed=10.0)
    assert _mode(paths.folder) == 0o700 and _mode(paths.logs) == 0o700
    assert _mode(paths.pages) == 0o600 and _mode(paths.config) == 0o600


# Another user, for real ------------------------------------------------------------------


@pytest.fixture
def other_user() -> Iterator[pwd.struct_passwd]:
    """A throwaway OS user (root only), deleted again after the test."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user with useradd; run the suite as root")
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not installed")
    name = f"zt{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def _as(user: pwd.struct_passwd, *argv: str) -> None:
    subprocess.run(["runuser", "-u", user.pw_name, "--", *argv], check=True, timeout=30)


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder both users can reach (the test's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="zt-shared-", dir="/tmp"))
    os.chmod(folder, 0o1777)  # like /tmp: anyone may create, nobody may remove another's
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_root_refuses_a_state_directory_another_user_made(
    other_user: pwd.struct_passwd, shared_folder: Path, fast_config_path: Path
) -> None:
    victim = shared_folder / "victim"
    victim.write_bytes(VICTIM_TEXT)
    db = shared_folder / "z.db"
    folder = state_dir(db)
    # The other user makes the state directory first and plants the link, as the attack did.
    _as(other_user, "mkdir", "-p", str(folder / "heartbeats"))
    _as(
        other_user,
        "ln",
        "-s",
        str(victim),
        str(folder / "heartbeats" / f"{task_file_name('T')}.1.hb"),
    )
    assert (
        os.lstat(folder / "heartbeats" / f"{task_file_name('T')}.1.hb").st_uid == other_user.pw_uid
    )
    result = subprocess.run(
        zombietop(db, fast_config_path, "run", "--task", "T", "--", "true"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert f"is owned by {other_user.pw_name} (uid {other_user.pw_uid}), not by root" in (
        result.stderr
    )
    assert f"run zombietop as {other_user.pw_name}" in result.stderr
    assert victim.read_bytes() == VICTIM_TEXT
    # Refused before the claim: no task is left claimed behind the refusal.
    status = subprocess.run(
        zombietop(db, fast_config_path, "status", "--json", "--all"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert '"task_id": "T"' not in status.stdout


def test_a_subdirectory_another_user_owns_is_refused(
    other_user: pwd.struct_passwd, shared_folder: Path
) -> None:
    db = shared_folder / "z.db"
    private_dir(state_dir(db))
    os.chmod(state_dir(db), 0o777)  # an old, open state directory of ours
    _as(other_user, "mkdir", str(state_dir(db) / "logs"))
    with pytest.raises(UnsafePath, match=f"owned by {other_user.pw_name}"):
        state_subdir(db, "logs")
    assert _mode(state_dir(db)) == 0o700


async def test_a_relaunch_never_logs_through_a_planted_link(
    tmp_path: Path, db: Path, fast_config_path: Path, victim: Path
) -> None:
    """Resume relaunches the command with its output in logs/T.2.log: a link planted there is
    refused (the task stays requeued, and says why), and the victim is untouched."""
    from zombietop.act.executor import Executor
    from zombietop.actions import Outcome
    from zombietop.config import load_config
    from zombietop.store.sqlite import SQLiteStore

    store = await SQLiteStore.open(db, create=True)
    try:
        await store.create_task(
            task_id="T", run_id="r", step="s", step_type="d", actor="t", command=("true",)
        )
        lease = await store.acquire_lease("T", owner="w", ttl=60)
        logs = state_subdir(db, "logs")
        (logs / f"{task_file_name('T')}.2.log").symlink_to(victim)
        executor = Executor(store, load_config(fast_config_path), store_path=db)
        outcome = await executor.resume("T", expected_token=lease.token, actor="oncall")
    finally:
        await store.close()
    assert outcome.outcome is Outcome.REQUEUED
    assert "could not be relaunched" in outcome.message and "symbolic link" in outcome.message
    assert victim.read_bytes() == VICTIM_TEXT
