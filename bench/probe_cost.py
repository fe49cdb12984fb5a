"""The process probe's CPU per poll, reading only the tasks' trees or the whole process table,
against the per-task scans it replaced, with 10, 100 and 1,000 local tasks and about 300 and
3,000 processes on the host.

    python bench/probe_cost.py [--polls 20] [--hosts 300,3000] [--tasks 10,100,1000]
        [--before DIR] [--tree 3]

Starts real processes (``sleep``, in groups of one shell and two children, so a task has a tree)
until the host has about as many as asked, points the tasks at the shells (round robin when
there are more tasks than shells), and times ``PsutilProbe.sample_now`` over ``--polls`` polls
(CPU time of this process, medians of three batches): as the probe chooses (``read_processes``),
then made to read the trees (children files), then the whole table, so the rule's choice can be
checked against both. The old way is the probe of two rounds ago: per task, psutil's oneshot
reads plus ``children(recursive=True)``, which reads all of /proc each time; it is timed over
ten tasks and scaled, as every task costs it the same scan. Also prints what a poll costs as a
share of one core at the dashboard's 2 s refresh.

The floor is what any probe of these trees must do: one bare ``os.read`` of each member's
stat and io file, timed the same way. ``--before DIR`` times the probe of another checkout
(``git worktree add DIR main``: its core/procs.py, loaded beside this one) in the same run.
``--tree 1`` gives each task a process of its own (a plain ``sleep``) instead of a shell with
two children.
Not a test: the machine is shared and noisy, so only figures measured in the same run compare.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from types import ModuleType

import psutil

from zombietop.model import Task, TaskState
from zombietop.procs import (
    ProcessReading,
    ProcessTable,
    ProcessTrees,
    PsutilProbe,
    read_start,
    this_host,
)

OLD_TASKS_TIMED = 10
"""The old probe's cost is linear in tasks (one scan of /proc each): timed over this many."""
REFRESH_S = 2.0
"""The dashboard's default refresh: one probe sample per poll."""


def host_processes() -> int:
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


