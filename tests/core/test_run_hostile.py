"""`zombietop run` on an unlucky host, for real: the disk fills as the job ends (a 1 MiB tmpfs),
the user's process limit is reached as the command starts (`ulimit -u`, as a second user: root
ignores the limit), the reader of the output goes away (`| head -1`), the output cannot be
written (/dev/full), and a signal comes before the command has started."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.realprocs import (
    FAST_CONFIG,
    HANG_S,
    Children,
    FullPipe,
    Said,
    as_user,
    blocked_writing_to_a_pipe,
    tasks_of,
    throwaway_user,
    uids_of,
    wait_for,
    zombietop,
)
from zombietop.model import TaskState
from zombietop.output import read_last_output
from zombietop.store.sqlite import SQLiteStore

# A full disk ------------------------------------------------------------------------------


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A real 1 MiB tmpfs, mounted for the test and unmounted after it."""
    folder = Path(tempfile.mkdtemp(prefix="zt-small-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a 1 MiB tmpfs here: {mounted.stderr.strip() or 'not root'}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=False, capture_output=True)
        folder.rmdir()


def _fills_the_disk(disk: Path) -> str:
    """A job that fills the disk while it runs, says it is done and exits 0."""
    return f"dd if=/dev/zero of={disk / 'fill'} bs=4k 2>/dev/null; echo done"


def _config(tmp_path: Path, lease_ttl: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(FAST_CONFIG.replace('lease_ttl = "3s"', f'lease_ttl = "{lease_ttl}"'))
    return path


async def test_an_exit_the_full_disk_refused_is_recorded_once_there_is_space_again(
    small_disk: Path, tmp_path: Path, children: Children
) -> None:
    """The reported fault: the job printed done and exited 0, `zombietop run` exited 2, and
    the task stayed running, then dead, whatever was freed afterwards."""
    db = small_disk / "zombietop.db"
    config = _config(tmp_path, "60s")  # room for the test to free the disk, however busy
    wrapper = children.start(
        zombietop(
            db, config, "run", "--task", "full", "--", "sh", "-c", _fills_the_disk(small_disk)
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    said = Said(wrapper.stderr)
    waiting = await asyncio.to_thread(said.wait_for, "cannot record the exit of full (exit 0) yet")
    assert waiting, said.all()
    assert "database or disk is full" in said.all(timeout=0)
    (small_disk / "fill").unlink()

    assert await asyncio.to_thread(wrapper.wait, 30) == 0, said.all()
    assert wrapper.stdout is not None and wrapper.stdout.read() == b"done\n"
    assert "recorded the exit of full (exit 0) after" in said.all()
    async with await SQLiteStore.open(db) as store:
        task = await store.get_task("full")
    assert (task.state, task.exit_code) == (TaskState.SUCCEEDED, 0)


async def test_an_exit_is_recorded_after_an_outage_longer_than_the_lease(
    small_disk: Path, tmp_path: Path, children: Children
) -> None:
    """The disk stays full past the 3 s lease: nobody took the lease over, so the owner's
    token is still the latest, and its exit is taken once there is space again."""
    db = small_disk / "zombietop.db"
    config = _config(tmp_path, "3s")
    wrapper = children.start(
        zombietop(
            db, config, "run", "--task", "full", "--", "sh", "-c", _fills_the_disk(small_disk)
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    said = Said(wrapper.stderr)
    waiting = await asyncio.to_thread(said.wait_for, "cannot record the exit of full (exit 0) yet")
    assert waiting, said.all()

    async def expired() -> bool:
        async with await SQLiteStore.open(db, read_only=True) as store:
            lease = await store.get_lease("full")
            now = await store.now()
        return lease is not None and lease.expires_at is not None and now > lease.expires_at

    await wait_for(expired, timeout=30, what="the lease to run out")
    (small_disk / "fill").unlink()
    assert await asyncio.to_thread(wrapper.wait, 30) == 0, said.all()
    assert "recorded the exit of full (exit 0) after" in said.all()
    async with await SQLiteStore.open(db) as store:
        task = await store.get_task("full")
    assert (task.state, task.exit_code) == (TaskState.SUCCEEDED, 0)


async def test_an_exit_that_cannot_be_recorded_before_the_lease_runs_out_is_said(
    small_disk: Path, fast_config_path: Path, children: Children
) -> None:
    db = small_disk / "zombietop.db"
    wrapper = children.start(
        zombietop(
            db,
            fast_config_path,
            "run",
            "--task",
            "full",
            "--",
            "sh",
            "-c",
            _fills_the_disk(small_disk),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    said = Said(wrapper.stderr)
    # The job's own status, once the 3 s lease could not be renewed on the full disk.
    assert await asyncio.to_thread(wrapper.wait, 30) == 0, said.all()
    assert "gave up: the exit of full (exit 0) is not recorded (store " in said.all()
    assert "resume or discard it once the store works again" in said.all()
    (small_disk / "fill").unlink()
    async with await SQLiteStore.open(db) as store:
        task = await store.get_task("full")
    assert task.finished_at is None and task.state is TaskState.STARTING  # never ran a beat


# The user's process limit -------------------------------------------------------------------

LIMIT = 150
BOOT = (
    "import runpy, site, sys; site.addsitedir(sys.argv.pop(1)); sys.argv[0] = 'zombietop'; "
    "runpy.run_module('zombietop.tui', run_name='__main__', alter_sys=True)"
)
"""`python -c BOOT SITE ARGS...`: zombietop's command line, its packages taken from SITE."""
TRIES_TO_FORK = "echo out-line; echo err-line >&2; read go; sleep 30 & wait"
"""Prints on both streams, waits for its stdin to close, then forks: dash gives up with exit 2
when the fork fails."""


def _python_for(user: pwd.struct_passwd) -> str:
    """This Python, or one of the same version, that ``user`` can run (the test's may live
    under /root)."""
    real = Path(os.path.realpath(sys.executable))
    if all(os.stat(folder).st_mode & 0o001 for folder in real.parents):
        return str(real)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for folder in ("/usr/bin", "/usr/local/bin"):
        if os.access(Path(folder) / version, os.X_OK):
            return str(Path(folder) / version)
    pytest.skip(f"no {version} that {user.pw_name} may run (this one is {real})")


@pytest.fixture
def job_user() -> Iterator[pwd.struct_passwd]:
    with throwaway_user() as user:
        yield user


@pytest.fixture
def users_folder(job_user: pwd.struct_passwd) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="zt-nproc-"))
    os.chown(folder, job_user.pw_uid, job_user.pw_gid)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


WARM_UP = "warm-up"
"""A first run that makes the store, so that the run under test has nothing to say about it."""


def _task_row(db: Path) -> tuple[str, int | None, int | None] | None:
    """The run under test's state, pid and exit code, read without writing (the store is not
    ours)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        row = con.execute(
            "SELECT state, pid, exit_code FROM tasks WHERE task_id != ?", (WARM_UP,)
        ).fetchone()
    return None if row is None else (row[0], row[1], row[2])


async def test_a_process_limit_reached_as_the_command_starts_leaves_it_supervised(
    job_user: pwd.struct_passwd, users_folder: Path, children: Children
) -> None:
    """The reported fault: a fork bomb under `ulimit -u 150` left no thread to start once the
    command ran: the wrapper died of `RuntimeError: can't start new thread`, the task stayed
    `starting` with no process, and `kill` found nothing to kill.

    Here the bomb's leftovers hold all the user's processes but the one the command takes. The
    wrapper waits on a full stderr just before it starts the command (saying the task's id),
    while the test fills the user's processes up to the limit.
    """
    config = users_folder / "config.toml"
    config.write_text(FAST_CONFIG)
    os.chown(config, job_user.pw_uid, job_user.pw_gid)
    db = users_folder / "zombietop.db"
    zombietop_as_user = (
        _python_for(job_user),
        "-c",
        BOOT,
        sysconfig.get_path("purelib"),
        "--db",
        str(db),
        "--config",
        str(config),
    )
    # The store exists before the run, as it does on a job's host after its first run: the
    # wrapper's first word on stderr is then the task's id (a new store would be named first).
    warm_up = as_user(job_user, *zombietop_as_user, "run", "--task", WARM_UP, "--", "true")
    assert subprocess.run(warm_up, cwd=users_folder, timeout=60).returncode == 0
    stderr = FullPipe()
    argv = as_user(
        job_user,
        "bash",
        "-c",
        f'ulimit -u {LIMIT} && exec "$@"',
        "bash",
        *zombietop_as_user,
        "run",
        "--",
        "sh",
        "-c",
        TRIES_TO_FORK,
    )
    go_read, go = os.pipe()
    wrapper = children.start(
        argv, cwd=users_folder, stdin=go_read, stdout=subprocess.PIPE, stderr=stderr.write
    )
    os.close(go_read)
    bomb: list[subprocess.Popen[bytes]] = []
    try:
        await wait_for(
            lambda: blocked_writing_to_a_pipe(wrapper.pid),
            what="the wrapper to wait",
            while_running=wrapper,
        )
        assert _task_row(db) is not None  # claimed, not started
        wanted = LIMIT - 1  # room for the command alone
        for _ in range(wanted - tasks_of(job_user.pw_uid)):
            bomb.append(children.start(as_user(job_user, "sleep", "600")))

        def all_the_users() -> bool:
            """True once every filler runs as the user (each goes through env and setpriv
            first, as root: a hundred of them take a while on a busy machine)."""
            assert all(filler.poll() is None for filler in bomb), "a filler exited"
            return all(uids_of(filler.pid) == job_user.pw_uid for filler in bomb)

        await wait_for(all_the_users, timeout=HANG_S, interval=0.1, what="the fillers")
        assert tasks_of(job_user.pw_uid) == wanted
        said = stderr.drain()
        # The command runs and holds the last process the user may have: no thread can start.
        for stream in ("stdout", "stderr"):
            started = f"could not start a thread to copy the command's {stream}"
            assert await asyncio.to_thread(said.wait_for, started), said.all()
        assert _task_row(db) is not None
        os.close(go)
        code = await asyncio.to_thread(wrapper.wait, 60)
    finally:
        with contextlib.suppress(OSError):
            os.close(go)
        for filler in bomb:
            filler.kill()
    assert code == 2, said.all()  # the command's own exit: its fork failed, the limit held
    assert "Traceback" not in said.all()
    assert "err-line" in said.all()
    assert wrapper.stdout is not None and wrapper.stdout.read() == b"out-line\n"
    row = _task_row(db)
    assert row is not None
    state, pid, exit_code = row
    assert (state, exit_code) == ("failed", 2) and pid is not None


# A reader that goes away, an output that cannot be written ----------------------------------


async def test_a_closed_pipe_is_passed_on_to_the_command(
    db: Path, fast_config_path: Path, children: Children
) -> None:
    """The reported fault: `zombietop run -- yes | head -1` never ended, for the wrapper kept
    reading the command after its own stdout broke."""
    async with await SQLiteStore.open(db, create=True):
        pass  # the store exists, as after a job's first run: nothing to say about it
    wrapper = children.start(
        zombietop(db, fast_config_path, "run", "--task", "yes", "--", "yes"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert wrapper.stdout is not None
    head = subprocess.Popen(["head", "-1"], stdin=wrapper.stdout, stdout=subprocess.PIPE)
    wrapper.stdout.close()
    first, _ = await asyncio.to_thread(head.communicate, timeout=30)
    assert first == b"y\n"
    assert await asyncio.to_thread(wrapper.wait, 30) == 128 + signal.SIGPIPE
    assert wrapper.stderr is not None and wrapper.stderr.read() == b""  # nothing to say
    async with await SQLiteStore.open(db) as store:
        task = await store.get_task("yes")
    assert (task.state, task.state_reason) == (TaskState.FAILED, "killed by SIGPIPE")
    kept = read_last_output(db, "yes", 1)
    assert kept is not None and kept.line == "y"  # the tail is kept as before


async def test_an_output_that_cannot_be_written_stops_the_command_instead_of_vanishing(
    db: Path, fast_config_path: Path, children: Children
) -> None:
    """`zombietop run -- pg_dump ... > dump.sql` on a full disk must not succeed with its
    output thrown away: the command learns, as it would alone, that its stdout is gone."""
    ticks = "i=0; while [ $i -lt 200 ]; do echo tick; i=$((i + 1)); sleep 0.05; done"
    with open("/dev/full", "wb") as full:
        wrapper = children.start(
            zombietop(db, fast_config_path, "run", "--task", "full", "--", "sh", "-c", ticks),
            stdout=full,
            stderr=subprocess.PIPE,
        )
    said = Said(wrapper.stderr)
    assert await asyncio.to_thread(wrapper.wait, 30) == 128 + signal.SIGPIPE, said.all()
    assert (
        "zombietop: could not write the command's stdout (No space left on device); closing "
        "it, so that the command's next write there fails too" in said.all()
    )


# A signal before the command started --------------------------------------------------------


async def test_a_signal_before_the_command_starts_is_passed_on_to_it(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    """Found in review: a SIGTERM between the start of the command and the wrapper's
    handlers killed the wrapper and left the command unsupervised. The handlers now come
    first; the wrapper, held on a full stderr just before it starts the command, takes the
    TERM and passes it on once the command runs."""
    stderr = FullPipe()
    wrapper = children.start(
        zombietop(db, fast_config_path, "run", "--", "sh", "-c", "sleep 30"),
        stdout=subprocess.DEVNULL,
        stderr=stderr.write,
    )
    await wait_for(lambda: blocked_writing_to_a_pipe(wrapper.pid), what="the wrapper to wait")
    wrapper.send_signal(signal.SIGTERM)
    said = stderr.drain()
    code = await asyncio.to_thread(wrapper.wait, 30)
    assert code == 128 + signal.SIGTERM, said.all()
    (record,) = await real_store.poll(None)
    task = record.task
    assert task.state is TaskState.INTERRUPTED and task.pid is not None
    assert task.state_reason == "stopped by SIGTERM (forwarded by zombietop run) (exit 143)"
