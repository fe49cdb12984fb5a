"""Commands that report nothing, judged by what they do; and their last output. Real processes
under the real `zombietop run`, seen through the real `zombietop status` and the watchdog."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import psutil

from tests.core.realprocs import Children, wait_for, zombietop
from zombietop.config import Config
from zombietop.errors import TaskNotFound
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.model import HeartbeatSource
from zombietop.output import (
    KEEP,
    TRIM_AT,
    OutputLog,
    output_path,
    private_output_path,
    prune_attempts,
    read_last_output,
)
from zombietop.paging.notify import LogNotifier
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

BUSY = "while :; do :; done"
"""A legacy command: all CPU, no heartbeat line, no output."""


def _status(db: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        zombietop(db, config, "status", *args), capture_output=True, text=True, timeout=60
    )


def _tasks(db: Path, config: Path) -> dict[str, dict[str, Any]]:
    result = _status(db, config, "--json", "--all")
    assert result.returncode in (0, 1, 2), result.stderr
    return {task["task_id"]: task for task in json.loads(result.stdout)["tasks"]}


def _run(
    db: Path, config: Path, children: Children, task_id: str, script: str
) -> subprocess.Popen[bytes]:
    return children.start(
        zombietop(db, config, "run", "--task", task_id, "--", "sh", "-c", script),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def _exists(store: SQLiteStore, task_id: str) -> bool:
    try:
        return (await store.get_task(task_id)).pid is not None
    except TaskNotFound:
        return False


async def test_a_busy_silent_command_is_healthy_and_an_idle_one_stalls_for_no_activity(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
) -> None:
    _run(db, fast_config_path, children, "busy", BUSY)
    _run(db, fast_config_path, children, "idle", "sleep 60")
    await wait_for(lambda: _exists(real_store, "busy"), what="the busy command")
    await wait_for(lambda: _exists(real_store, "idle"), what="the idle command")
    limits = fast_config.limits_for(None)
    # Well past the heartbeat timeout (600 ms) and the start grace (2 s).
    await asyncio.sleep(limits.start_grace + 4 * limits.heartbeat_timeout)

    tasks = await asyncio.to_thread(_tasks, db, fast_config_path)
    busy, idle = tasks["busy"], tasks["idle"]
    assert busy["health"] == "healthy", busy["reasons"]
    assert busy["heartbeat_source"] == "observed"
    assert busy["counters"]["cpu_s"] > 0 and busy["progress"] is None
    assert "observed heartbeat" in busy["context"]
    assert idle["health"] == "stalled", idle
    (reason,) = [r for r in idle["reasons"] if r["code"] == "no_activity"]
    assert reason["message"].startswith("no activity for ")
    assert ": cpu, I/O and output flat (start grace 2s)" in reason["message"]

    # Observed beats never move progress: the busy task's progress_changed_at stays put.
    first = (await real_store.get_record("busy")).heartbeat
    assert first is not None and first.source is HeartbeatSource.OBSERVED
    await wait_for(lambda: _later_beat(real_store, "busy", first.seq), what="another observed beat")
    later = (await real_store.get_record("busy")).heartbeat
    assert later is not None and later.progress_changed_at == first.progress_changed_at


async def _later_beat(store: SQLiteStore, task_id: str, seq: int) -> bool:
    beat = (await store.get_record(task_id)).heartbeat
    return beat is not None and beat.seq > seq


async def test_a_command_that_only_prints_is_active(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
) -> None:
    """Output alone is activity: out_lines moves, the task stays healthy."""
    _run(db, fast_config_path, children, "chatty", "while :; do echo tick; sleep 0.1; done")
    await wait_for(lambda: _exists(real_store, "chatty"), what="the chatty command")
    await asyncio.sleep(fast_config.limits_for(None).start_grace + 1.5)
    chatty = (await asyncio.to_thread(_tasks, db, fast_config_path))["chatty"]
    assert chatty["health"] == "healthy", chatty["reasons"]
    assert chatty["counters"]["out_lines"] > 5
    assert chatty["last_output"]["line"] == "tick" and chatty["last_output"]["age_s"] < 2


async def test_a_command_that_beats_is_judged_by_its_lines(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
) -> None:
    """It keeps beating the same progress while burning CPU: spinning, never rescued by activity."""
    script = (
        'while :; do echo "stage=load p=40" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
        "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; done"
    )
    _run(db, fast_config_path, children, "beats", script)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe())

    async def beating() -> bool:
        view = (await monitor.poll()).by_id().get("beats")
        return view is not None and view.heartbeat is not None

    await wait_for(beating, what="the first line")
    view = (await monitor.poll()).by_id()["beats"]
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.REPORTED
    assert view.health is Health.HEALTHY


async def test_sh_c_over_a_cpu_bound_child_reports_the_childs_cpu(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    """zombietop run -- sh -c 'sh -c busy': the shell leads, the grandchild works."""
    _run(db, fast_config_path, children, "nested", f"sh -c '{BUSY}'; true")
    await wait_for(lambda: _exists(real_store, "nested"), what="the nested command")
    # `status` samples twice, a moment apart: a CPU% on the first call, never `cpu ?`.
    nested = (await asyncio.to_thread(_tasks, db, fast_config_path))["nested"]
    assert nested["process"]["cpu_percent"] is not None
    # The machine is shared: any clear share of a core is the child's, as the shell uses none.
    assert nested["process"]["cpu_percent"] > 0, nested["context"]
    pid = nested["pid"]
    leader = psutil.Process(pid).cpu_times()
    assert leader.user + leader.system < 0.5
    assert f"pid {pid} + 1 child, cpu " in nested["context"]


async def test_the_last_output_is_passed_through_kept_and_shown(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    """stdout and stderr pass through unchanged; the last line shows in status --json, in the
    status text and in the watchdog's page line, escaped wherever a terminal shows it."""
    script = (
        # Two pipes, two copying threads: the kept tail interleaves them as they arrive.
        "printf 'to stdout\\n'; printf 'to stderr\\n' >&2; sleep 0.3; "
        "printf 'retrying POST /orders (attempt 37) \\033]0;pwned\\007\\n'; exec sleep 60"
    )
    wrapper = _run(db, fast_config_path, children, "quiet", script)
    await wait_for(lambda: _exists(real_store, "quiet"), what="the command")
    kept = output_path(db, "quiet", 1)
    await wait_for(lambda: kept.exists() and b"attempt 37" in kept.read_bytes(), what="output")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700

    stalled = fast_config.limits_for(None).start_grace + 0.5
    await asyncio.sleep(stalled)
    quiet = (await asyncio.to_thread(_tasks, db, fast_config_path))["quiet"]
    assert quiet["health"] == "stalled"
    line = "retrying POST /orders (attempt 37) \x1b]0;pwned\x07"
    assert quiet["last_output"]["line"] == line  # JSON keeps the exact text
    assert quiet["last_output"]["age_s"] >= stalled - 0.5

    text = (await asyncio.to_thread(_status, db, fast_config_path)).stdout
    assert "\x1b" not in text and "\x07" not in text
    page = [row for row in text.splitlines() if row.startswith("quiet stalled:")]
    assert page and page[0].endswith(
        "ago: retrying POST /orders (attempt 37) \\x1b]0;pwned\\x07"
    ), page
    assert "; last output " in page[0]

    said: list[str] = []
    watchdog = Watchdog(
        Monitor(real_store, fast_config, probe=PsutilProbe()),
        fast_config,
        executor=None,
        notifiers=[LogNotifier.dry_run(said.append)],
        log=lambda line: None,
    )
    await watchdog.tick()
    (paged,) = [line for line in said if "quiet stalled:" in line]
    assert "\x1b" not in paged
    assert paged.endswith("ago: retrying POST /orders (attempt 37) \\x1b]0;pwned\\x07"), paged

    wrapper.terminate()
    out, err = await asyncio.to_thread(wrapper.communicate, timeout=20)
    assert out.startswith(b"to stdout\nretrying POST /orders (attempt 37) \x1b]0;pwned\x07\n")
    assert err.startswith(b"to stderr\n")


