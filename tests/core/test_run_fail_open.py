"""A broken monitor never stops a job: ``zombietop run --job`` runs its command when the store
cannot be used, and records the run once it can; ``--task`` and ``--after`` refuse."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, Said, wait_for, zombietop
from zombietop.config import load_config
from zombietop.errors import ConfigError, StoreError
from zombietop.model import EventKind, TaskState
from zombietop.store import open_store

WAITS_FOR_STOP = "touch started; while [ ! -e stop ]; do sleep 0.05; done; exit 3"


def _corrupt(db: Path) -> None:
    db.write_bytes(b"this is not a database, " * 400)


async def _runs_of(db: Path) -> list[tuple[str, TaskState, int | None]]:
    try:
        async with await open_store(db) as store:
            return [
                (r.task.task_id, r.task.state, r.task.exit_code) for r in await store.poll(None)
            ]
    except StoreError:
        return []


async def test_a_job_runs_with_a_corrupt_store_and_is_recorded_when_it_comes_back(
    tmp_path: Path, children: Children
) -> None:
    db, config = tmp_path / "z.db", tmp_path / "config.toml"
    config.write_text(FAST_CONFIG)
    _corrupt(db)
    proc = children.start(
        zombietop(db, config, "run", "--job", "nightly", "--", "sh", "-c", WAITS_FOR_STOP),
        cwd=tmp_path,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    said = Said(proc.stderr)
    await wait_for(lambda: (tmp_path / "started").exists(), what="the job", while_running=proc)
    assert said.wait_for("running the command unwatched")
    assert "not a readable zombietop store" in said.all(timeout=0)

    db.unlink()  # the store comes back: an empty one, made at the next try

    async def running() -> bool:
        runs = await _runs_of(db)
        return len(runs) == 1 and runs[0][1] is TaskState.RUNNING

    await wait_for(running, what="the run recorded while it runs", while_running=proc)
    (tmp_path / "stop").touch()
    assert proc.wait(timeout=60) == 3
    [(task_id, state, code)] = await _runs_of(db)
    assert task_id.startswith("nightly/") and state is TaskState.FAILED and code == 3
    async with await open_store(db) as store:
        notes = await store.events(task_id=task_id, kind=EventKind.NOTE)
    assert any("ran unwatched" in note.message for note in notes), notes


async def test_a_job_that_ends_before_the_store_comes_back_is_recorded_then(
    tmp_path: Path, children: Children
) -> None:
    db, config = tmp_path / "z.db", tmp_path / "config.toml"
    config.write_text(FAST_CONFIG)
    _corrupt(db)
    proc = children.start(
        zombietop(db, config, "run", "--job", "nightly", "--", "sh", "-c", "touch ended"),
        cwd=tmp_path,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    said = Said(proc.stderr)
    await wait_for(lambda: (tmp_path / "ended").exists(), what="the job", while_running=proc)
    db.unlink()
    assert proc.wait(timeout=60) == 0
    assert "recorded the run nightly/" in said.all(), said.all()
    [(_, state, code)] = await _runs_of(db)
    assert state is TaskState.SUCCEEDED and code == 0


@pytest.mark.parametrize(
    ("args", "config_extra", "runs"),
    [
        (("--task", "t1"), "", False),
        (("--job", "j", "--after", "up"), "", False),
        (("--job", "j", "--require-lease"), "", False),
        (("--job", "j"), "[step_types.j]\nrequire_lease = true\n", False),
        (("--task", "t1", "--no-require-lease"), "", True),
        (("--task", "t1", "--type", "x"), "[step_types.x]\nrequire_lease = false\n", True),
        (("--job", "j", "--no-require-lease"), "[step_types.j]\nrequire_lease = true\n", True),
    ],
)
def test_who_refuses_without_a_store(
    tmp_path: Path, args: tuple[str, ...], config_extra: str, runs: bool
) -> None:
    """``--task`` and ``--after`` refuse by default; the flag, then the step type, decide."""
    db, config = tmp_path / "z.db", tmp_path / "config.toml"
    config.write_text(FAST_CONFIG + config_extra)
    _corrupt(db)
    done = subprocess.run(
        zombietop(db, config, "run", *args, "--", "sh", "-c", "touch ran; exit 5"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (tmp_path / "ran").exists() is runs, done.stderr
    if runs:
        assert done.returncode == 5, done.stderr
        assert "running the command unwatched" in done.stderr
        assert "the run is not recorded" in done.stderr
    else:
        assert done.returncode == 2, done.stderr
        assert "unwatched" not in done.stderr


def test_require_lease_must_be_true_or_false(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(FAST_CONFIG + '[step_types.j]\nrequire_lease = "yes"\n')
    with pytest.raises(ConfigError, match="require_lease must be true or false"):
        load_config(config)
