"""The local process probe: what psutil sees of the PIDs behind tasks on this host.

psutil is imported where a process is looked at: a command that finds no task of this host
(``zombietop status`` on another host's store) never loads it.

A process is known by its PID *and* its start: PIDs are reused, so a live PID whose start
differs from the one recorded when the task started belongs to someone else (see
``start_identity`` for how two starts are compared).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import subprocess
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zombietop.clock import CLOCK_TICKS, Clock, SystemClock, boot_id, host_ticks
from zombietop.last_ran import longer_idle, tree_idle_s
from zombietop.locations import TIE_FOLDER, task_file_name
from zombietop.model import ProcessSample, Task
from zombietop.private import open_append
from zombietop.process_words import STOPPED
from zombietop.start_identity import ProcessStart, StartIdentity, same_start

if TYPE_CHECKING:
    import psutil


def spawn_detached(
    argv: Sequence[str], *, log: Path, env: Mapping[str, str], cwd: str | Path | None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session of its own (no terminal signals reach it), its output appended
    to ``log`` (0600, never through a link), and reap it from a thread when it ends so no zombie
    of ours lingers."""
    with open(open_append(log), "ab") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc


TASK_ENV = "ZOMBIETOP_TASK"
"""What ``zombietop run`` (and a relaunch through it) puts in its command's environment."""


def tie(pid: int, task_id: str) -> str | None:
    """Say how ``pid`` is tied to ``task_id`` as /proc shows it now; None when it is not.

    The store's pid and start time can be forged by whoever writes the store, so before a
    signal the process itself must say it runs the task: ``ZOMBIETOP_TASK=<task>`` in its
    environment (every command ``zombietop run`` starts, and what they start), a Python
    process (an SDK job) whose command line passes ``--task <task>``, or a process holding its
    task's tie file open (an SDK job started by hand: ``locations.TIE_FOLDER``).
    """
    import psutil

    try:
        proc = psutil.Process(pid)
        try:
            if proc.environ().get(TASK_ENV) == task_id:
                return f"{TASK_ENV} in its environment"
        except psutil.AccessDenied:
            pass
        cmdline = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None
    if cmdline and Path(cmdline[0]).name.startswith(("python", "pypy", "zombietop")):
        for arg, value in itertools.pairwise(cmdline):
            if arg == "--task" and value == task_id:
                return "--task in its command line"
        if f"--task={task_id}" in cmdline:
            return "--task in its command line"
    return _holds_tie_file(proc, task_id)


def _holds_tie_file(proc: psutil.Process, task_id: str) -> str | None:
    import psutil

    name = task_file_name(task_id)
    try:
        for handle in proc.open_files():
            path = Path(handle.path)
            if path.name == name and path.parent.name == TIE_FOLDER:
                return "its task's tie file open"
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        pass
    return None


def untied(pid: int, task_id: str) -> str:
    """Why a process is not acted on for ``task_id``: what it would have needed."""
    return (
        f"pid {pid} carries no tag of {task_id} ({TASK_ENV}={task_id} in its environment, as "
        "`zombietop run` gives its command, --task in an SDK job's command line, or the "
        "task's tie file held open, as an SDK job does); the store's pid and start time alone "
        "are not trusted, so nothing was signalled"
    )


def this_host() -> str:
    """The host name tasks record, so the probe and the executor know which PIDs are theirs.

    ``ZOMBIETOP_HOST`` overrides it where the system's name is not stable (containers) or not
    unique across a fleet.
    """
    return os.environ.get("ZOMBIETOP_HOST") or socket.gethostname()


