"""How to read an engine's SQLite file without creating a file beside it.

A reader of a WAL database needs its ``-wal`` and ``-shm`` files, and SQLite makes them when they
are missing, even for a connection opened with ``mode=ro``. They are missing when the engine is
stopped (its last connection removed them). Made by zombietop, they would belong to zombietop's
user and stay there, and the engine's next write, as another user, fails with "attempt to write
a readonly database". In a folder zombietop cannot write, the read itself fails that way.

So zombietop looks before it opens:

- a rollback-journal database, or a WAL database with both files there (the engine runs): open
  with ``mode=ro``; SQLite reads them as they are, even when zombietop cannot write them;
- a WAL database with no write-ahead log, or an empty one: the main file holds every commit.
  ``immutable=1`` reads it with no locks and no files, and ``mode=ro`` beside it, so that a file
  gone since the look is an error, not a new empty database. Immutable means SQLite does not
  notice a change, so such a connection is used for one read only, and the read is thrown away
  when the file or its log changed meanwhile (the engine started);
- a write-ahead log with commits but no ``-shm``: SQLite cannot read it without making the
  ``-shm``, so zombietop says so and reads nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from zombietop.errors import SourceError

WAL_VERSION = 2
"""Bytes 18 and 19 of a SQLite file's header (its write and read versions): 2 in WAL mode."""


@dataclass(frozen=True, slots=True)
class FileMark:
    """What a read of the file depends on: the main file's inode, size and time, and its log's."""

    main: tuple[int, int, int, int]
    wal: tuple[int, int] | None


def in_wal_mode(path: Path) -> bool:
    """True when the file's header says WAL (read straight from the file: no SQLite, no lock)."""
    try:
        with path.open("rb") as file:
            header = file.read(20)
    except OSError:
        return False  # SQLite itself says why it cannot open it
    return len(header) == 20 and header[18] == WAL_VERSION and header[19] == WAL_VERSION


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def mark(path: Path) -> FileMark:
    """The file as it is now, to tell after a read whether it changed during it."""
    main = path.stat()
    wal_path = Path(f"{path}-wal")
    try:
        wal = wal_path.stat()
    except FileNotFoundError:
        log = None
    else:
        log = (wal.st_ino, wal.st_size)
    return FileMark(main=(main.st_dev, main.st_ino, main.st_size, main.st_mtime_ns), wal=log)


def replaced_words(name: str, path: Path) -> str:
    """What a source says at the read that found its file replaced (it reopens the path)."""
    return (
        f"source {name}: {path} was replaced by another file while zombietop read it (as "
        "`airflow db reset` or a restore does); zombietop reopened the path, and its tasks are "
        "read from the new file from the next poll"
    )


def read_only_uri(path: Path, name: str) -> tuple[str, bool]:
    """The URI to read ``path`` by without leaving a file beside it, and whether it is
    immutable (then good for one read only). ``name`` is the source's, for the error."""
    uri = f"file:{quote(str(path))}"
    if not in_wal_mode(path):
        return uri + "?mode=ro", False
    wal, shm = _size(Path(f"{path}-wal")), _size(Path(f"{path}-shm"))
    if wal is not None and shm is not None:
        return uri + "?mode=ro", False
    if not wal:
        return uri + "?mode=ro&immutable=1", True
    raise SourceError(
        f"source {name}: its write-ahead log {path}-wal holds commits that SQLite reads only "
        f"with {path}-shm, which is missing, and zombietop never creates a file beside an "
        "engine's database; start the engine (its first connection makes the file), or copy "
        f"{path} and {path}-wal to a folder of your own and read the copy"
    )


def same_file(before: FileMark, path: Path) -> bool:
    """True when ``path`` and its log are as ``before`` says."""
    try:
        return mark(path) == before
    except OSError:
        return False


def readable_hint(path: Path, problem: str = "") -> str:
    """What to do when SQLite cannot open or read the file read-only; ``problem`` is SQLite's
    own words."""
    if "malformed" in problem or "not a database" in problem:
        return (
            f"the file is damaged or not a database (check it: sqlite3 {path} "
            "'PRAGMA integrity_check'); zombietop reads it again at every poll"
        )
    if os.access(path, os.R_OK):
        return f"zombietop's user needs read access to {path}, {path}-wal and {path}-shm"
    return f"zombietop's user cannot read {path}"
