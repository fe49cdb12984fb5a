"""Whether a process that an engine's records name is that engine's own worker process.

RQ's and Celery's records in Redis name a pid (RQ's worker, Celery's ``worker_pid``), and
anyone who can write to that Redis can write any pid there; Dramatiq's source finds its pid
from a connection that anyone can open. Before zombietop signals such a process, it checks what
the kernel says of it: the process and its parent both run the engine's worker (RQ's work horse
is a fork of ``rq worker``, Celery's pool child a fork of ``celery worker``, a Dramatiq worker
process a fork of ``dramatiq``), as the same user. Otherwise the kill is refused, saying what
the process is.
"""

from __future__ import annotations

import os
import pwd
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psutil

from zombietop.printable import printable

SHOWN = 80
"""The most characters of a process's command line said in a refusal."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerShape:
    """How an engine's worker processes look to the kernel."""

    child: str
    """What the killed process must be, in words: ``RQ's work horse under `rq worker```."""
    parent: str
    """What its parent must run, in words: ``rq worker``."""
    looks: Callable[[Sequence[str]], bool]
    """True when a command line is the engine's worker (a fork of it has the same one)."""


def _module(argv: Sequence[str]) -> str | None:
    """The module a ``python -m MODULE`` command line runs; None for any other."""
    for at, arg in enumerate(argv[1:3], start=1):
        if arg == "-m" and at + 1 < len(argv):
            return argv[at + 1]
    return None


def _names(argv: Sequence[str]) -> list[str]:
    """The file names of the program and of the script it runs (``python /usr/bin/rq``)."""
    return [os.path.basename(arg) for arg in argv[:2]]


def rq_worker(argv: Sequence[str]) -> bool:
    """``rq worker ...``, ``python -m rq.cli worker ...``, ``rqworker``, or the title RQ gives
    its worker and horse when setproctitle is installed (``rq:worker:NAME: ...``)."""
    if not argv:
        return False
    if argv[0].startswith("rq:worker:"):
        return True
    if "rqworker" in _names(argv):
        return True
    runs_rq = "rq" in _names(argv) or _module(argv) in ("rq", "rq.cli")
    return runs_rq and "worker" in argv[1:6]


def celery_worker(argv: Sequence[str]) -> bool:
    """``celery ... worker ...``, ``python -m celery ... worker ...``, or the title Celery
    gives its processes when setproctitle is installed (``[celeryd: NAME@HOST:...]``)."""
    if not argv:
        return False
    if argv[0].lstrip("[").startswith("celeryd:"):
        return True
    runs_celery = "celery" in _names(argv) or _module(argv) in ("celery", "celery.__main__")
    return runs_celery and "worker" in argv


def dramatiq_worker(argv: Sequence[str]) -> bool:
    """``dramatiq ...``, ``dramatiq-gevent ...`` or ``python -m dramatiq ...``: its worker
    processes are forks of it, with the same command line."""
    if not argv:
        return False
    names = _names(argv)
    return bool({"dramatiq", "dramatiq-gevent"} & set(names)) or _module(argv) in (
        "dramatiq",
        "dramatiq.__main__",
    )


RQ_HORSE = WorkerShape(
    child="RQ's work horse under `rq worker`", parent="rq worker", looks=rq_worker
)
CELERY_CHILD = WorkerShape(
    child="Celery's pool child under `celery worker`", parent="celery worker", looks=celery_worker
)
DRAMATIQ_WORKER = WorkerShape(
    child="a Dramatiq worker process under `dramatiq`", parent="dramatiq", looks=dramatiq_worker
)


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _said(argv: Sequence[str]) -> str:
    """A command line as words a terminal can show: quoted, printable, short."""
    text = shlex.join(argv) if argv else "(no command line)"
    if len(text) > SHOWN:
        text = text[: SHOWN - 3] + "..."
    return f"`{printable(text)}`"


def engine_child(pid: int, shape: WorkerShape) -> str | None:
    """None when ``pid`` and its parent both run the engine's worker as one user; else what
    the process is, and why it is not signalled."""
    try:
        proc = psutil.Process(pid)
        argv, uid = proc.cmdline(), proc.uids().real
        parent = proc.parent()
        parent_argv = parent.cmdline() if parent is not None else []
        parent_uid = parent.uids().real if parent is not None else None
    except psutil.NoSuchProcess:
        return f"pid {pid} is gone; nothing signalled"
    except psutil.Error as exc:
        return f"cannot read what pid {pid} is ({exc}), so it is not shown to be {shape.child}"
    what = f"pid {pid} is {_said(argv)} run by {_user(uid)}"
    if not shape.looks(argv):
        return f"{what}, not {shape.child}; nothing signalled"
    if parent is None:
        return f"{what}, with no parent: not {shape.child}; nothing signalled"
    father = f"its parent, pid {parent.pid}, is {_said(parent_argv)}"
    if not shape.looks(parent_argv):
        return f"{what}; {father}, not `{shape.parent}`; nothing signalled"
    if parent_uid != uid:
        assert parent_uid is not None
        return (
            f"{what}; {father}, run by {_user(parent_uid)}: not the same user, so not "
            f"{shape.child}; nothing signalled"
        )
    return None


def running(pid: int, programs: Sequence[str], what: str) -> str | None:
    """None when ``pid`` runs one of ``programs`` (the file name of its executable or of its
    command line's first word); else what the process is, and why it is not signalled."""
    try:
        proc = psutil.Process(pid)
        argv, uid = proc.cmdline(), proc.uids().real
        names = {os.path.basename(proc.exe()), *_names(argv[:1])}
    except psutil.NoSuchProcess:
        return f"pid {pid} is gone; nothing signalled"
    except psutil.Error as exc:
        return f"cannot read what pid {pid} is ({exc}), so it is not shown to be {what}"
    if names & set(programs):
        return None
    return f"pid {pid} is {_said(argv)} run by {_user(uid)}, not {what}; nothing signalled"