def read_start(pid: int) -> ProcessStart | None:
    """Read the start of ``pid`` now: its wall-clock time, and where /proc has it, the kernel's
    count on the host's boot clock. None when no such process exists."""
    import psutil

    if _PROC_STAT:
        entry = _read_stat(pid, _boot_time())
        if entry is None:
            return None
        return ProcessStart(time=entry.create_time, identity=entry.identity)
    try:
        return ProcessStart(time=psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:
        # Start times are world-readable on Linux; elsewhere a foreign process may hide it.
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcEntry:
    """One process as one pass over the process table read it."""

    pid: int
    ppid: int
    create_time: float
    status: str
    cpu_seconds: float
    rss_bytes: int
    threads: int
    start_ticks: int | None = None
    """Clock ticks from the host's boot to the start (None: read without /proc, or this
    process's time namespace hides the host's count)."""

    @property
    def identity(self) -> StartIdentity | None:
        """The start as identity checks compare it: this boot, and the ticks read."""
        return StartIdentity.from_columns(boot_id(), self.start_ticks)


class ProcessReading(ABC):
    """Processes read from the system during one sample: a whole table, or only some trees."""

    entries: Mapping[int, ProcEntry]
    """The processes read that were running."""

    @abstractmethod
    def entry(self, pid: int) -> ProcEntry | None:
        """``pid`` as read during this sample; None when it is not running."""

    @abstractmethod
    def children(self, pid: int) -> Sequence[int]:
        """The PIDs of the processes whose parent is ``pid``."""

    def descendants(self, pid: int) -> list[ProcEntry]:
        """Every process below ``pid`` in the tree (children, grandchildren...)."""
        found: dict[int, ProcEntry] = {}
        below = list(self.children(pid))
        while below:
            child = below.pop()
            if child == pid or child in found:
                continue  # PID 0's own entry lists itself as its parent on some systems
            entry = self.entry(child)
            if entry is not None:  # None: it exited after its parent listed it
                found[child] = entry
                below.extend(self.children(child))
        return list(found.values())


class ProcessTable(ProcessReading):
    """Every process on the host, read in one pass, with the tree built from parent PIDs."""

    def __init__(self, entries: Mapping[int, ProcEntry]) -> None:
        self.entries = entries
        self._children: dict[int, list[int]] = {}
        for entry in entries.values():
            self._children.setdefault(entry.ppid, []).append(entry.pid)

    @classmethod
    def read(cls) -> ProcessTable:
        """Read the table: /proc/<pid>/stat on Linux, psutil's one pass elsewhere."""
        return cls(_read_proc() if _PROC_STAT else _read_psutil())

    def entry(self, pid: int) -> ProcEntry | None:
        return self.entries.get(pid)

    def children(self, pid: int) -> Sequence[int]:
        return self._children.get(pid, ())


class ProcessTrees(ProcessReading):
    """Only the processes asked about and their trees, through the kernel's children files
    (/proc/<pid>/task/<tid>/children, CONFIG_PROC_CHILDREN).

    Reads each process once, when first asked about, so a sample costs the tasks' leaders and
    the members of their trees, whatever else runs on the host. The kernel vouches for a
    children file only while the children are stopped: one forked or reaped during the read
    may be missed, as a pass over the table misses a process born during it.
    """

    def __init__(self) -> None:
        self._boot = _boot_time()
        self.entries: dict[int, ProcEntry] = {}
        self._gone: set[int] = set()
        self._children: dict[int, list[int]] = {}

    def entry(self, pid: int) -> ProcEntry | None:
        if pid in self.entries or pid in self._gone:
            return self.entries.get(pid)
        entry = _read_stat(pid, self._boot)
        if entry is None:
            self._gone.add(pid)
        else:
            self.entries[pid] = entry
        return entry

    def children(self, pid: int) -> Sequence[int]:
        if pid not in self._children:
            entry = self.entry(pid)
            # A process lists the children of each of its threads apart; one thread is the
            # common case, and saves listing the threads.
            threads = [str(pid)] if entry is not None and entry.threads == 1 else _threads(pid)
            found: list[int] = []
            for tid in threads:
                path = f"/proc/{pid}/task/{tid}/children"
                try:
                    found.extend(int(child) for child in _read_proc_file(path).split())
                except OSError:
                    continue  # the thread, or the whole process, ended since
            self._children[pid] = found
        return self._children[pid]


def _threads(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


_PROC_STAT = Path("/proc/self/stat").exists()
CHILDREN_FILES = Path(f"/proc/self/task/{os.getpid()}/children").exists()
"""Whether the kernel lists each thread's children (CONFIG_PROC_CHILDREN): then a process tree
can be read without reading every process on the host."""
_TICKS = CLOCK_TICKS
_PAGE = os.sysconf("SC_PAGE_SIZE") if _PROC_STAT else 4096
_STATES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "T": "stopped",
    "t": "tracing-stop",
    "Z": "zombie",
    "X": "dead",
    "I": "idle",
    "P": "parked",
    "W": "waking",
}


def _boot_time() -> float:
    """The host's boot time, as psutil reads it (each sample, as the wall clock may be set)."""
    import psutil

    return psutil.boot_time()


def _read_proc() -> dict[int, ProcEntry]:
    """Read every /proc/<pid>/stat: one file per process holds all the table needs.

    psutil reads the same file but builds a Process per PID and reads it twice (once more to
    check the PID is still the same process): three times the cost, paid every poll.
    """
    boot = _boot_time()
    entries: dict[int, ProcEntry] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            entry = _read_stat(int(name), boot)
            if entry is not None:
                entries[entry.pid] = entry
    return entries


def _read_proc_file(path: str) -> bytes:
    """Read a small /proc file whole.

    Each member of a task's tree costs three such reads every poll; ``open()`` would wrap each
    in a buffered file object, which costs more than the kernel's work for these files. One
    read holds a whole stat, io or children file; a second is asked only when the first
    filled the buffer.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, _READ_SIZE)
        if len(data) < _READ_SIZE:
            return data
        chunks = [data]
        while chunk := os.read(fd, _READ_SIZE):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_READ_SIZE = 4096


def _read_stat(pid: int, boot: float) -> ProcEntry | None:
    try:
        data = _read_proc_file(f"/proc/{pid}/stat")
    except OSError:
        return None  # exited between the listing and the read
    # The command name is in parentheses and may itself hold spaces or parentheses.
    fields = data[data.rindex(b")") + 2 :].split()
    started = int(fields[19])
    return ProcEntry(
        pid=pid,
        ppid=int(fields[1]),
        # Both on this process's time namespace: /proc/stat moves the boot time back by the
        # same offset that moves the start forward, so the sum is the host's wall time.
        create_time=boot + started / _TICKS,
        start_ticks=host_ticks(started),
        status=_STATES.get(fields[0].decode(), "unknown"),
        cpu_seconds=(int(fields[11]) + int(fields[12])) / _TICKS,
        rss_bytes=int(fields[21]) * _PAGE,
        threads=int(fields[17]),
    )


def _read_psutil() -> dict[int, ProcEntry]:
    import psutil

    attrs = ["ppid", "create_time", "status", "cpu_times", "memory_info", "num_threads"]
    entries: dict[int, ProcEntry] = {}
    for proc in psutil.process_iter(attrs):
        info = proc.info
        if info["create_time"] is None or info["ppid"] is None:
            continue  # hidden from us
        times, memory = info["cpu_times"], info["memory_info"]
        entries[proc.pid] = ProcEntry(
            pid=proc.pid,
            ppid=info["ppid"],
            create_time=info["create_time"],
            status=str(info["status"] or "unknown"),
            cpu_seconds=0.0 if times is None else times.user + times.system,
            rss_bytes=0 if memory is None else memory.rss,
            threads=info["num_threads"] or 0,
        )
    return entries


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeTotals:
    """A task's process tree (the leader and its descendants) summed up at one moment."""

    leader: ProcEntry
    members: tuple[ProcEntry, ...]
    """The leader first, then its descendants."""
    cpu_seconds: float
    rss_bytes: int
    threads: int
    io_bytes: tuple[int, int] | None
    """Read and write byte totals; None when any member's are hidden from us."""


def tree_totals(reading: ProcessReading, leader: ProcEntry) -> TreeTotals:
    """Sum CPU time, memory, threads and I/O over ``leader`` and its descendants."""
    members = (leader, *reading.descendants(leader.pid))
    read = written = 0
    hidden = False
    for member in members:
        io = io_bytes(member.pid)
        if io is None:
            hidden = True
        else:
            read, written = read + io[0], written + io[1]
    return TreeTotals(
        leader=leader,
        members=members,
        cpu_seconds=sum(m.cpu_seconds for m in members),
        rss_bytes=sum(m.rss_bytes for m in members),
        threads=sum(m.threads for m in members),
        io_bytes=None if hidden else (read, written),
    )


def io_bytes(pid: int) -> tuple[int, int] | None:
    """Read and write byte totals of ``pid``, or None where the platform or permissions hide
    them (or it just exited).

    Counted at the system-call level (``rchar``/``wchar``): a job that streams from a socket
    or a pipe, or hits the page cache, moves these while the storage-level counts stand still.
    """
    if _PROC_STAT:
        # One small file; psutil would first build a Process, reading /proc/<pid>/stat again.
        try:
            data = _read_proc_file(f"/proc/{pid}/io")
        except OSError:
            return None  # another user's process, or gone
        # The kernel writes rchar and wchar first, in that order: only they are parsed.
        head = data.split(b"\n", 2)
        if len(head) < 2 or not (head[0].startswith(b"rchar: ") and head[1].startswith(b"wchar: ")):
            return None
        return int(head[0][7:]), int(head[1][7:])
    import psutil

    try:
        counters = psutil.Process(pid).io_counters()  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, psutil.Error, NotImplementedError):
        return None
    read = getattr(counters, "read_chars", counters.read_bytes)
    written = getattr(counters, "write_chars", counters.write_bytes)
    return int(read), int(written)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Seen:
    """What the previous sample saw of one process, to turn totals into deltas."""

    create_time: float
    cpu_seconds: float
    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class _SeenTree:
    """What the previous sample saw of one task's tree."""

    create_time: float
    at: float
    io_bytes: tuple[int, int] | None
    io_moved_at: float
    active_at: float
    """The last sample at which the tree used CPU or did I/O (the first sample counts as one)."""


