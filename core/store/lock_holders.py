"""Who holds a write lock on a SQLite store: read from the kernel's table of file locks.

SQLite takes POSIX locks on the store's file and, in WAL mode, on its ``-shm`` file. When a
write waits too long for the lock, the error names the processes that hold a write lock on
either (``/proc/locks``), so that a human knows what to end or wait for. Where the table
cannot be read (not Linux), nothing is named and the error says how to find them.
"""

from __future__ import annotations

import os
from pathlib import Path

from zombietop.printable import printable

LOCKS = Path("/proc/locks")
SUFFIXES = ("", "-wal", "-shm")


def _files(path: Path) -> set[tuple[int, int, int]]:
    """(major, minor, inode) of the store's file and its companions that exist."""
    found = set()
    for suffix in SUFFIXES:
        try:
            stat = os.stat(f"{path}{suffix}")
        except OSError:
            continue
        found.add((os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino))
    return found


def _name(pid: int) -> str:
    try:
        comm = Path(f"/proc/{pid}/comm").read_text(errors="replace").strip()
    except OSError:
        return f"pid {pid}"
    return f"pid {pid} ({printable(comm)})"


def lock_holders(path: Path, *, table: Path = LOCKS) -> list[str]:
    """Name the other processes holding a write lock on the store at ``path``, e.g.
    ``["pid 4121 (python3)"]``; empty when none is found or the table cannot be read."""
    files = _files(path)
    try:
        lines = table.read_text().splitlines()
    except OSError:
        return []
    pids: list[int] = []
    for line in lines:
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 4121 fe:00:2146699 120 120" (a waiter's line has "->")
        if len(fields) < 6 or "->" in fields or fields[3] != "WRITE":
            continue
        try:
            pid = int(fields[4])
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
        except ValueError:
            continue
        if key in files and pid != os.getpid() and pid not in pids:
            pids.append(pid)
    return [_name(pid) for pid in pids]
