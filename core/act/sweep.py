"""Find and stop every process started on behalf of one store, descendants and relaunches included.

A launcher (``zombietop demo``) tags what it starts with ``ZOMBIETOP_STARTED_FOR=<store>``. The
tag is inherited: ``zombietop run`` hands its environment to the command, and a resume
relaunched by the dashboard or the watchdog copies theirs. A relaunch started from some other
shell carries no tag, so a Python process whose command line says ``--db <store>`` counts too.
Process groups alone would not do: a wrapper killed with SIGKILL leaves its command behind in a
group nobody remembers.

psutil is imported where processes are looked at, as in ``zombietop.procs``: the dashboard
loads this module with its executor, and opens with no kill asked.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

STARTED_FOR = "ZOMBIETOP_STARTED_FOR"
"""Environment variable naming the store a process was started for."""
SWEEP_POLL_S = 0.1
KILL_WAIT_S = 5.0
"""After SIGKILL, how long to wait for the kernel to take the processes away."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """One live process that belongs to the store."""

    pid: int
    create_time: float
    cmdline: tuple[str, ...]
    why: str
    """``tag`` (its environment names the store) or ``--db`` (its command line does)."""

    def words(self) -> str:
        """``pid 4121 (python export.py)``: the process as a log line names it."""
        return f"pid {self.pid} ({' '.join(self.cmdline)[:120]})"


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepReport:
    """What ``stop_all`` did: who got which signal, and who (if anyone) is still alive."""

    terminated: tuple[Found, ...]
    killed: tuple[Found, ...]
    survivors: tuple[Found, ...]

    @property
    def clean(self) -> bool:
        return not self.survivors


def store_key(store: Path) -> str:
    """The form of a store path that tags and comparisons use: absolute, symlinks resolved."""
    return str(Path(store).expanduser().resolve())


def tag_env(store: Path, env: dict[str, str]) -> dict[str, str]:
    """Return ``env`` with the tag that lets ``find`` and ``stop_all`` recognise the process."""
    return {**env, STARTED_FOR: store_key(store)}


def _pythonish(argv0: str) -> bool:
    name = os.path.basename(argv0)
    return name.startswith("python") or name in ("zombietop", "pypy3")


def _names_store(cmdline: Sequence[str], cwd: str | None, key: str) -> bool:
    """True when a Python command line passes ``--db`` naming the store (relative to its cwd)."""
    if not cmdline or not _pythonish(cmdline[0]):
        return False
    for i, arg in enumerate(cmdline):
        value = None
        if arg == "--db" and i + 1 < len(cmdline):
            value = cmdline[i + 1]
        elif arg.startswith("--db="):
            value = arg.removeprefix("--db=")
        if value is None:
            continue
        path = Path(value).expanduser()
        if not path.is_absolute():
            if cwd is None:
                continue
            path = Path(cwd) / path
        with contextlib.suppress(OSError):
            if str(path.resolve()) == key:
                return True
    return False


def spared() -> set[int]:
    """This process and its ancestors: the caller asked for the sweep (or the kill) and must
    survive it."""
    import psutil

    kept = {os.getpid()}
    with contextlib.suppress(psutil.Error):
        kept.update(p.pid for p in psutil.Process().parents())
    return kept


def find(store: Path) -> list[Found]:
    """Return every live process of this user that belongs to ``store``."""
    import psutil

    key = store_key(store)
    uid = os.getuid()
    kept = spared()
    found = []
    for proc in psutil.process_iter(["pid", "uids", "status", "cmdline", "create_time"]):
        info = proc.info
        if info["pid"] in kept or info["uids"] is None or info["uids"].real != uid:
            continue
        if info["status"] == psutil.STATUS_ZOMBIE or info["create_time"] is None:
            continue
        cmdline = tuple(info["cmdline"] or ())
        why = None
        try:
            if proc.environ().get(STARTED_FOR) == key:
                why = "tag"
            elif _names_store(cmdline, proc.cwd(), key):
                why = "--db"
        except psutil.Error:
            continue  # gone, or not ours to read
        if why is not None:
            found.append(
                Found(pid=proc.pid, create_time=info["create_time"], cmdline=cmdline, why=why)
            )
    return found


def _signal(found: Found, sig: int) -> bool:
    """Signal one process and the group it leads, if the process is still the one we found."""
    import psutil

    try:
        proc = psutil.Process(found.pid)
        if proc.create_time() != found.create_time:
            return False  # the pid was reused: not ours any more
        pgid = os.getpgid(found.pid)
        if pgid == found.pid and pgid != os.getpgrp():
            # A leader takes its group along: a command's own children need not carry the tag.
            os.killpg(pgid, sig)
        else:
            os.kill(found.pid, sig)
    except (psutil.Error, ProcessLookupError, PermissionError):
        return False
    return True


def stop_all(
    store: Path,
    *,
    grace: float,
    first: Callable[[Found], bool] = lambda found: False,
    log: Callable[[str], None] | None = None,
) -> SweepReport:
    """SIGTERM everything that belongs to ``store``, SIGKILL what is left after ``grace``.

    Processes for which ``first`` is true (a watchdog, say) are stopped before the rest, so they
    do not react to the others going away. New processes that appear meanwhile (a relaunch
    racing the sweep) are signalled as they are found. Returns who is still alive at the end.
    """
    terminated: dict[int, Found] = {}
    killed: dict[int, Found] = {}
    early = [f for f in find(store) if first(f)]
    for found in early:
        if _signal(found, signal.SIGTERM):
            terminated[found.pid] = found
    if early:
        _wait_gone(store, {f.pid for f in early}, min(grace, 2.0))
    deadline = time.monotonic() + grace
    while True:
        alive = find(store)
        for found in alive:
            if found.pid not in terminated and _signal(found, signal.SIGTERM):
                terminated[found.pid] = found
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(SWEEP_POLL_S)
    final = time.monotonic() + KILL_WAIT_S
    while alive and time.monotonic() < final:
        for found in alive:
            if found.pid not in killed and _signal(found, signal.SIGKILL):
                killed[found.pid] = found
                if log is not None:
                    log(f"{found.words()} still alive {grace:g}s after SIGTERM: sent SIGKILL")
        time.sleep(SWEEP_POLL_S)
        alive = find(store)
    return SweepReport(
        terminated=tuple(terminated.values()),
        killed=tuple(killed.values()),
        survivors=tuple(alive),
    )


def _wait_gone(store: Path, pids: set[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pids & {f.pid for f in find(store)}:
            return
        time.sleep(SWEEP_POLL_S)
