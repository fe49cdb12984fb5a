"""The psutil probe against real processes: identity, deltas, zombies, and the monitor's verdict.

Tests taking the ``reading`` fixture run twice: reading only the tasks' trees through the
kernel's children files, then reading the whole process table (the fallback).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from tests.core.realprocs import Children, start_task_process, start_with_pid, wait_for
from zombietop import procs
from zombietop.clock import CLOCK_TICKS, FakeClock, host_boottime
from zombietop.config import Config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.model import IdleSource, ProcessSample, Task, TaskState
from zombietop.procs import (
    ProcessReading,
    ProcessTable,
    ProcessTrees,
    PsutilProbe,
    read_start,
    this_host,
)
from zombietop.start_identity import ProcessStart, StartIdentity
from zombietop.store.sqlite import SQLiteStore


@pytest.fixture(params=[ProcessTrees, ProcessTable], ids=["trees", "table"])
def reading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type:
    """Make the probe read processes one way: the tasks' trees, or the whole table."""
    if request.param is ProcessTrees:
        if not procs.CHILDREN_FILES:
            pytest.skip("this kernel keeps no /proc/<pid>/task/<tid>/children files")
        monkeypatch.setattr(procs, "TREES_UP_TO", 1.0)  # leaders never outnumber processes
    else:
        monkeypatch.setattr(procs, "TREES_UP_TO", 0.0)
    kind: type = request.param
    return kind


class RecordingProbe(PsutilProbe):
    """The probe, keeping what each sample read."""

    def __init__(self, *, clock: FakeClock | None = None) -> None:
        super().__init__(clock=clock)
        self.readings: list[ProcessReading] = []

    def read_processes(self, leaders: set[int]) -> ProcessReading:
        self.readings.append(super().read_processes(leaders))
        return self.readings[-1]

    @property
    def last(self) -> ProcessReading:
        return self.readings[-1]


def _task(
    pid: int, start: ProcessStart | None, *, host: str | None = None, task_id: str = "t"
) -> Task:
    return Task(
        task_id=task_id,
        run_id="r",
        step="s",
        step_type="default",
        state=TaskState.RUNNING,
        pid=pid,
        pid_start_time=None if start is None else start.time,
        pid_start_identity=None if start is None else start.identity,
        host=host or this_host(),
        created_at=0.0,
        updated_at=0.0,
    )


async def test_live_process_is_sampled_with_deltas(
    children: Children, tmp_path: Path, reading: type
) -> None:
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f"sleep 30 & sleep 30 & : > {ready}; wait"])
    await wait_for(ready.exists, what="the shell's children")
    fake_clock = FakeClock()
    probe = RecordingProbe(clock=fake_clock)
    task = _task(proc.pid, read_start(proc.pid))

    first = (await probe.sample([task]))["t"]
    assert type(probe.last) is reading
    assert first.alive and first.identity_ok and not first.gone
    assert first.status in ("sleeping", "running")
    assert first.children == 2 and first.threads == 3 and (first.rss_bytes or 0) > 0
    assert first.cpu_percent is None  # a delta needs a previous sample

    fake_clock.advance(120)
    second = (await probe.sample([task]))["t"]
    assert second.cpu_percent is not None and second.cpu_percent < 5
    assert second.read_bytes_delta == 0 and second.write_bytes_delta == 0
    assert second.io_idle_s == 120
    # The first sample knows from the kernel's record how long ago a thread of the tree ran.
    assert first.idle_source is IdleSource.KERNEL and first.idle_s is not None
    assert first.idle_s < 60
    # The fake clock moved 2 minutes, the kernel's real one a moment: the longer one is said.
    assert second.idle_s == 120 and second.idle_source is IdleSource.SAMPLES


async def test_reused_pid_fails_identity(children: Children, tmp_path: Path, reading: type) -> None:
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f"sleep 30 & : > {ready}; wait"])
    await wait_for(ready.exists, what="the shell's child")
    start = read_start(proc.pid)
    assert start is not None and start.identity is not None
    earlier = StartIdentity(boot_id=start.identity.boot_id, ticks=start.identity.ticks - 10_000)

    probe = RecordingProbe()
    recorded = ProcessStart(time=start.time - 100, identity=earlier)
    sample = (await probe.sample([_task(proc.pid, recorded)]))["t"]
    assert sample.alive and not sample.identity_ok and sample.gone
    if reading is ProcessTrees:
        assert set(probe.last.entries) == {proc.pid}  # a stranger's tree is not read


