"""A store on a read-only filesystem can still be read: after ``errors=remount-ro``, on a
snapshot mounted for a post-mortem, or through ``mount --bind -o ro``.

Real mounts (a tmpfs remounted read-only, and a read-only bind mount of a writable one) and
real ``zombietop`` processes. Reading creates no file and changes no byte there; a command
that must write says the filesystem is read-only and what to do. The suite needs root (and
the right to mount) for these, and skips them with that reason otherwise.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, zombietop
from zombietop.config import load_config
from zombietop.errors import ReadOnlyStore
from zombietop.judge.monitor import Monitor
from zombietop.store import open_store
from zombietop.store.sqlite import SQLiteStore


class Mounts:
    """The mounts one test makes, undone (innermost first) at its end."""

    def __init__(self) -> None:
        self.made: list[Path] = []

    def mount(self, *argv: str, at: Path) -> None:
        at.mkdir(exist_ok=True)
        done = subprocess.run(["mount", *argv, str(at)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(
                f"cannot mount here ({done.stderr.strip() or done.returncode}): the read-only "
                "filesystem tests need root and the right to mount"
            )
        self.made.append(at)

    def remount_read_only(self, at: Path, *, bind: bool = False) -> None:
        options = "remount,bind,ro" if bind else "remount,ro"
        subprocess.run(["mount", "-o", options, str(at)], check=True, capture_output=True)

    def undo(self) -> None:
        for at in reversed(self.made):
            subprocess.run(["umount", str(at)], check=False, capture_output=True)


@pytest.fixture
def mounts() -> Iterator[Mounts]:
    made = Mounts()
    try:
        yield made
    finally:
        made.undo()


@pytest.fixture(params=["remount-ro", "bind-ro"])
def read_only_folder(
    request: pytest.FixtureRequest, tmp_path: Path, mounts: Mounts
) -> Iterator[tuple[Path, Path, object]]:
    """(where the store is written, where it is read, how to make the reading side read-only)."""
    writable = tmp_path / "fs"
    mounts.mount("-t", "tmpfs", "-o", "size=32m,mode=0700", "tmpfs", at=writable)
    if request.param == "remount-ro":
        yield writable, writable, lambda: mounts.remount_read_only(writable)
    else:
        seen = tmp_path / "ro"
        mounts.mount("--bind", str(writable), at=seen)
        yield writable, seen, lambda: mounts.remount_read_only(seen, bind=True)


WRITER = textwrap.dedent(
    """
    import asyncio, os, sys
    from zombietop.store import open_store

    async def main(path, cut_off):
        store = await open_store(path, create=True)
        for task_id in sys.argv[3:]:
            await store.create_task(
                task_id=task_id, run_id="r", step=task_id, step_type="default", actor="t"
            )
        if cut_off:
            os._exit(0)  # a writer cut off by the remount: no checkpoint, -wal and -shm stay
        await store.add_silence(
            matcher="step_type", pattern="flaky", by="ana", reason="known", duration=3600
        )
        await store.close()

    asyncio.run(main(sys.argv[1], sys.argv[2] == "cut"))
    """
)


def write(db: Path, how: str, *task_ids: str) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(db), how, *task_ids], check=True, timeout=60)


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file in ``folder`` with a hash of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def status_json(db: Path, config: Path) -> dict[str, object]:
    done = subprocess.run(
        zombietop(db, config, "status", "--json", "--all"), capture_output=True, text=True
    )
    assert done.returncode in (0, 1, 2), done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def task_ids(found: dict[str, object]) -> set[str]:
    tasks = found["tasks"]
    assert isinstance(tasks, list)
    return {task["task_id"] for task in tasks}


@pytest.mark.parametrize("writers", ["closed", "cut off"])
def test_status_silences_and_the_read_only_dashboard_read_a_read_only_store(
    read_only_folder: tuple[Path, Path, object], tmp_path: Path, writers: str
) -> None:
    """Closed writers leave no write-ahead log (the main file holds everything); writers cut
    off leave -wal and -shm, and the newest task is only in the -wal: both are read whole."""
    writable, seen, make_read_only = read_only_folder
    config = tmp_path / "c.toml"
    config.write_text(FAST_CONFIG)
    write(writable / "z.db", "clean", "early-1")
    if writers == "cut off":
        write(writable / "z.db", "cut", "late-1")
        assert (writable / "z.db-wal").stat().st_size > 0
    assert callable(make_read_only)
    make_read_only()
    db = seen / "z.db"
    before = fingerprint(seen)
    expected = {"early-1", "late-1"} if writers == "cut off" else {"early-1"}

    assert task_ids(status_json(db, config)) == expected
    silences = subprocess.run(zombietop(db, config, "silences"), capture_output=True, text=True)
    assert silences.returncode == 0, silences.stderr
    assert "step_type flaky" in silences.stdout and "ana" in silences.stdout

    async def dashboard_poll() -> set[str]:
        # What `zombietop --read-only` opens: a read-only store on the monitor's own thread.
        async with await SQLiteStore.open(db, read_only=True, inline=True) as store:
            monitor = Monitor(store, load_config(config), include_finished=True)
            snapshot = await monitor.poll()
            assert snapshot.error is None, snapshot.error
            return {view.task_id for view in snapshot.tasks}

    assert asyncio.run(dashboard_poll()) == expected
    assert fingerprint(seen) == before  # no file made, no byte changed


def test_a_command_that_writes_says_the_filesystem_is_read_only(
    read_only_folder: tuple[Path, Path, object], tmp_path: Path
) -> None:
    writable, seen, make_read_only = read_only_folder
    config = tmp_path / "c.toml"
    config.write_text(FAST_CONFIG)
    write(writable / "z.db", "clean", "early-1")
    assert callable(make_read_only)
    make_read_only()
    done = subprocess.run(
        zombietop(seen / "z.db", config, "ack", "early-1"), capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"zombietop: store {seen / 'z.db'} is on a read-only filesystem, so it can only be read"
    ), done.stderr
    assert "remount it read-write" in done.stderr and done.stderr.count("\n") == 1

    async def open_writable() -> None:
        await open_store(seen / "z.db")

    with pytest.raises(ReadOnlyStore, match="read-only filesystem"):
        asyncio.run(open_writable())


def test_a_write_ahead_log_without_its_index_says_what_to_do(
    read_only_folder: tuple[Path, Path, object], tmp_path: Path
) -> None:
    """A snapshot copied without -shm: the -wal's changes cannot be read in place, and
    reading the main file alone would hide them; status says so, and how to read them."""
    writable, seen, make_read_only = read_only_folder
    config = tmp_path / "c.toml"
    config.write_text(FAST_CONFIG)
    write(writable / "z.db", "clean", "early-1")
    write(writable / "z.db", "cut", "late-1")
    (writable / "z.db-shm").unlink()
    assert callable(make_read_only)
    make_read_only()
    db = seen / "z.db"
    done = subprocess.run(zombietop(db, config, "status"), capture_output=True, text=True)
    assert done.returncode == 3
    assert f"store {db} is on a read-only filesystem" in done.stderr
    assert f"copy {db} and {db}-wal to a writable folder" in done.stderr
    nagios = subprocess.run(
        zombietop(db, config, "status", "--nagios"), capture_output=True, text=True
    )
    assert nagios.returncode == 3
    assert nagios.stdout.startswith("ZOMBIETOP UNKNOWN - store ")
    assert "read-only filesystem" in nagios.stdout