@contextlib.contextmanager
def processes_until(total: int, tree: int = 3) -> Iterator[list[int]]:
    """Start shells with two sleeping children each (``tree`` 3; 1: a lone ``sleep``) until
    the host has about ``total`` processes; yield the leaders' pids; kill every group at the
    end."""
    argv = ["sh", "-c", "sleep 3600 & sleep 3600 & wait"] if tree == 3 else ["sleep", "3600"]
    shells: list[subprocess.Popen[bytes]] = []
    try:
        while host_processes() + tree <= total:
            shells.append(subprocess.Popen(argv, process_group=0, stdin=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while tree == 3 and any(len(psutil.Process(s.pid).children()) < 2 for s in shells[-5:]):
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        yield [shell.pid for shell in shells]
    finally:
        for shell in shells:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGKILL)
        for shell in shells:
            shell.wait()


def tasks_on(pids: Sequence[int], count: int) -> list[Task]:
    host = this_host()
    tasks = []
    for number in range(count):
        pid = pids[number % len(pids)]
        start = read_start(pid)
        assert start is not None
        tasks.append(
            Task(
                task_id=f"t{number}",
                run_id="bench",
                step="s",
                step_type="default",
                state=TaskState.RUNNING,
                pid=pid,
                pid_start_time=start.time,
                pid_start_identity=start.identity,
                host=host,
                created_at=0.0,
                updated_at=0.0,
            )
        )
    return tasks


class ForcedProbe(PsutilProbe):
    """The probe, always reading processes one way."""

    def __init__(self, read: Callable[[], ProcessReading]) -> None:
        super().__init__()
        self._read = read

    def read_processes(self, leaders: set[int]) -> ProcessReading:
        return self._read()


def old_sample(tasks: Sequence[Task]) -> None:
    """The probe before this round: oneshot reads and a recursive scan of /proc per task."""
    for task in tasks:
        assert task.pid is not None
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(task.pid)
            with proc.oneshot():
                proc.create_time()
                proc.status()
                proc.cpu_times()
                proc.memory_info()
                proc.num_threads()
                proc.io_counters()
            len(proc.children(recursive=True))


def load_procs(checkout: Path) -> ModuleType:
    """Another checkout's core/procs.py as a module of its own (its imports resolve to this
    one's engine, whose clock, model and start identity it shares)."""
    spec = importlib.util.spec_from_file_location("before_procs", checkout / "core" / "procs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def floor_read(members: Sequence[int]) -> None:
    """The least a probe of these trees reads: each member's stat and io file, once."""
    for pid in members:
        for name in ("stat", "io"):
            with contextlib.suppress(OSError):
                fd = os.open(f"/proc/{pid}/{name}", os.O_RDONLY)
                os.read(fd, 4096)
                os.close(fd)


def cpu_per_call(call: Callable[[], object], polls: int) -> float:
    """Median CPU seconds one call takes, over three batches of ``polls`` calls."""
    call()  # warm: imports, caches, the probe's first look
    batches = []
    for _ in range(3):
        started = time.process_time()
        for _ in range(polls):
            call()
        batches.append((time.process_time() - started) / polls)
    return statistics.median(batches)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument(
        "--hosts", default="300,3000", help="processes on the host, comma-separated"
    )
    parser.add_argument("--tasks", default="10,100,1000", help="local tasks, comma-separated")
    parser.add_argument("--before", type=Path, help="a checkout whose probe to time beside")
    parser.add_argument("--tree", type=int, choices=(1, 3), default=3, help="processes a task")
    parser.add_argument("--no-old", action="store_true", help="skip the per-task scans")
    args = parser.parse_args()
    before = load_procs(args.before) if args.before else None
    sizes = [int(n) for n in args.hosts.split(",")]
    counts = [int(n) for n in args.tasks.split(",")]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print(f"trees of {args.tree} process{'es' if args.tree > 1 else ''}")
    print(
        f"{'procs':>6} {'tasks':>6} {'leaders':>7} {'members':>7} {'chosen':>6} {'ms/poll':>8} "
        f"{'floor ms':>8} {'x floor':>7} {'before ms':>9} {'now/before':>10} "
        f"{'trees ms':>9} {'table ms':>9} {'old ms':>9} {'now/old':>8} "
        f"{'%core':>6} {'old %core':>10}"
    )
    for size in sizes:
        with processes_until(size, args.tree) as shells:
            present = host_processes()
            if not shells:
                print(f"the host already has {present} processes (more than {size}): skipped")
                continue
            for count in counts:
                tasks = tasks_on(shells, count)
                leaders = {task.pid for task in tasks if task.pid is not None}
                probe = PsutilProbe()
                new = cpu_per_call(partial(probe.sample_now, tasks), args.polls)
                chosen = type(probe.read_processes(leaders)).__name__.removeprefix("Process")
                members = sorted(
                    {m.pid for p in leaders for m in ProcessTable.read().descendants(p)} | leaders
                )
                floor = cpu_per_call(partial(floor_read, members), args.polls)
                was = float("nan")
                if before is not None:
                    was = cpu_per_call(partial(before.PsutilProbe().sample_now, tasks), args.polls)
                trees, table = (
                    cpu_per_call(partial(ForcedProbe(read).sample_now, tasks), args.polls)
                    for read in (ProcessTrees, ProcessTable.read)
                )
                # The old way costs the same scan per task: timed over ten, scaled to all.
                sample = tasks[: min(count, OLD_TASKS_TIMED)]
                old = float("nan")
                if not args.no_old:
                    old = cpu_per_call(partial(old_sample, sample), max(1, args.polls // 4))
                    old *= count / len(sample)
                print(
                    f"{present:>6} {count:>6} {len(leaders):>7} {len(members):>7} {chosen:>6} "
                    f"{1000 * new:>8.2f} {1000 * floor:>8.2f} {new / floor:>6.2f}x "
                    f"{1000 * was:>9.2f} {new / was:>9.3f}x "
                    f"{1000 * trees:>9.2f} {1000 * table:>9.2f} {1000 * old:>9.1f} "
                    f"{new / old:>7.3f}x {100 * new / REFRESH_S:>5.2f}% "
                    f"{100 * old / REFRESH_S:>9.1f}%"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
