"""The processes a kill of a task reaches: its process group, and those of its attempt outside.

A kill signals the task's process group, which takes the command's children with it. A child
that left the group (``setsid``, a daemon's double fork) would live on through the kill, and
beside the next attempt after a resume. ``zombietop run`` gives its command
``ZOMBIETOP_TASK``, ``ZOMBIETOP_ATTEMPT`` and ``ZOMBIETOP_DB``, and every child inherits them:
a process outside the group that carries the same three values as the task's own process, and
runs as the same user, belongs to the same attempt. Another user's process is never one of
them (anyone can set a variable), nor a process of another attempt or of another store's task
of the same name, nor the caller and its ancestors. A child that cleared its environment is not
found.

psutil is imported where processes are looked at, as in ``zombietop.procs``: the dashboard
loads this module with its executor, and opens with no kill asked.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zombietop.model import PendingKill
from zombietop.procs import TASK_ENV, read_start, tie
from zombietop.start_identity import ProcessStart, StartIdentity, same_start

ATTEMPT_ENV = "ZOMBIETOP_ATTEMPT"
STORE_ENV = "ZOMBIETOP_DB"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outside:
    """A process of the attempt outside its group: signalled on its own, by pid and start."""

    pid: int
    start: ProcessStart
    session: int

    def to_data(self) -> dict[str, Any]:
        """The form kept in the kill's event, so that whoever finishes the kill finds it."""
        identity = self.start.identity
        return {
            "pid": self.pid,
            "start_time": self.start.time,
            "boot_id": None if identity is None else identity.boot_id,
            "ticks": None if identity is None else identity.ticks,
            "session": self.session,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Outside | None:
        """Read ``to_data``'s form back; None for anything else (an event is store data)."""
        try:
            start = ProcessStart(
                time=float(data["start_time"]),
                identity=StartIdentity.from_columns(data.get("boot_id"), data.get("ticks")),
            )
            return cls(pid=int(data["pid"]), start=start, session=int(data["session"]))
        except (KeyError, TypeError, ValueError):
            return None

    def alive(self) -> bool:
        """True while the pid is still this process (its start checked again) and not exited."""
        return alive_as(self.pid, self.start)


def outside_group(
    task_id: str, leader: int, pgid: int | None, *, spared: Collection[int]
) -> list[Outside]:
    """The live processes of the attempt of ``task_id`` that ``leader`` runs, and that are not
    in group ``pgid`` (or, when ``pgid`` is None, are not ``leader``); none when ``leader``
    carries no attempt of that task in its environment."""
    import psutil

    try:
        proc = psutil.Process(leader)
        wanted = _tags(proc.environ())
        uid = proc.uids().real
    except psutil.Error:
        return []
    if wanted is None or wanted[0] != task_id:
        return []
    found = []
    for other in psutil.process_iter(["uids", "status"]):
        pid = other.pid
        info = other.info
        if pid == leader or pid in spared or info["uids"] is None or info["uids"].real != uid:
            continue
        if info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if pgid is not None and os.getpgid(pid) == pgid:
                continue  # the group's signal reaches it
            start = read_start(pid)
            if start is None or _tags(other.environ()) != wanted:
                continue
            # The same process before and after its environment was read: not a new one that
            # took the pid in between.
            if same_start(start, read_start(pid)):
                found.append(Outside(pid=pid, start=start, session=os.getsid(pid)))
    return found


def _tags(env: Mapping[str, str]) -> tuple[str, str, str | None] | None:
    task, attempt = env.get(TASK_ENV), env.get(ATTEMPT_ENV)
    if task is None or attempt is None:
        return None
    return task, attempt, env.get(STORE_ENV)


def sessions(pids: Iterable[int]) -> set[int]:
    """The sessions the live ``pids`` are in (read them before a signal: a process that has
    ended has none to read)."""
    found = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            found.add(os.getsid(pid))
    return found


def processes(count: int) -> str:
    """``1 process``, ``3 processes``."""
    return f"{count} process{'es' if count != 1 else ''}"


def counted(count: int, sessions: int) -> str:
    """``3 processes in 2 sessions``."""
    return f"{processes(count)} in {sessions} session{'s' if sessions != 1 else ''}"


def pids_words(outside: Iterable[Outside]) -> str:
    """``pid 4133`` or ``pids 4133, 4140``."""
    pids = [str(each.pid) for each in outside]
    return f"pid{'s' if len(pids) != 1 else ''} {', '.join(pids)}"


def signal_target(pid: int) -> int | None:
    """Return the process group to signal for ``pid``, or None to signal ``pid`` alone.

    ``zombietop run`` starts each task as the leader of its own group, so the group takes its
    grandchildren with it. A process that does not lead its group (an SDK job started from a
    shell) shares it with others, and our own group is never a target.
    """
    try:
        pgid = os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None
    return pgid if pgid == pid and pgid != os.getpgrp() else None


def alive_as(pid: int, start: ProcessStart | None) -> bool:
    """True while ``pid`` is the same process (the same start) and has not exited."""
    import psutil

    if not same_start(start, read_start(pid)):
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def group_members(pgid: int) -> list[int]:
    """PIDs in process group ``pgid`` that have not exited (zombies do not count)."""
    import psutil

    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
        except (ProcessLookupError, PermissionError):
            continue
    return members


def group_left(kill: PendingKill) -> list[int]:
    """The members of the process group that got SIGTERM still alive; none once its number
    belongs to another group.

    A group id cannot be reused while any member lives. The number is its leader's pid,
    though: once the whole group is gone, a new process can get that pid and lead a new
    group of the same number, which the leader's start tells apart.
    """
    if kill.pgid is None:
        return []
    members = group_members(kill.pgid)
    if kill.pgid == kill.pid and kill.pid in members and not alive_as(kill.pid, kill.pid_start):
        return []
    return members


def still_alive(
    kill: PendingKill, outside: Sequence[Outside]
) -> tuple[bool, list[int], list[Outside]]:
    """What of a kill's targets is alive now: its pid, its group's members, and the processes
    outside the group."""
    leader = alive_as(kill.pid, kill.pid_start)
    return leader, group_left(kill), [each for each in outside if each.alive()]


def kill_is_tied(kill: PendingKill, leader: bool, members: Sequence[int]) -> bool:
    """True when a pending kill (a store row too) may SIGKILL: its group is led by its pid, and
    the pid, or once that exited a member of its group, carries the task's tag."""
    if kill.pgid not in (None, kill.pid):
        return False
    return any(tie(pid, kill.task_id) for pid in ([kill.pid] if leader else members))


def signal_each(outside: Sequence[Outside], sig: int, task_id: str) -> list[Outside]:
    """Send ``sig`` to each process (SIGCONT too after SIGTERM, to wake a stopped one), each
    checked just before by its start and its tag; return those signalled."""
    signalled = []
    for each in outside:
        if not each.alive() or tie(each.pid, task_id) is None:
            continue
        try:
            os.kill(each.pid, sig)
            if sig == signal.SIGTERM:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(each.pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            continue
        signalled.append(each)
    return signalled
