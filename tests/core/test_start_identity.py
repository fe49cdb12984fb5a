"""A process's start identity: the kernel's count of clock ticks since the host's boot, with the
boot id, compared exactly; the wall-clock time only where a side has no count.

The time namespace test runs a real ``unshare --time --boottime 3600``: a reader inside sees
every start an hour of ticks later, and must still name the same process as a reader outside.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.realprocs import Children, wait_for
from zombietop import clock
from zombietop.clock import CLOCK_TICKS, host_boottime, host_ticks
from zombietop.model import Task, TaskState
from zombietop.procs import PsutilProbe, read_start, this_host
from zombietop.start_identity import (
    START_TIME_TOLERANCE,
    ProcessStart,
    StartIdentity,
    same_start,
    start_words,
)

BOOT = "ecfddbb6-2122-4567-b92d-24030369d68d"
OTHER_BOOT = "0b7e1c52-94d3-4f0a-8c61-5a2d9e3f1b07"


def _start(time: float, ticks: int | None = None, boot: str = BOOT) -> ProcessStart:
    identity = None if ticks is None else StartIdentity(boot_id=boot, ticks=ticks)
    return ProcessStart(time=time, identity=identity)


@pytest.mark.parametrize(
    ("recorded", "actual", "same"),
    [
        # Both sides counted by the kernel: exact, whatever the wall-clock times say.
        (_start(100.0, 5000), _start(100.0, 5000), True),
        (_start(100.0, 5000), _start(100.3, 5000), True),  # the boot time moved under psutil
        (_start(100.0, 5000), _start(100.0, 5001), False),  # one tick later: another process
        (_start(100.0, 5000), _start(100.0, 5000, OTHER_BOOT), False),  # another boot
        # A side without the count (an older row, no /proc): the wall clock, with a tolerance.
        (_start(100.0), _start(100.0 + START_TIME_TOLERANCE, 5000), True),
        (_start(100.0), _start(100.0 + START_TIME_TOLERANCE + 0.1, 5000), False),
        (_start(100.0, 5000), _start(99.5), True),
        (_start(100.0), _start(105.0), False),
        # Nothing recorded: the PID is all there is. No such process: never the same.
        (None, _start(100.0, 5000), True),
        (_start(100.0, 5000), None, False),
        (None, None, False),
    ],
)
def test_two_starts_are_one_process_by_ticks_and_boot_else_by_wall_clock(
    recorded: ProcessStart | None, actual: ProcessStart | None, same: bool
) -> None:
    assert same_start(recorded, actual) is same


def test_a_start_says_its_tick_and_boot() -> None:
    assert start_words(_start(1796160314.871, 360014)) == (
        "1796160314.87 (tick 360014 of boot ecfddbb6)"
    )
    assert start_words(_start(1796160314.871)) == "1796160314.87"
    assert start_words(None) == "unknown"


def test_host_ticks_take_the_readers_namespace_offset_away(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An offset of whole ticks comes off exactly; one of a part of a tick, or one that cannot
    be known, gives no count at all rather than one that may be a tick off."""
    tick_ns = 1_000_000_000 // CLOCK_TICKS
    for offset, expected in [
        (0, 500_000),
        (3600 * 1_000_000_000, 500_000 - 3600 * CLOCK_TICKS),
        (-60 * 1_000_000_000, 500_000 + 60 * CLOCK_TICKS),
        (tick_ns // 2, None),
        (None, None),
    ]:
        monkeypatch.setattr(clock, "boottime_offset_ns", lambda offset=offset: offset)
        assert host_ticks(500_000) == expected, offset


def _task(pid: int, start: ProcessStart) -> Task:
    return Task(
        task_id="t",
        run_id="r",
        step="s",
        step_type="default",
        state=TaskState.RUNNING,
        pid=pid,
        pid_start_time=start.time,
        pid_start_identity=start.identity,
        host=this_host(),
        created_at=0.0,
        updated_at=0.0,
    )


async def test_the_probe_calls_the_same_ticks_of_another_boot_another_process(
    children: Children,
) -> None:
    """A task recorded before a reboot: the pid and its tick may come round again, the boot id
    never does."""
    proc = children.start(["sleep", "30"])
    start = read_start(proc.pid)
    assert start is not None and start.identity is not None
    probe = PsutilProbe()
    assert (await probe.sample([_task(proc.pid, start)]))["t"].identity_ok
    before_reboot = _start(start.time, start.identity.ticks, OTHER_BOOT)
    sample = (await probe.sample([_task(proc.pid, before_reboot)]))["t"]
    assert sample.alive and not sample.identity_ok and sample.gone


async def test_a_start_recorded_without_ticks_is_still_compared_within_the_tolerance(
    children: Children,
) -> None:
    """A row an older zombietop wrote has the wall-clock time only: half a second off is the
    same process, five seconds off is not."""
    proc = children.start(["sleep", "30"])
    start = read_start(proc.pid)
    assert start is not None
    probe = PsutilProbe()
    near = (await probe.sample([_task(proc.pid, _start(start.time + 0.5))]))["t"]
    assert near.alive and near.identity_ok
    far = (await probe.sample([_task(proc.pid, _start(start.time + 5))]))["t"]
    assert far.alive and not far.identity_ok


# What a zombietop inside the time namespace reads of the process given by pid, and what its
# probe says of a task recorded outside for that process.
INSIDE = """
import json, sys, time
from zombietop.clock import boottime_offset_ns, host_boottime
from zombietop.model import Task, TaskState
from zombietop.procs import ProcessTable, ProcessTrees, PsutilProbe, read_start, this_host
from zombietop.start_identity import StartIdentity

pid, boot_id, ticks, wall = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
start = read_start(pid)
with open(f"/proc/{pid}/stat") as stat:
    raw = int(stat.read().rsplit(")", 1)[1].split()[19])
task = Task(task_id="t", run_id="r", step="s", step_type="d", state=TaskState.RUNNING, pid=pid,
            pid_start_time=wall, pid_start_identity=StartIdentity(boot_id=boot_id, ticks=ticks),
            host=this_host(), created_at=0.0, updated_at=0.0)
print(json.dumps({
    "offset_ns": boottime_offset_ns(),
    "raw_ticks": raw,
    "boot_id": start.identity.boot_id,
    "ticks": start.identity.ticks,
    "time": start.time,
    "table_ticks": ProcessTable.read().entry(pid).start_ticks,
    "trees_ticks": ProcessTrees().entry(pid).start_ticks,
    "identity_ok": PsutilProbe().sample_now([task])["t"].identity_ok,
    "host_boottime": host_boottime(),
    "boottime": time.clock_gettime(time.CLOCK_BOOTTIME),
}))
"""


def _unshare_time() -> list[str]:
    """The command that runs the rest in a new time namespace, its boot clock an hour ahead."""
    argv = ["unshare", "--time", "--boottime", "3600"]
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    if not Path(clock.TIMENS_OFFSETS_PATH).exists():
        pytest.skip("this kernel has no time namespaces (no /proc/self/timens_offsets)")
    tried = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=30)
    if tried.returncode != 0:
        pytest.skip(f"unshare --time is not permitted here: {tried.stderr.strip()}")
    return argv