async def test_a_pid_reused_by_another_process(
    children: Children, tmp_path: Path, reading: type
) -> None:
    """The task's process exits and a new one, with a child, gets its PID: not the task's,
    though it starts well within a second of the first (the kernel's count tells them apart)."""
    first = children.start(["sleep", "30"])
    start = read_start(first.pid)
    assert start is not None and start.identity is not None
    task = _task(first.pid, start)
    probe = RecordingProbe()
    assert (await probe.sample([task]))["t"].identity_ok
    first.kill()
    first.wait()
    # The kernel counts starts in clock ticks (10 ms): two starts within one tick read alike.
    started = start.identity.ticks
    await wait_for(lambda: _ticks_now() > started, what="the next clock tick")
    ready = tmp_path / "ready"
    second = start_with_pid(children, first.pid, ["sh", "-c", f"sleep 30 & : > {ready}; wait"])
    await wait_for(ready.exists, what="the new shell's child")

    sample = (await probe.sample([task]))["t"]
    assert sample.pid == second.pid and sample.alive and not sample.identity_ok and sample.gone
    if reading is ProcessTrees:
        assert set(probe.last.entries) == {second.pid}


def _ticks_now() -> int:
    """The host's boot clock now, in the clock ticks that start times are counted in."""
    now = host_boottime()
    assert now is not None
    return int(now * CLOCK_TICKS)


async def test_exited_and_zombie_processes_are_gone(children: Children, reading: type) -> None:
    reaped = children.start(["true"])
    reaped.wait(5)
    zombie = children.start(["true"])
    # Not reaped yet: it stays a zombie until we wait for it.
    await wait_for(lambda: _state(zombie.pid) == "Z", what="a zombie")
    probe = PsutilProbe()
    samples = await probe.sample(
        [_task(reaped.pid, None, task_id="reaped"), _task(zombie.pid, None, task_id="zombie")]
    )
    assert not samples["reaped"].alive and samples["reaped"].gone
    assert samples["zombie"].status == "zombie" and samples["zombie"].gone


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


async def test_a_member_that_exits_between_samples(
    children: Children, tmp_path: Path, reading: type
) -> None:
    """A child ends between two samples: the tree shrinks, the deltas stay sane."""
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f"sleep 30 & sleep 30 & : > {ready}; wait"])
    await wait_for(ready.exists, what="the shell's children")
    fake_clock = FakeClock()
    probe = PsutilProbe(clock=fake_clock)
    task = _task(proc.pid, read_start(proc.pid))
    assert (await probe.sample([task]))["t"].children == 2

    doomed = psutil.Process(proc.pid).children()[0].pid
    os.kill(doomed, signal.SIGKILL)
    await wait_for(lambda: not os.path.exists(f"/proc/{doomed}"), what="the shell to reap it")
    fake_clock.advance(10)
    second = (await probe.sample([task]))["t"]
    assert second.alive and second.identity_ok and second.children == 1
    assert second.cpu_percent is not None and 0 <= second.cpu_percent < 5
    assert second.read_bytes_delta == 0 and second.write_bytes_delta == 0


async def test_a_child_that_exits_after_its_parent_listed_it(
    children: Children, tmp_path: Path
) -> None:
    """The trees reader lists a parent's children, then reads each: one may be gone by then."""
    if not procs.CHILDREN_FILES:
        pytest.skip("this kernel keeps no /proc/<pid>/task/<tid>/children files")
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f"sleep 30 & sleep 30 & : > {ready}; wait"])
    await wait_for(ready.exists, what="the shell's children")
    trees = ProcessTrees()
    listed = list(trees.children(proc.pid))
    assert len(listed) == 2
    os.kill(listed[0], signal.SIGKILL)
    await wait_for(lambda: not os.path.exists(f"/proc/{listed[0]}"), what="the shell to reap it")
    assert [entry.pid for entry in trees.descendants(proc.pid)] == [listed[1]]
    assert trees.entry(listed[0]) is None


async def test_a_daemonised_child_leaves_the_tree(
    children: Children, tmp_path: Path, reading: type
) -> None:
    """A double fork reparents the grandchild away: neither reading counts it any more."""
    ready, daemon = tmp_path / "ready", tmp_path / "daemon.pid"
    proc = children.start(
        ["sh", "-c", f"(sleep 30 & echo $! > {daemon}); sleep 30 & : > {ready}; wait"]
    )
    await wait_for(ready.exists, what="the shell's children")
    escaped = int(daemon.read_text())
    try:
        await wait_for(
            lambda: psutil.Process(escaped).ppid() != proc.pid, what="the daemon to be reparented"
        )
        sample = await PsutilProbe().sample([_task(proc.pid, read_start(proc.pid))])
        assert sample["t"].children == 1
    finally:
        os.kill(escaped, signal.SIGKILL)


