"""Shared fixtures: a real SQLite store in a temporary directory, driven by a fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.clock import FakeClock
from core.sqlite_store import SQLiteStore
from core.store import open_store


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "zombietop.db"


@pytest.fixture
async def store(db_path: Path, clock: FakeClock) -> AsyncIterator[SQLiteStore]:
    opened = await open_store(db_path, create=True, clock=clock)
    assert isinstance(opened, SQLiteStore)
    try:
        yield opened
    finally:
        await opened.close()
