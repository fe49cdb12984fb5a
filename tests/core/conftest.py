"""Fixtures for core tests: a fast config, a real SQLite store, real child processes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children
from tests.queues_env import RQWorkers, Workers
from tests.redis_server import NO_REDIS, ThrowawayRedis, find_server
from tests.stores import open_for_test
from zombietop.clock import FakeClock
from zombietop.config import Config, load_config
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore


@pytest.fixture
def fast_config_path(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(FAST_CONFIG)
    return path


@pytest.fixture
def fast_config(fast_config_path: Path) -> Config:
    return load_config(fast_config_path)


@pytest.fixture
def patient_config_path(tmp_path: Path) -> Path:
    """The fast config with a kill grace no test reaches, for the tests of jobs that end on
    TERM: how long that takes on a busy machine is not what they test, and a 1 s grace of real
    time turned a polite exit into a SIGKILL under load. A kill or a resume still returns as
    soon as the job is gone."""
    path = tmp_path / "patient.toml"
    path.write_text(
        FAST_CONFIG.replace('kill_grace = "1s"', 'kill_grace = "5m"')
        .replace('stage = "20s"', 'stage = "10m"')  # a grace must fit inside a stage,
        .replace('task = "1m"', 'task = "1h"')  # and a stage inside a task
    )
    return path


@pytest.fixture
def patient_config(patient_config_path: Path) -> Config:
    return load_config(patient_config_path)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "zombietop.db"


@pytest.fixture
async def real_store(db: Path) -> AsyncIterator[SQLiteStore]:
    opened = await SQLiteStore.open(db, create=True)
    yield opened
    await opened.close()


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock(start=time.time())


@pytest.fixture
async def fake_store(db: Path, fake_clock: FakeClock) -> AsyncIterator[SQLiteStore]:
    opened = await SQLiteStore.open(db, create=True, clock=fake_clock)
    yield opened
    await opened.close()


@pytest.fixture
async def live_store(store_location: Path | str) -> AsyncIterator[Store]:
    """The test's store on either backend, keeping real time (its own or the server's)."""
    opened = await open_for_test(store_location, create=True)
    yield opened
    await opened.close()


@pytest.fixture
async def pinned_store(store_location: Path | str, fake_clock: FakeClock) -> AsyncIterator[Store]:
    """The test's store on either backend, its clock pinned to ``fake_clock``."""
    opened = await open_for_test(store_location, fake_clock, create=True)
    yield opened
    await opened.close()


@pytest.fixture
def children() -> Iterator[Children]:
    kids = Children()
    yield kids
    kids.cleanup()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[ThrowawayRedis]:
    """One throwaway redis-server for the session (tests/redis_server.py)."""
    import os

    binary = find_server()
    if binary is None:
        if os.environ.get("ZOMBIETOP_REQUIRE_REDIS"):
            pytest.fail(NO_REDIS.replace("SKIPPED", "REQUIRED (ZOMBIETOP_REQUIRE_REDIS)"))
        pytest.skip(NO_REDIS)
    server = ThrowawayRedis(binary)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_db(redis_server: ThrowawayRedis) -> int:
    """A Redis database of this test's own."""
    return redis_server.fresh_db()


@pytest.fixture
def celery_workers(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> Iterator[Workers]:
    """Real Celery workers on this test's Redis database, all stopped after the test."""
    workers = Workers(tmp_path, redis_server.url(redis_db))
    try:
        yield workers
    finally:
        workers.stop()


@pytest.fixture
def rq_workers(tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int) -> Iterator[RQWorkers]:
    """Real RQ workers on this test's Redis database, all stopped after the test."""
    workers = RQWorkers(tmp_path, redis_server.url(redis_db))
    try:
        yield workers
    finally:
        workers.stop()