async def test_other_hosts_are_not_probed() -> None:
    probe = PsutilProbe(host="this-box")
    assert await probe.sample([_task(os.getpid(), None, host="other-box")]) == {}


async def test_monitor_with_probe_calls_a_dead_process_dead(
    real_store: SQLiteStore, fast_config: Config, children: Children, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(real_store, children, f": > {ready}; sleep 30", ready)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe())
    assert (await monitor.poll()).by_id()["t1"].health is not Health.DEAD

    os.kill(proc.pid, signal.SIGKILL)
    await asyncio.to_thread(proc.wait, 5)
    snapshot = await monitor.poll()
    view = snapshot.by_id()["t1"]
    assert view.health is Health.DEAD and snapshot.taken_at is not None
    assert "is gone" in view.verdict.reasons[0].words(snapshot.taken_at)


async def test_probe_runs_off_the_event_loop(children: Children) -> None:
    """The sample is taken in a worker thread: the loop runs while the sample is in progress.

    The sample waits, in its thread, for a gate only the loop opens: were it run on the loop,
    nothing would open the gate and the sample would fail after its wait.
    """
    proc = children.start(["sleep", "30"], stdout=subprocess.DEVNULL)
    loop = asyncio.get_running_loop()
    entered = asyncio.Event()
    gate = threading.Event()

    class GatedProbe(PsutilProbe):
        def sample_now(self, tasks: Sequence[Task]) -> dict[str, ProcessSample]:
            loop.call_soon_threadsafe(entered.set)
            if not gate.wait(10):
                raise AssertionError("the loop never opened the gate: the sample blocked it")
            return super().sample_now(tasks)

    sampling = asyncio.create_task(GatedProbe().sample([_task(proc.pid, None)]))
    await asyncio.wait_for(entered.wait(), 10)
    gate.set()
    assert (await sampling)["t"].alive