TREES_UP_TO = 0.5
"""Read the tasks' trees while the processes in them number at most this share of the host's
processes (a tree's member costs two reads, its stat and its children file, where the table
costs one a process); read the whole table above it."""
RECOUNT_S = 10.0
"""How long a count of the host's processes serves the choice: counting lists /proc (about
3 ms at 3,000 processes), more than reading ten tasks' trees."""


class PsutilProbe:
    """Sample the process trees behind tasks on this host; implements ``monitor.ProcessProbe``.

    Each sample reads either only the tasks' trees, through the children files, or the whole
    process table in one pass (``read_processes`` says which); never once per task. Keeps the
    previous reading per process, so CPU% and I/O are deltas since the last sample, summed over
    each task's tree; a process is forgotten once it has exited.

    A process reparented out of a task's tree (a double fork, a daemon) leaves the tree in
    both readings: the kernel moves it out of its parent's children file as it changes its
    parent PID, from which the table builds the tree.
    """

    def __init__(self, *, host: str | None = None, clock: Clock | None = None) -> None:
        self.host = host if host is not None else this_host()
        self._clock = clock or SystemClock()
        self._seen: dict[int, _Seen] = {}
        self._trees: dict[int, _SeenTree] = {}
        self._per_leader = 1.0
        """Processes in a leader's tree at the previous sample, on average: what the choice
        between trees and table expects of the next."""
        self._host: tuple[float, int] | None = None
        """When the host's processes were last counted, and how many there were."""
        self._previous: Mapping[int, ProcEntry] | None = None
        """What the previous sample read (the table, or the trees), to tell a process born
        since from one that moved into a tree. Reading trees, nothing moves in: the kernel
        hands an orphan to an ancestor (a subreaper) or to init, never into another tree."""

    async def sample(self, tasks: Sequence[Task]) -> Mapping[str, ProcessSample]:
        """Return a sample per task id for the tasks with a PID on this host."""
        mine = [t for t in tasks if t.pid is not None and t.host == self.host]
        if not mine:
            return {}
        # Reading /proc is blocking work: keep it off the caller's event loop.
        return await asyncio.to_thread(self.sample_now, mine)

    def sample_now(self, tasks: Sequence[Task]) -> dict[str, ProcessSample]:
        """Sample synchronously (the blocking half of ``sample``)."""
        now = self._clock.now()
        leaders = {task.pid for task in tasks if task.pid is not None}
        reading = self.read_processes(leaders)
        samples: dict[str, ProcessSample] = {}
        seen: dict[int, _Seen] = {}
        # Tasks that name the same process (the same pid and start) share one look at it.
        looked: dict[int, tuple[ProcessStart | None, ProcessSample]] = {}
        for task in tasks:
            if task.pid is not None:
                start = task.pid_start
                shared = looked.get(task.pid)
                if shared is not None and shared[0] == start:
                    samples[task.task_id] = shared[1]
                    continue
                sample = self._one(reading, task.pid, start, now, seen)
                looked[task.pid] = (start, sample)
                samples[task.task_id] = sample
        self._per_leader = max(1.0, len(seen) / len(leaders)) if leaders else 1.0
        # Keep what this sample did not look at while its process lives: a task left out of
        # one sample still gets a delta next time. Reading trees, that costs a read of each
        # such process: few, as callers sample every live task on the host each time (the
        # rest are processes that left a tree, such as daemons).
        for pid, before in self._seen.items():
            if pid not in seen and _lives(reading, pid, before.create_time):
                seen[pid] = before
        self._seen = seen
        self._trees = {
            pid: tree for pid, tree in self._trees.items() if _lives(reading, pid, tree.create_time)
        }
        self._previous = reading.entries
        return samples

    def read_processes(self, leaders: set[int]) -> ProcessReading:
        """Read what a sample of ``leaders``'s trees needs: only the trees while the processes
        in them (as many per leader as the previous sample found) are at most
        ``TREES_UP_TO`` of the host's processes and the kernel has children files, the whole
        table otherwise.

        A tree's member costs two reads (its stat and its children file) where the table
        costs one per process: past that share, the trees would cost more than the table.
        """
        expected = len(leaders) * self._per_leader
        if CHILDREN_FILES and expected <= TREES_UP_TO * self._host_processes():
            return ProcessTrees()
        table = ProcessTable.read()
        self._host = (self._clock.now(), len(table.entries))
        return table

    def _host_processes(self) -> int:
        now = self._clock.now()
        if self._host is None or not 0 <= now - self._host[0] < RECOUNT_S:
            self._host = (now, _count_processes())
        return self._host[1]

    def _one(
        self,
        reading: ProcessReading,
        pid: int,
        recorded_start: ProcessStart | None,
        now: float,
        seen: dict[int, _Seen],
    ) -> ProcessSample:
        leader = reading.entry(pid)
        if leader is None:
            return ProcessSample(pid=pid, alive=False, sampled_at=now)
        actual = ProcessStart(time=leader.create_time, identity=leader.identity)
        if not same_start(recorded_start, actual):
            return ProcessSample(
                pid=pid,
                alive=True,
                identity_ok=False,
                create_time=leader.create_time,
                sampled_at=now,
            )
        if leader.status == "zombie":
            # Exited but not reaped (its parent is stuck or frozen): the task's work is over.
            return ProcessSample(pid=pid, alive=True, status="zombie", sampled_at=now)
        tree = tree_totals(reading, leader)
        cpu_percent = self._cpu_percent(tree, now)
        if cpu_percent is not None and all(m.status in STOPPED for m in tree.members):
            cpu_percent = 0.0  # stopped now: the CPU of the interval before the stop is past
        for member in tree.members:
            seen[member.pid] = _Seen(
                create_time=member.create_time, cpu_seconds=member.cpu_seconds, at=now
            )

        previous = self._trees.get(pid)
        if previous is not None and previous.create_time != leader.create_time:
            previous = None
        read_delta = write_delta = None
        io_moved_at = active_at = now
        if previous is not None and tree.io_bytes is not None and previous.io_bytes is not None:
            # Summed over a tree that changes, a total can shrink when a member exits.
            read_delta = max(0, tree.io_bytes[0] - previous.io_bytes[0])
            write_delta = max(0, tree.io_bytes[1] - previous.io_bytes[1])
            io_moved_at = now if (read_delta or write_delta) else previous.io_moved_at
            if not cpu_percent and not (read_delta or write_delta):
                active_at = previous.active_at
        self._trees[pid] = _SeenTree(
            create_time=leader.create_time,
            at=now,
            io_bytes=tree.io_bytes,
            io_moved_at=io_moved_at,
            active_at=active_at,
        )
        sampled = None if read_delta is None else now - active_at
        idle_s, idle_source = longer_idle(tree_idle_s([m.pid for m in tree.members]), sampled)
        return ProcessSample(
            pid=pid,
            alive=True,
            identity_ok=True,
            status=leader.status,
            cpu_percent=cpu_percent,
            rss_bytes=tree.rss_bytes,
            threads=tree.threads,
            read_bytes_delta=read_delta,
            write_bytes_delta=write_delta,
            io_idle_s=None if tree.io_bytes is None else now - io_moved_at,
            idle_s=idle_s,
            idle_source=idle_source,
            children=len(tree.members) - 1,
            create_time=leader.create_time,
            sampled_at=now,
        )

    def _cpu_percent(self, tree: TreeTotals, now: float) -> float | None:
        """CPU% of the tree since the leader's previous sample; None the first time it is seen."""
        leader = self._seen.get(tree.leader.pid)
        if leader is None or leader.create_time != tree.leader.create_time:
            return None
        elapsed = now - leader.at
        if elapsed <= 0:
            return None
        before_table = self._previous or {}
        used = 0.0
        for member in tree.members:
            before = self._seen.get(member.pid)
            if before is not None and before.create_time == member.create_time:
                used += member.cpu_seconds - before.cpu_seconds
            else:
                known = before_table.get(member.pid)
                if known is None or known.create_time != member.create_time:
                    used += member.cpu_seconds  # born since the last sample: all its CPU is new
        return max(0.0, 100.0 * used / elapsed)