async def test_the_identity_read_inside_a_time_namespace_is_the_one_read_outside(
    children: Children, tmp_path: Path
) -> None:
    argv = _unshare_time()
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f": > {ready}; exec sleep 30"])
    await wait_for(ready.exists, what="the shell to start")
    outside = read_start(proc.pid)
    assert outside is not None and outside.identity is not None
    identity = outside.identity
    recorded = [str(proc.pid), identity.boot_id, str(identity.ticks), str(outside.time)]
    before = host_boottime()
    done = subprocess.run(
        [*argv, sys.executable, "-c", INSIDE, *recorded],
        capture_output=True,
        text=True,
        timeout=60,
    )
    after = host_boottime()
    assert done.returncode == 0, done.stderr
    inside = json.loads(done.stdout)

    # The namespace is real: the kernel shows the start an hour of ticks later in there.
    assert inside["offset_ns"] == 3600 * 1_000_000_000
    assert inside["raw_ticks"] == identity.ticks + 3600 * CLOCK_TICKS
    # Yet every reader there names the process as the host does, and the probe agrees.
    assert (inside["boot_id"], inside["ticks"]) == (identity.boot_id, identity.ticks)
    assert inside["table_ticks"] == inside["trees_ticks"] == identity.ticks
    assert inside["identity_ok"]
    assert abs(inside["time"] - outside.time) <= START_TIME_TOLERANCE
    # The boot clock as the host sees it, read in there, falls between two readings outside.
    assert before is not None and after is not None
    assert before <= inside["host_boottime"] <= after
    assert before + 3600 <= inside["boottime"] <= after + 3600
