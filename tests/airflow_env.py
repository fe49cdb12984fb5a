"""Real Airflow for the source tests: its own venv, its own ``airflow db migrate``.

Airflow (about 300 MB, 134 packages) lives in a venv of its own beside zombietop's, so the test
venv stays small: ``.airflow-venv`` (Airflow 3) and ``.airflow2-venv`` (Airflow 2), made by
``.ci/run`` or by hand (docs/howto/airflow.md, "Testing against a real Airflow"). A test that needs one skips, saying how to
make it, when it is absent.

Each schema is migrated once per session by Airflow itself; each test gets a copy (SQLite) or a
database made from it as a template (PostgreSQL), and writes its task instances through
``tests/airflow_rows.py`` with Airflow's own table definitions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENVS = {"3": ROOT / ".airflow-venv", "2": ROOT / ".airflow2-venv"}
ENV_OVERRIDES = {"3": "ZOMBIETOP_AIRFLOW_VENV", "2": "ZOMBIETOP_AIRFLOW2_VENV"}
INSTALL = {
    "3": "python3 -m venv .airflow-venv && .airflow-venv/bin/pip install "
    "'apache-airflow>=3,<4' psycopg2-binary asyncpg (pyproject's [airflow] group)",
    "2": "python3 -m venv .airflow2-venv && .airflow2-venv/bin/pip install "
    "'apache-airflow>=2.10,<2.11' (pyproject's [airflow2] group)",
}
ROWS_SCRIPT = Path(__file__).with_name("airflow_rows.py")


def venv(major: str) -> Path | None:
    """The venv with Airflow ``major`` installed, or None."""
    where = Path(os.environ.get(ENV_OVERRIDES[major]) or VENVS[major])
    return where if (where / "bin" / "airflow").exists() else None


def need_venv(major: str) -> Path:
    found = venv(major)
    if found is None:
        if os.environ.get("ZOMBIETOP_REQUIRE_AIRFLOW"):
            pytest.fail(f"Airflow {major} REQUIRED (ZOMBIETOP_REQUIRE_AIRFLOW): {INSTALL[major]}")
        pytest.skip(f"Airflow {major} tests SKIPPED: no Airflow venv; make one: {INSTALL[major]}")
    return found


def _airflow_env(home: Path, conn: str, **config: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=conn,
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        **config,
    )
    return env


def migrate(python_venv: Path, home: Path, conn: str) -> None:
    """Create Airflow's schema on ``conn`` with Airflow's own ``airflow db migrate``."""
    done = subprocess.run(
        [str(python_venv / "bin" / "airflow"), "db", "migrate"],
        env=_airflow_env(home, conn),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"airflow db migrate failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )


@dataclass
class AirflowDatabase:
    """One Airflow metadata database a test may fill, and the URL zombietop reads it by."""

    major: str
    venv: Path
    home: Path
    conn: str
    """Airflow's own SQLAlchemy URL."""
    url: str
    """zombietop's ``--source`` URL."""
    path: Path | None = None
    """The SQLite file (None on PostgreSQL)."""

    def write(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert task instances (times in epoch seconds) as Airflow writes them."""
        done = subprocess.run(
            [str(self.venv / "bin" / "python"), str(ROWS_SCRIPT)],
            input=json.dumps(list(rows)),
            env=_airflow_env(self.home, self.conn),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"writing task instances failed:\n{done.stderr[-3000:]}")

    def serialize(self, dags: Path, *, compress: bool = False) -> None:
        """Parse the DAG files in ``dags`` and write them into ``serialized_dag`` with
        Airflow's own ``airflow dags reserialize``, compressed as ``[core]
        compress_serialized_dags`` says (before ``write``, so task instances name their
        version)."""
        env = _airflow_env(
            self.home,
            self.conn,
            AIRFLOW__CORE__DAGS_FOLDER=str(dags),
            AIRFLOW__CORE__COMPRESS_SERIALIZED_DAGS=str(compress),
        )
        done = subprocess.run(
            [str(self.venv / "bin" / "airflow"), "dags", "reserialize"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"airflow dags reserialize failed:\n{done.stderr[-3000:]}")


class SqliteTemplates:
    """Airflow schemas migrated once a session, on SQLite, per Airflow major version."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="zombietop-airflow-"))
        self._made: dict[str, Path] = {}

    def fresh(self, major: str, where: Path) -> AirflowDatabase:
        found = need_venv(major)
        home = self.root / f"home{major}"
        if major not in self._made:
            home.mkdir(exist_ok=True)
            template = home / "airflow.db"
            migrate(found, home, f"sqlite:///{template}")
            self._made[major] = template
        path = where / f"airflow{major}.db"
        shutil.copyfile(self._made[major], path)
        return AirflowDatabase(
            major=major,
            venv=found,
            home=home,
            conn=f"sqlite:///{path}",
            url=f"airflow+sqlite:///{path}",
            path=path,
        )

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def airflow_templates() -> Iterator[SqliteTemplates]:
    templates = SqliteTemplates()
    try:
        yield templates
    finally:
        templates.close()


@pytest.fixture(params=["3", "2"], ids=["airflow3", "airflow2"])
def airflow_sqlite(
    request: pytest.FixtureRequest, airflow_templates: SqliteTemplates, tmp_path: Path
) -> AirflowDatabase:
    """A freshly migrated Airflow database on SQLite, once per Airflow major version."""
    return airflow_templates.fresh(str(request.param), tmp_path)


@pytest.fixture
def airflow3_sqlite(airflow_templates: SqliteTemplates, tmp_path: Path) -> AirflowDatabase:
    return airflow_templates.fresh("3", tmp_path)


class PostgresTemplate:
    """Airflow 3's schema migrated once a session on the throwaway PostgreSQL; each test gets a
    database made from it."""

    def __init__(self, admin_url: Any, home: Path) -> None:
        self.admin_url = admin_url
        self.home = home
        self._template: str | None = None
        self._count = 0

    def fresh(self) -> AirflowDatabase:
        import asyncio

        found = need_venv("3")
        self.home.mkdir(parents=True, exist_ok=True)
        if self._template is None:
            name = f"airflow_tpl_{os.getpid()}"
            asyncio.run(self._admin(f'CREATE DATABASE "{name}"'))
            migrate(found, self.home, _sqlalchemy(self.admin_url(name)))
            self._template = name
        self._count += 1
        name = f"airflow_{os.getpid()}_{self._count}"
        asyncio.run(self._admin(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"'))
        url = self.admin_url(name)
        return AirflowDatabase(
            major="3",
            venv=found,
            home=self.home,
            conn=_sqlalchemy(url),
            url="airflow+" + url,
        )

    async def _admin(self, statement: str) -> None:
        import asyncpg

        admin = await asyncpg.connect(self.admin_url("postgres"))
        try:
            await admin.execute(statement)
        finally:
            await admin.close()


def _sqlalchemy(url: str) -> str:
    return "postgresql+psycopg2://" + url.split("://", 1)[1]