async def test_one_read_of_the_process_table_per_sample(
    children: Children, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the table, however many tasks a sample covers, it is read once."""
    monkeypatch.setattr(procs, "TREES_UP_TO", 0.0)
    procs_ = [children.start(["sleep", "30"]) for _ in range(5)]
    reads = 0
    read = ProcessTable.read.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ProcessTable]) -> ProcessTable:
        nonlocal reads
        reads += 1
        table: ProcessTable = read(cls)
        return table

    monkeypatch.setattr(ProcessTable, "read", classmethod(counted))
    tasks = [_task(p.pid, read_start(p.pid), task_id=f"t{i}") for i, p in enumerate(procs_ * 40)]
    samples = await PsutilProbe().sample(tasks)
    assert reads == 1 and len(samples) == 200 and all(s.alive for s in samples.values())


async def test_reading_trees_reads_the_trees_and_nothing_else(
    children: Children, tmp_path: Path
) -> None:
    """Thirty tasks over three shells with two children each: nine processes read, each once."""
    if not procs.CHILDREN_FILES:
        pytest.skip("this kernel keeps no /proc/<pid>/task/<tid>/children files")
    shells = []
    for number in range(3):
        ready = tmp_path / f"ready{number}"
        shells.append(children.start(["sh", "-c", f"sleep 30 & sleep 30 & : > {ready}; wait"]))
        await wait_for(ready.exists, what="the shell's children")
    members = {s.pid for s in shells}
    members |= {c.pid for s in shells for c in psutil.Process(s.pid).children()}
    tasks = [_task(s.pid, read_start(s.pid), task_id=f"t{i}") for i, s in enumerate(shells * 10)]
    probe = RecordingProbe()
    samples = await probe.sample(tasks)
    assert all(sample.children == 2 for sample in samples.values())
    assert type(probe.last) is ProcessTrees and set(probe.last.entries) == members


def test_the_table_is_read_when_trees_would_cost_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trees for a few leaders; the table when the leaders are many beside the host's
    processes, or the kernel keeps no children files."""
    host = sum(1 for name in os.listdir("/proc") if name.isdigit())
    probe = PsutilProbe()
    few, many = {os.getpid()}, set(range(1, host + 1))
    expected = ProcessTrees if procs.CHILDREN_FILES else ProcessTable
    assert type(probe.read_processes(few)) is expected
    assert type(probe.read_processes(many)) is ProcessTable
    monkeypatch.setattr(procs, "CHILDREN_FILES", False)
    assert type(probe.read_processes(few)) is ProcessTable


async def test_the_choice_expects_the_trees_the_last_sample_found(
    children: Children, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One leader among four processes: its tree is read while a tree is expected to hold
    one process (two reads beside the table's four); once a sample found three in it, the
    table (six reads beside four). Two tasks on one process share one look at it."""
    if not procs.CHILDREN_FILES:
        pytest.skip("this kernel keeps no /proc/<pid>/task/<tid>/children files")
    monkeypatch.setattr(procs, "_count_processes", lambda: 4)
    ready = tmp_path / "ready"
    shell = children.start(["sh", "-c", f"sleep 30 & sleep 30 & : > {ready}; wait"])
    await wait_for(ready.exists, what="the shell's children")
    tasks = [_task(shell.pid, read_start(shell.pid), task_id=f"t{i}") for i in range(2)]
    probe = RecordingProbe()
    first = await probe.sample(tasks)
    assert type(probe.last) is ProcessTrees
    assert first["t0"] is first["t1"] and first["t0"].children == 2
    await probe.sample(tasks)
    assert type(probe.last) is ProcessTable


async def test_cpu_is_summed_over_the_tree(
    children: Children, tmp_path: Path, reading: type
) -> None:
    """sh -c over a CPU-bound grandchild: the shell idles, the tree's CPU is the child's."""
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f"sh -c ': > {ready}; while :; do :; done' & wait"])
    await wait_for(ready.exists, what="the busy grandchild")
    probe = RecordingProbe()
    task = _task(proc.pid, read_start(proc.pid))
    first = (await probe.sample([task]))["t"]
    assert type(probe.last) is reading
    assert first.cpu_percent is None and first.children == 1
    busy = psutil.Process(proc.pid).children()[0]
    used = sum(busy.cpu_times()[:2])
    # A loaded machine gives the loop what it can, maybe little: wait until it had some.
    await wait_for(lambda: sum(busy.cpu_times()[:2]) > used, what="the loop to run")
    second = (await probe.sample([task]))["t"]
    # The shell alone uses none:
    assert second.cpu_percent is not None and second.cpu_percent > 0
    leader = psutil.Process(proc.pid).cpu_times()
    assert leader.user + leader.system < 0.5
    assert "pid " + str(proc.pid) + " + 1 child, cpu" in _words(second)
    assert second.idle_s is not None and second.idle_s < 1  # the tree used CPU: not idle


def _words(sample: ProcessSample) -> str:
    from zombietop.process_words import process_words

    return process_words(sample)


async def test_a_task_left_out_of_a_sample_keeps_its_delta(
    children: Children, reading: type
) -> None:
    """A sample may cover only some tasks: the others never fall back to cpu ?."""
    a, b = children.start(["sleep", "30"]), children.start(["sleep", "30"])
    probe = PsutilProbe()
    ta = _task(a.pid, read_start(a.pid), task_id="a")
    tb = _task(b.pid, read_start(b.pid), task_id="b")
    await probe.sample([ta, tb])
    await probe.sample([ta])
    assert (await probe.sample([tb]))["b"].cpu_percent is not None


async def test_a_stopped_process_reads_no_cpu_and_says_it_is_stopped(
    children: Children, reading: type
) -> None:
    """SIGSTOP after a busy stretch: the sample says stopped and 0%, not the CPU it used in the
    interval before the stop (issue 46)."""
    busy = children.start([sys.executable, "-c", "while True: pass"])
    probe = RecordingProbe(clock=(clock := FakeClock()))
    task = _task(busy.pid, read_start(busy.pid))
    await probe.sample([task])
    used = psutil.Process(busy.pid).cpu_times()
    await wait_for(
        lambda: sum(psutil.Process(busy.pid).cpu_times()[:2]) > sum(used[:2]) + 0.1,
        what="the loop to use CPU",
    )
    os.kill(busy.pid, signal.SIGSTOP)
    try:
        await wait_for(lambda: psutil.Process(busy.pid).status() == "stopped", what="the stop")
        clock.advance(1)
        stopped = (await probe.sample([task]))["t"]
    finally:
        os.kill(busy.pid, signal.SIGCONT)
    assert stopped.status == "stopped" and stopped.cpu_percent == 0.0
    assert _words(stopped) == f"pid {busy.pid} stopped cpu 0%"
