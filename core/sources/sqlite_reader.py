"""One engine's SQLite file, read read-only without a file left beside it.

``sqlite_files`` says how each read opens the file. This module keeps the connection: one
``mode=ro`` connection kept between reads while the engine runs, and a connection for one read
only while it is stopped (``immutable``), that read done again when the file changed under it.
A kept connection reads the file it opened, so when another file now sits at the path the read
fails saying so, and the next one opens the new file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from zombietop.errors import SourceError
from zombietop.locations import file_identity
from zombietop.sources.sqlite_files import (
    mark,
    read_only_uri,
    readable_hint,
    replaced_words,
    same_file,
)

T = TypeVar("T")

READ_TRIES = 3
"""Reads of a stopped engine's file in one poll, each thrown away when the file changed under
it (the engine started): then the next read goes through the files the engine made."""


class SqliteReader:
    """Read-only reads of the SQLite file at ``path`` for the source ``name``.

    ``replaced`` is called when the file at the path is no longer the one the kept connection
    opened, before the read fails: the source reads its schema again."""

    def __init__(self, path: Path, name: str, *, replaced: Callable[[], None]) -> None:
        self.path = path
        self.name = name
        self._replaced = replaced
        self._conn: sqlite3.Connection | None = None
        """The kept ``mode=ro`` connection; None while the engine is stopped."""
        self._uri: str | None = None
        self._file: tuple[int, int] | None = None
        """The device and inode the kept connection opened (``locations.file_identity``)."""

    def read(self, read: Callable[[sqlite3.Connection], T], what: str) -> T:
        """``read`` on a read-only connection; ``what`` names the read for its error."""
        path = self.path
        for _ in range(READ_TRIES):
            if not path.is_file():
                raise SourceError(
                    f"source {self.name}: no such Airflow database file; give the path of "
                    "Airflow's [database] sql_alchemy_conn"
                )
            uri, immutable = read_only_uri(path, self.name)
            if not immutable:
                return self._run(self._kept(uri), read, what)
            # The engine is stopped: read the file alone, on a connection for this read only.
            self.close()
            try:
                before = mark(path)
            except OSError as exc:
                raise SourceError(f"source {self.name}: cannot read {path} ({exc})") from None
            conn = self._connect(uri)
            try:
                found = self._run(conn, read, what)
            finally:
                conn.close()
            if same_file(before, path):
                return found
            # The engine started (or wrote) as we read: read again, the way the files now allow.
        raise SourceError(
            f"source {self.name}: {path} changed as it was read, {READ_TRIES} times; "
            "it is read again at the next poll"
        )

    def _kept(self, uri: str) -> sqlite3.Connection:
        """The kept ``mode=ro`` connection (made again when the URI to use changed).

        When another file now sits at the path, it is closed and this read fails saying so
        (the next one reads the new file), so the old file's tasks are never judged as if they
        were current.
        """
        if self._conn is not None and self._uri == uri:
            if file_identity(self.path) == self._file:
                return self._conn
            self.close()
            self._replaced()
            raise SourceError(replaced_words(self.name, self.path))
        self.close()
        opened = file_identity(self.path)  # before: a file moved there meanwhile is seen next read
        self._conn, self._uri = self._connect(uri), uri
        self._file = opened
        return self._conn

    def _connect(self, uri: str) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            # Belt and braces: mode=ro refuses writes at the file, query_only at the statement.
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            raise SourceError(
                f"source {self.name}: cannot open read-only ({exc}); "
                f"{readable_hint(self.path, str(exc))}"
            ) from None
        conn.row_factory = sqlite3.Row
        return conn

    def _run(
        self, conn: sqlite3.Connection, read: Callable[[sqlite3.Connection], T], what: str
    ) -> T:
        try:
            return read(conn)
        except sqlite3.Error as exc:
            raise SourceError(
                f"source {self.name}: cannot read {what} ({exc}); "
                f"{readable_hint(self.path, str(exc))}"
            ) from None

    def close(self) -> None:
        """Close the kept connection, if there is one."""
        if self._conn is not None:
            self._conn.close()
            self._conn, self._uri = None, None
