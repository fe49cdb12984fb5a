"""Heartbeat lines a command prints instead of writing them to its file: passed through unchanged,
and the wrapper says once how to send them. Real commands under the real `zombietop run`."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import Children, wait_for, zombietop
from zombietop.errors import TaskNotFound
from zombietop.model import EventKind
from zombietop.run.stray_beats import MAX_TRIES, StrayBeats
from zombietop.store.sqlite import SQLiteStore

HINT = "zombietop: the command printed heartbeat lines on its output"


def _run(db: Path, config: Path, script: str) -> subprocess.CompletedProcess[bytes]:
    argv = zombietop(db, config, "run", "--task", "t", "--", "sh", "-c", script)
    return subprocess.run(argv, capture_output=True, timeout=60)


async def _notes(store: SQLiteStore) -> list[str]:
    try:
        events = await store.events(task_id="t", kind=EventKind.NOTE)
    except TaskNotFound:
        return []
    return [event.message for event in events]


async def test_beats_on_stdout_pass_through_unchanged_and_the_wrapper_says_once_where_they_go(
    real_store: SQLiteStore, db: Path, fast_config_path: Path
) -> None:
    """The first natural try (the issue's own command, shortened) must not lose progress
    without a word: the job's author reads the hint on stderr, on-call in the task's events."""
    script = (
        "printf 'copying\\n\\377 raw bytes\\r\\n'; "
        'for i in 1 2 3; do echo "stage=copy p=$i"; sleep 0.1; done'
    )
    ran = await asyncio.to_thread(_run, db, fast_config_path, script)
    assert ran.returncode == 0, ran.stderr
    assert (
        ran.stdout == b"copying\n\xff raw bytes\r\nstage=copy p=1\nstage=copy p=2\nstage=copy p=3\n"
    )
    said = ran.stderr.decode().splitlines()
    assert said == [
        f"{HINT} (stage=copy p=1), but zombietop run reads heartbeats only from the heartbeat "
        "file, so its progress is not recorded; append each line to the file instead: "
        """echo 'stage=copy p=1' >> "$ZOMBIETOP_HEARTBEAT_FILE\""""
    ]
    beat = (await real_store.get_record("t")).heartbeat
    assert beat is None or beat.progress is None  # observed ones, at most: no progress
    assert await _notes(real_store) == [said[0].removeprefix("zombietop: ")]


async def test_the_hint_comes_while_the_command_still_runs(
    real_store: SQLiteStore,
    db: Path,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    done = tmp_path / "done"
    script = f'echo "stage=copy p=5"; while [ ! -e {done} ]; do sleep 0.05; done'
    wrapper = children.start(
        zombietop(db, fast_config_path, "run", "--task", "t", "--", "sh", "-c", script),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    async def noted() -> bool:
        return bool(await _notes(real_store))

    await wait_for(noted, what="the hint in the task's events")
    done.touch()
    _, err = await asyncio.to_thread(wrapper.communicate, timeout=20)
    assert wrapper.returncode == 0, err
    assert err.decode().count(HINT) == 1
    assert len(await _notes(real_store)) == 1


@pytest.mark.parametrize(
    "script",
    [
        # The file is in use: a job may also print its lines (tee), and the file wins.
        'for i in 1 2 3; do echo "stage=copy p=$i" | tee -a "$ZOMBIETOP_HEARTBEAT_FILE"; '
        "sleep 0.1; done",
        # The file was written once, before the lines printed on stdout: it is in use.
        'echo "stage=load p=1" >> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 0.2; echo "stage=copy p=9"',
    ],
    ids=["tee", "file-first"],
)
async def test_a_job_that_uses_the_heartbeat_file_gets_no_hint(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, script: str
) -> None:
    ran = await asyncio.to_thread(_run, db, fast_config_path, script)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == b""
    beat = (await real_store.get_record("t")).heartbeat
    assert beat is not None and beat.stage is not None
    assert await _notes(real_store) == []


async def test_key_value_lines_that_are_not_beats_get_no_hint(
    real_store: SQLiteStore, db: Path, fast_config_path: Path
) -> None:
    script = (
        "echo 'level=info msg=copied p=3'; echo 'p=3 msg=\"a logfmt line\"'; "
        "echo 'GET /items?p=3&stage=copy 200'; echo 'stage='; echo 'progress=50'"
    )
    ran = await asyncio.to_thread(_run, db, fast_config_path, script)
    assert ran.returncode == 0 and ran.stderr == b""
    assert await _notes(real_store) == []


def test_a_line_cut_between_two_reads_is_never_judged_by_its_second_half() -> None:
    stray = StrayBeats()
    stray.feed(b"copying GET /x?st", at_line_start=True)
    stray.feed(b"age=1\np=5 rows=3 and more\n", at_line_start=False)
    assert stray.first is None and not stray.done
    stray.feed(b"stage=copy p=5\n", at_line_start=True)
    assert stray.first == "stage=copy p=5"


def test_it_stops_looking_after_many_lines_that_only_start_like_beats() -> None:
    stray = StrayBeats()
    stray.feed(b"p=x\n" * MAX_TRIES, at_line_start=True)
    assert stray.done
    stray.feed(b"stage=copy p=5\n", at_line_start=True)
    assert stray.first is None
    assert stray.hint_due(file_used=False, seen_by=float("inf")) is None


def test_quiet_output_after_a_flood_is_looked_at_whole() -> None:
    stray = StrayBeats()
    stray.feed(b"level=info n=1\n" * 5000, at_line_start=True)  # 75 KB in one read
    stray.feed(b"stage=copy p=5\n", at_line_start=True)
    assert stray.first == "stage=copy p=5"
