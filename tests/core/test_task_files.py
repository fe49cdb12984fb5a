"""Task ids that differ only in ``/``, a space or ``_`` do not share files, and no task id is
too long for its files: names are a safe prefix plus a short hash of the exact id."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import zombietop
from zombietop import Job
from zombietop.config import Config
from zombietop.locations import TASK_NAME_PREFIX, safe_name, task_file_name
from zombietop.model import TaskState
from zombietop.store.sqlite import SQLiteStore

LOOKALIKES = ("col/x", "col_x", "col x", "col\\x")


def test_lookalike_ids_get_different_names_and_long_ids_short_ones() -> None:
    assert len({safe_name(t) for t in LOOKALIKES}) == 1  # the reported fault
    names = {task_file_name(t) for t in LOOKALIKES}
    assert len(names) == len(LOOKALIKES)
    assert all(name.startswith("col_x-") for name in names)
    long = task_file_name("x" * 5000)
    assert len(long) == TASK_NAME_PREFIX + 13
    assert task_file_name("col/x") == task_file_name("col/x")  # stable across runs


def test_lookalike_sdk_jobs_keep_their_own_checkpoints(db: Path, fast_config: Config) -> None:
    for n, task_id in enumerate(LOOKALIKES):
        with Job(task_id, db=db, config=fast_config) as job:
            job.checkpoint({"who": task_id, "n": n})
    paths = {Job(t, db=db, config=fast_config).checkpoint_path for t in LOOKALIKES}
    assert len(paths) == len(LOOKALIKES)
    for task_id in LOOKALIKES:
        assert Job(task_id, db=db, config=fast_config).load_checkpoint()["who"] == task_id


def test_a_checkpoint_under_its_old_name_is_taken_over_once(db: Path, fast_config: Config) -> None:
    old = db.with_name(db.name + ".d") / "checkpoints" / "export-2031.json"
    old.parent.mkdir(parents=True)
    old.write_text('{"offset": 41}')
    job = Job("export-2031", db=db, config=fast_config)
    assert job.load_checkpoint() == {"offset": 41}
    assert not old.exists() and job.checkpoint_path.name == f"{task_file_name('export-2031')}.json"


@pytest.mark.parametrize("task_id", ["col/x", "y" * 1000])
def test_run_of_a_lookalike_or_very_long_id_uses_its_own_heartbeat_file(
    tmp_path: Path, fast_config_path: Path, task_id: str
) -> None:
    """``col/x`` and ``col_x`` at once each see only their own beats; an id of 1,000
    characters runs and finishes instead of failing after its claim."""
    db = tmp_path / "z.db"
    script = 'echo "stage=$ZOMBIETOP_TASK_STAGE p=50" >> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 0.5'
    ids = [task_id, "col_x"] if task_id == "col/x" else [task_id]
    procs = [
        subprocess.Popen(
            zombietop(db, fast_config_path, "run", "--task", t, "--", "sh", "-c", script),
            env={"PATH": "/usr/bin:/bin", "ZOMBIETOP_TASK_STAGE": f"s{n}"},
            stderr=subprocess.PIPE,
        )
        for n, t in enumerate(ids)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()

    async def read() -> None:
        async with await SQLiteStore.open(db) as store:
            for n, t in enumerate(ids):
                record = await store.get_record(t)
                assert record.task.state is TaskState.SUCCEEDED
                assert record.heartbeat is not None and record.heartbeat.stage == f"s{n}"

    asyncio.run(read())
