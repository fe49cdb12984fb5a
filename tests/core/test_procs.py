"""The psutil probe against real processes: identity, deltas, zombies, and the monitor's verdict."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from tests.core.realprocs import Children, start_task_process, wait_for, wait_for_file
from zombietop.clock import FakeClock
from zombietop.config import Config
from zombietop.model import Health, ProcessSample, Task, TaskState
from zombietop.monitor import Monitor
from zombietop.procs import ProcessTable, PsutilProbe, process_start_time, same_start, this_host
from zombietop.store.sqlite import SQLiteStore


def _task(pid: int, start: float | None, *, host: str | None = None, task_id: str = "t") -> Task:
    return Task(
        task_id=task_id,
        run_id="r",
        step="s",
        step_type="default",
        state=TaskState.RUNNING,
        pid=pid,
        pid_start_time=start,
        host=host or this_host(),
        created_at=0.0,
        updated_at=0.0,
    )


async def test_live_process_is_sampled_with_deltas(children: Children, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f"sleep 30 & sleep 30 & : > {ready}; wait"])
    wait_for_file(ready)
    fake_clock = FakeClock()
    probe = PsutilProbe(clock=fake_clock)
    task = _task(proc.pid, process_start_time(proc.pid))

    first = (await probe.sample([task]))["t"]
    assert first.alive and first.identity_ok and not first.gone
    assert first.status in ("sleeping", "running")
    assert first.children == 2 and first.threads == 3 and (first.rss_bytes or 0) > 0
    assert first.cpu_percent is None  # a delta needs a previous sample

    fake_clock.advance(120)
    second = (await probe.sample([task]))["t"]
    assert second.cpu_percent is not None and second.cpu_percent < 5
    assert second.read_bytes_delta == 0 and second.write_bytes_delta == 0
    assert second.io_idle_s == 120


async def test_reused_pid_fails_identity(children: Children, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f": > {ready}; sleep 30"])
    wait_for_file(ready)
    start = process_start_time(proc.pid)
    assert start is not None and same_start(start, start + 0.5) and not same_start(start, start + 5)

    sample = (await PsutilProbe().sample([_task(proc.pid, start - 100)]))["t"]
    assert sample.alive and not sample.identity_ok and sample.gone


async def test_exited_and_zombie_processes_are_gone(children: Children) -> None:
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
    """However many tasks a sample covers, the process table is read once."""
    procs = [children.start(["sleep", "30"]) for _ in range(5)]
    reads = 0
    read = ProcessTable.read.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ProcessTable]) -> ProcessTable:
        nonlocal reads
        reads += 1
        table: ProcessTable = read(cls)
        return table

    monkeypatch.setattr(ProcessTable, "read", classmethod(counted))
    tasks = [
        _task(p.pid, process_start_time(p.pid), task_id=f"t{i}") for i, p in enumerate(procs * 40)
    ]
    samples = await PsutilProbe().sample(tasks)
    assert reads == 1 and len(samples) == 200 and all(s.alive for s in samples.values())


async def test_cpu_is_summed_over_the_tree(children: Children, tmp_path: Path) -> None:
    """sh -c over a CPU-bound grandchild: the shell idles, the tree's CPU is the child's."""
    ready = tmp_path / "ready"
    proc = children.start(["sh", "-c", f"sh -c ': > {ready}; while :; do :; done' & wait"])
    wait_for_file(ready)
    probe = PsutilProbe()
    task = _task(proc.pid, process_start_time(proc.pid))
    first = (await probe.sample([task]))["t"]
    assert first.cpu_percent is None and first.children == 1
    await asyncio.sleep(0.5)
    second = (await probe.sample([task]))["t"]
    # A loaded machine gives the loop what it can, maybe little; the shell alone uses none:
    assert second.cpu_percent is not None and second.cpu_percent > 0
    leader = psutil.Process(proc.pid).cpu_times()
    assert leader.user + leader.system < 0.5
    assert "pid " + str(proc.pid) + " + 1 child, cpu" in _words(second)


def _words(sample: ProcessSample) -> str:
    from zombietop.classify import _process_words

    return _process_words(sample)


async def test_a_task_left_out_of_a_sample_keeps_its_delta(children: Children) -> None:
    """The dashboard samples only the tasks that changed: the others never fall back to cpu ?."""
    a, b = children.start(["sleep", "30"]), children.start(["sleep", "30"])
    probe = PsutilProbe()
    ta = _task(a.pid, process_start_time(a.pid), task_id="a")
    tb = _task(b.pid, process_start_time(b.pid), task_id="b")
    await probe.sample([ta, tb])
    await probe.sample([ta])
    assert (await probe.sample([tb]))["b"].cpu_percent is not None
