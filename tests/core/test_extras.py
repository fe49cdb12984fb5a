"""What the job-side install (``pip install zombietop``, no extra) does when a part of an extra
is asked for: one error that names the package and the command that adds it, never an
ImportError, and nothing done before it.

A package is made missing the way Python itself records one: ``sys.modules[name] = None``
makes ``import name`` fail and ``importlib.util.find_spec(name)`` answer None, exactly as in an
environment without it. scripts/smoke_installed.sh checks the same in a real job-side venv.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zombietop.config import load_config, write_defaults
from zombietop.errors import MissingExtra, SourceError, ZombietopError
from zombietop.extras import Install, require
from zombietop.paging.notify import AppriseNotifier
from zombietop.sdk import Job
from zombietop.sources import open_source
from zombietop.store import open_store


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``modules`` missing from this interpreter for the length of the test."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def hint(extra: str = "all") -> str:
    return Install.here().command(extra)


def test_require_says_nothing_when_everything_is_there() -> None:
    require("the test", "json", "sqlite3")


def test_a_missing_package_is_named_with_the_command_that_adds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide(monkeypatch, "prometheus_client")
    with pytest.raises(MissingExtra) as raised:
        require("`zombietop watch --metrics`", "prometheus_client")
    assert str(raised.value) == (
        f"`zombietop watch --metrics` needs prometheus-client, which is not installed: {hint()}"
    )
    assert isinstance(raised.value, ZombietopError)  # the command line prints it as one line


def test_two_missing_packages_are_named_together(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "textual", "rich")
    with pytest.raises(MissingExtra, match="the dashboard needs textual and rich, which are not"):
        require("the dashboard", "textual", "rich")


@pytest.mark.parametrize(
    ("install", "command"),
    [
        (Install(tool="pip"), "pip install 'zombietop[all]'"),
        (Install(tool="uv"), "uv pip install 'zombietop[all]'"),
        (Install(tool="pipx"), "pipx install --force 'zombietop[all]'"),
        (Install(tool="uv tool"), "uv tool install 'zombietop[all]'"),
        (
            Install(tool="pip", source="/src/zombietop", editable=True),
            "pip install -e '/src/zombietop[all]'",
        ),
        (
            Install(tool="pip", source="/tmp/my dist/zombietop-0.2.0-py3-none-any.whl"),
            "pip install '/tmp/my dist/zombietop-0.2.0-py3-none-any.whl[all]'",
        ),
        (
            Install(tool="pipx", source="/src/zombietop"),
            "pipx install --force '/src/zombietop[all]'",
        ),
    ],
)
def test_the_command_follows_how_zombietop_was_installed(install: Install, command: str) -> None:
    assert install.command("all") == command


@pytest.mark.parametrize(
    ("marker", "tool"),
    [("pipx_metadata.json", "pipx"), ("uv-receipt.toml", "uv tool"), (None, "pip")],
)
def test_pipx_and_uv_tool_environments_are_told_by_the_file_they_leave(
    tmp_path: Path, marker: str | None, tool: str
) -> None:
    if marker is not None:
        (tmp_path / marker).write_text("")
    assert Install.here(tmp_path).tool == tool


async def test_a_postgresql_store_without_asyncpg_names_the_postgres_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide(monkeypatch, "asyncpg")
    with pytest.raises(MissingExtra) as raised:
        await open_store("postgresql://jobs@db.example/zombietop")
    assert str(raised.value) == (
        f"a PostgreSQL store needs asyncpg, which is not installed: {hint('postgres')}"
    )


def test_a_job_on_a_postgresql_store_without_asyncpg_fails_at_its_start(
    monkeypatch: pytest.MonkeyPatch, fast_config_path: Path
) -> None:
    hide(monkeypatch, "asyncpg")
    job = Job("export-2031", db="postgresql://jobs@db.example/zombietop", config=fast_config_path)
    with pytest.raises(MissingExtra, match=r"needs asyncpg.*zombietop\[postgres\]"), job:
        pytest.fail("the job ran without a store")


def test_config_init_without_tomli_w_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hide(monkeypatch, "tomli_w")
    target = tmp_path / "conf" / "config.toml"
    with pytest.raises(MissingExtra, match="`zombietop config init` needs tomli-w"):
        write_defaults(target)
    assert not target.parent.exists()


def test_a_config_with_schedules_loads_with_cronsim_imported_late(tmp_path: Path) -> None:
    """cronsim is a dependency of the job side, imported when a schedule is checked: a schedule
    the watchdog needs never stops a job."""
    path = tmp_path / "config.toml"
    path.write_text('[schedules.nightly]\nstep = "export"\ncron = "30 2 * * *"\n')
    assert load_config(path).schedules[0].cron == "30 2 * * *"


def test_an_apprise_channel_without_apprise_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide(monkeypatch, "apprise")
    with pytest.raises(MissingExtra, match=r"^\[notify\] apprise needs apprise, which is not"):
        AppriseNotifier(["json://127.0.0.1:9/hook"])


async def test_an_airflow_source_on_postgresql_without_asyncpg_is_a_source_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A source that cannot be read hides nothing else: the error is the source's own."""
    hide(monkeypatch, "asyncpg")
    source = open_source("airflow+postgresql://airflow@db.example/airflow")
    with pytest.raises(SourceError) as raised:
        await source.open()
    assert str(raised.value) == (
        "source airflow+postgresql://airflow@db.example/airflow: an Airflow source on "
        f"PostgreSQL needs asyncpg, which is not installed: {hint('postgres')}"
    )