def _lives(reading: ProcessReading, pid: int, create_time: float) -> bool:
    entry = reading.entry(pid)
    return entry is not None and entry.create_time == create_time


def _count_processes() -> int:
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


class TreeActivity:
    """Running totals of the CPU time and I/O of one process tree, for observed heartbeats.

    Summed per process across readings, so a child that exits (its time then moves into its
    parent's children's time, which no total here counts) does not make the totals go back.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.cpu_seconds = 0.0
        self.io_bytes = 0
        self._last: dict[tuple[int, float], tuple[float, int]] = {}

    def read(self) -> tuple[float, int]:
        """Read the tree now; return the totals (CPU seconds, bytes read and written)."""
        # One tree: the whole table would cost every wrapper on the host a read of every
        # process, each interval.
        reading = ProcessTrees() if CHILDREN_FILES else ProcessTable.read()
        leader = reading.entry(self.pid)
        if leader is None:
            return self.cpu_seconds, self.io_bytes
        members = [leader, *reading.descendants(self.pid)]
        current: dict[tuple[int, float], tuple[float, int]] = {}
        for member in members:
            io = io_bytes(member.pid)
            key = (member.pid, member.create_time)
            moved = sum(io) if io is not None else 0
            current[key] = (member.cpu_seconds, moved)
            cpu_before, io_before = self._last.get(key, (0.0, 0))
            self.cpu_seconds += max(0.0, member.cpu_seconds - cpu_before)
            self.io_bytes += max(0, moved - io_before)
        self._last = current
        return self.cpu_seconds, self.io_bytes
