"""A SQLite connection that runs each statement on the calling thread, with aiosqlite's interface.

aiosqlite hands every statement to a worker thread and its result back through the event loop's
self-pipe: two thread switches a statement, so a loop that may block never does. The dashboard's
monitor has a thread and an event loop of its own for exactly that, and there those switches
are pure cost (at 1,000 tasks, as much CPU a poll as the SQL itself). ``SQLiteStore`` opened
with ``inline=True`` runs its statements through this instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterable
from types import TracebackType
from typing import Any


class InlineCursor:
    """A sqlite3 cursor behind aiosqlite's ``Cursor`` methods the store uses."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    async def fetchone(self) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._cursor.fetchone()
        return row

    async def close(self) -> None:
        self._cursor.close()


class InlineStatement:
    """One statement, run when awaited or entered (``async with``) as aiosqlite runs it."""

    def __init__(self, run: Any, sql: str, parameters: Any) -> None:
        self._run, self._sql, self._parameters = run, sql, parameters
        self._cursor: InlineCursor | None = None

    def __await__(self) -> Generator[Any, None, InlineCursor]:
        return self._execute().__await__()

    async def _execute(self) -> InlineCursor:
        return InlineCursor(self._run(self._sql, self._parameters))

    async def __aenter__(self) -> InlineCursor:
        self._cursor = await self._execute()
        return self._cursor

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._cursor is not None:
            await self._cursor.close()


class InlineConnection:
    """A sqlite3 connection behind the ``aiosqlite.Connection`` methods the store uses."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    @property
    def row_factory(self) -> Any:
        return self._connection.row_factory

    @row_factory.setter
    def row_factory(self, factory: Any) -> None:
        self._connection.row_factory = factory

    def execute(self, sql: str, parameters: Any = ()) -> InlineStatement:
        return InlineStatement(self._connection.execute, sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any]) -> InlineStatement:
        return InlineStatement(self._connection.executemany, sql, parameters)

    async def execute_fetchall(self, sql: str, parameters: Any = ()) -> list[sqlite3.Row]:
        rows: list[sqlite3.Row] = self._connection.execute(sql, parameters).fetchall()
        return rows

    async def close(self) -> None:
        self._connection.close()