async def test_the_kept_output_is_bounded(
    real_store: SQLiteStore, db: Path, fast_config_path: Path
) -> None:
    """Six thousand lines pass through; the file keeps the end, from a line start, bounded."""
    flood = "i=0; while [ $i -lt 6000 ]; do echo line-$i-........................; i=$((i+1)); done"
    ran = await asyncio.to_thread(
        subprocess.run,
        zombietop(db, fast_config_path, "run", "--task", "flood", "--", "sh", "-c", flood),
        capture_output=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.count(b"\n") == 6000  # all of it passed through
    data = output_path(db, "flood", 1).read_bytes()
    assert KEEP - 100 <= len(data) <= 2 * KEEP  # the last KEEP bytes, less a cut half line
    assert data.startswith(b"line-") and data.endswith(b"line-5999-........................\n")


def _io_of_this_process() -> tuple[int, int]:
    """Bytes this process read and wrote through system calls so far (/proc/self/io)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["rchar"]), int(fields["wchar"])


def test_keeping_the_tail_costs_about_one_write_of_the_output(tmp_path: Path) -> None:
    """Found by bench/passthrough.py: the kept tail cost 11 CPU seconds a GB, for the file was
    rewritten (read, new file, rename, reopen) each time it passed 128 KiB. It is now moved
    within the same file once a MiB: close to one write of what passed, bounded all along,
    the same private file, and its last 64 KiB from a line start at the end."""
    path = private_output_path(tmp_path / "zombietop.db", "big", 1)
    log = OutputLog(path)
    inode = os.stat(path).st_ino
    chunk = b"".join(b"INFO copying block %05d of the export\n" % n for n in range(1000))
    assert len(chunk) < KEEP  # the size a pipe read brings, appended as it comes
    rounds = 8 * 1024 * 1024 // len(chunk)
    read_before, written_before = _io_of_this_process()
    largest = 0
    for _ in range(rounds):
        log.write(chunk)
        largest = max(largest, os.stat(path).st_size)
    read, written = (
        now - then
        for now, then in zip(_io_of_this_process(), (read_before, written_before), strict=True)
    )
    log.close()
    passed = rounds * len(chunk)
    assert written <= 1.1 * passed, f"wrote {written / passed:.2f}x what passed"
    assert read <= 0.1 * passed, f"read {read / passed:.2f}x what passed"
    assert largest <= TRIM_AT
    assert os.stat(path).st_ino == inode and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    data = path.read_bytes()
    assert KEEP - len(chunk) // 1000 <= len(data) <= KEEP
    assert data.startswith(b"INFO copying block ") and data.endswith(chunk[-200:])
    assert log.lines == rounds * 1000


def test_a_flood_keeps_its_latest_end(tmp_path: Path) -> None:
    """Reads of 64 KiB (a command writing faster than the copy) reach the file at most ten
    times a second, and the last of them is there once the log is closed."""
    path = private_output_path(tmp_path / "zombietop.db", "flood", 1)
    log = OutputLog(path)
    for n in range(50):
        log.write(b"".join(b"chunk %02d line %05d\n" % (n, i) for i in range(4000)))
    log.write(b"the end\n")
    log.close()
    data = path.read_bytes()
    assert len(data) <= KEEP and data.startswith(b"chunk 49 line ")
    assert data.endswith(b"chunk 49 line 03999\nthe end\n")
    assert log.lines == 50 * 4000 + 1


def test_older_attempts_are_pruned(tmp_path: Path) -> None:
    store = tmp_path / "zombietop.db"
    for attempt in (1, 2, 3):
        OutputLog(private_output_path(store, "t", attempt)).close()
    prune_attempts(store, "t", 4)
    left = sorted(os.listdir(output_path(store, "t", 1).parent))
    assert left == [output_path(store, "t", 3).name]  # attempt 4 keeps the one before it


def test_a_progress_bar_shows_as_a_terminal_leaves_it(tmp_path: Path) -> None:
    store = tmp_path / "zombietop.db"
    log = OutputLog(private_output_path(store, "bar", 1))
    log.write(b"copying\n 10%\r 50%\r 90%\r")
    log.close()
    last = read_last_output(store, "bar", 1)
    assert last is not None and last.line == " 90%" and last.lines == ("copying", " 90%")


async def test_an_observed_beat_after_a_line_shows_no_clock_skew(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
) -> None:
    """The reported fault: the demo's detail view said the worker's clock was 3 s behind the
    store's, on one host: an observed beat moved the store's time of the beat, while the job's
    own time stayed that of its last line."""
    script = (
        'echo "stage=transform p=61 at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >> '
        '"$ZOMBIETOP_HEARTBEAT_FILE"; while :; do echo tick; sleep 0.1; done'
    )
    _run(db, fast_config_path, children, "quiet-after-a-line", script)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe())

    async def observed_later() -> bool:
        view = (await monitor.poll()).by_id().get("quiet-after-a-line")
        beat = None if view is None else view.heartbeat
        return (
            beat is not None
            and beat.observed
            and beat.reported_at is not None
            and beat.written_at - beat.reported_at >= 2.5
        )

    await wait_for(observed_later, timeout=30, what="an observed beat 2.5 s after the line")
    view = (await monitor.poll()).by_id()["quiet-after-a-line"]
    assert view.heartbeat is not None and view.heartbeat.stage == "transform"
    assert view.clock_skew_s is None
