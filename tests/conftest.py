"""Shared fixtures: one store fixture over both backends, driven by a fake clock.

Every test that asks for ``store`` (or ``store_location``) runs once on SQLite and once on
PostgreSQL; ``@pytest.mark.backends("sqlite")`` keeps a test that is about one backend on it.
PostgreSQL tests run against a throwaway server this session starts (tests/pg_server.py) and
skip, with the reason in the summary, only when no PostgreSQL binaries are installed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.pg_server import TEMPLATE, ThrowawayServer, external_url, find_binaries
from tests.stores import open_for_test
from zombietop.clock import FakeClock
from zombietop.store import Store

if TYPE_CHECKING:
    from tests.airflow_env import AirflowDatabase, PostgresTemplate, SqliteTemplates

# The Airflow fixtures (airflow_sqlite, airflow3_sqlite) live beside the helpers they use.
pytest_plugins = ["tests.airflow_env"]

BACKENDS = ("sqlite", "postgresql")
NO_POSTGRES = (
    "PostgreSQL tests SKIPPED: no initdb/postgres binaries found (looked on PATH, in "
    "/usr/lib/postgresql/*/bin and $ZOMBIETOP_PG_BIN); install PostgreSQL or set "
    "ZOMBIETOP_TEST_PG=postgresql://... to run them"
)


def pytest_configure(config: pytest.Config) -> None:
    # syrupy fails the run for the snapshot of a snapshot test that skipped: it counts the
    # test's SVG file as unused. Where the Airflow tests skip because their venv is missing, an
    # unused snapshot is therefore only a warning. CI has the venvs (and requires them), so a
    # stale snapshot still fails there.
    from tests.airflow_env import venv

    if venv("3") is None and not os.environ.get("ZOMBIETOP_REQUIRE_AIRFLOW"):
        config.option.warn_unused_snapshots = True


def pytest_report_header(config: pytest.Config) -> str:
    if os.environ.get("ZOMBIETOP_TEST_PG"):
        return "postgresql: the server in ZOMBIETOP_TEST_PG"
    bindir = find_binaries()
    if bindir is None:
        return "postgresql: NOT FOUND - " + NO_POSTGRES
    return f"postgresql: throwaway server from {bindir}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("backends")
        names = marker.args if marker else BACKENDS
        metafunc.parametrize("backend", names, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class PostgresForTests:
    """A server this session may create databases on, each a fresh zombietop store."""

    def __init__(self, admin_url: Callable[[str], str], server: ThrowawayServer | None) -> None:
        self.url = admin_url
        self.server = server
        self._count = 0
        self._template_ready = False
        # asyncpg connections belong to one event loop: admin work runs on a loop of its own.
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def create_database(self, *, empty: bool = False) -> str:
        """Return the URL of a new database: a migrated store, or ``empty``."""
        return self._pool.submit(asyncio.run, self._create(empty)).result(timeout=60)

    async def _create(self, empty: bool) -> str:
        import asyncpg

        from zombietop.store.postgres import PostgresStore

        self._count += 1
        name = f"zt_{os.getpid()}_{self._count}"
        admin = await asyncpg.connect(self.url("postgres"))
        try:
            if empty:
                await admin.execute(f'CREATE DATABASE "{name}"')
                return self.url(name)
            if not self._template_ready:
                template = f"{TEMPLATE}_{os.getpid()}"
                await admin.execute(f'CREATE DATABASE "{template}"')
                migrated = await PostgresStore.open(self.url(template), create=True)
                await migrated.close()
                self._template = template
                self._template_ready = True
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"')
        finally:
            await admin.close()
        return self.url(name)

    def close(self) -> None:
        self._pool.shutdown()
        if self.server is not None:
            self.server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresForTests]:
    external = os.environ.get("ZOMBIETOP_TEST_PG")
    if external:
        found = PostgresForTests(lambda name: external_url(external, name), None)
    else:
        bindir = find_binaries()
        if bindir is None:
            if os.environ.get("ZOMBIETOP_REQUIRE_PG"):
                pytest.fail(NO_POSTGRES.replace("SKIPPED", "REQUIRED (ZOMBIETOP_REQUIRE_PG)"))
            pytest.skip(NO_POSTGRES)
        server = ThrowawayServer(bindir)
        server.start()
        found = PostgresForTests(server.url, server)
    try:
        yield found
    finally:
        found.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "zombietop.db"


@pytest.fixture
def store_location(backend: str, db_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """Where this test's store lives: a SQLite file, or a fresh PostgreSQL database's URL."""
    if backend == "sqlite":
        return db_path
    server: PostgresForTests = request.getfixturevalue("postgres")
    return server.create_database()


@pytest.fixture
async def store(store_location: Path | str, clock: FakeClock) -> AsyncIterator[Store]:
    opened = await open_for_test(store_location, clock, create=True)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def reopen(store_location: Path | str, clock: FakeClock) -> Callable[..., Awaitable[Store]]:
    """Open the test's store once more (another process's view), on the same clock."""

    def opener(**kwargs: Any) -> Awaitable[Store]:
        kwargs.setdefault("clock", clock)
        return open_for_test(store_location, **kwargs)

    return opener


@pytest.fixture(scope="session")
def airflow_pg_template(
    postgres: PostgresForTests, airflow_templates: SqliteTemplates
) -> PostgresTemplate:
    from tests.airflow_env import PostgresTemplate

    return PostgresTemplate(postgres.url, airflow_templates.root / "home-pg")


@pytest.fixture
def airflow_postgres(airflow_pg_template: PostgresTemplate) -> AirflowDatabase:
    """A freshly migrated Airflow 3 database on the throwaway PostgreSQL."""
    return airflow_pg_template.fresh()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    # How many of the documentation's examples the suite runs, and why the others are not run
    # (tests/test_examples.py), printed whenever that module was part of the run.
    import sys

    examples = sys.modules.get("tests.test_examples")
    if examples is not None:
        terminalreporter.write_line(examples.summary())
