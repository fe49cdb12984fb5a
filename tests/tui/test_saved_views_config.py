"""``[views.NAME]`` checked at load, table by table: its shape by the config
(``zombietop.config.views``), its sort and column names by the dashboard
(``zombietop.tui.views.check_views``), each error naming the file, the view and the key; and
``zombietop --view`` and ``config check`` refusing a bad view before any screen opens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from zombietop.config import View, load_config
from zombietop.errors import ConfigError
from zombietop.tui.cells import COLUMNS
from zombietop.tui.views import check_views, run_columns, view_named


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


GOOD = """
[views.failing]
rows = "jobs"
sort = "success rate"
columns = ["job", "success", "trend", "last"]

[views.exports]
filter = " export "
sort = "oldest heartbeat"
columns = ["stage", "health"]
"""


def test_views_load_in_the_files_order(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, GOOD))
    check_views(config)
    assert config.views == (
        View(
            name="failing",
            rows="jobs",
            sort="success rate",
            columns=("job", "success", "trend", "last"),
        ),
        View(
            name="exports",
            rows="runs",
            filter="export",
            sort="oldest heartbeat",
            columns=("stage", "health"),
        ),
    )


SHAPE_CASES = [
    ('[views.a]\nrow = "jobs"\n', "[views.a]: unknown key 'row'; did you mean 'rows'?"),
    ('[views.a]\nrows = "tasks"\n', "[views.a]: rows = 'tasks': give \"runs\""),
    ("[views.a]\nfilter = 3\n", "[views.a]: filter must be a string, not 3"),
    ("[views.a]\nsort = true\n", "[views.a]: sort must be a string, not True"),
    ('[views.a]\ncolumns = "task"\n', "[views.a]: columns must be a list of column names"),
    ("[views.a]\ncolumns = [1]\n", "[views.a]: columns must be a list of column names"),
    ('[views.a]\ncolumns = ["task", "task"]\n', "[views.a]: columns names task more than once"),
    ('[views]\na = "jobs"\n', "[views.a] must be a table"),
    ("views = 3\n", "[views] must be a table, not int"),
]


@pytest.mark.parametrize(("text", "fragment"), SHAPE_CASES)
def test_a_views_shape_is_checked_by_the_config(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and fragment in message and "\n" not in message


NAME_CASES = [
    (
        '[views.a]\nsort = "p95"\n',
        "[views.a]: sort = 'p95' is not an order of the runs table; give one of 'urgency'",
    ),
    (
        '[views.a]\nrows = "jobs"\nsort = "oldest heartbeat"\n',
        "[views.a]: sort = 'oldest heartbeat' is not an order of the jobs table; give one of "
        "'urgency', 'name', 'success rate', 'p95', 'last run'",
    ),
    (
        '[views.a]\ncolumns = ["task", "trend"]\n',
        "[views.a]: columns: 'trend' is not a column of the runs table; its columns are "
        "'health', 'task'",
    ),
    (
        '[views.a]\nrows = "jobs"\ncolumns = ["job", "stage"]\n',
        "[views.a]: columns: 'stage' is not a column of the jobs table; its columns are "
        "'job', 'runs'",
    ),
]


@pytest.mark.parametrize(("text", "fragment"), NAME_CASES)
def test_a_views_names_are_checked_by_the_dashboard(
    tmp_path: Path, text: str, fragment: str
) -> None:
    path = _write(tmp_path, text)
    config = load_config(path)
    with pytest.raises(ConfigError) as caught:
        check_views(config)
    message = str(caught.value)
    assert message.startswith(str(path)) and fragment in message


def test_every_task_column_and_sort_can_be_named() -> None:
    every = [column.key for column in COLUMNS]
    view = View(name="all", columns=tuple(reversed(every)))
    assert [column.key for column in run_columns(300, view)] == every  # the table's order
    narrow = View(name="few", columns=("stage",))
    assert [column.key for column in run_columns(80, narrow)] == ["task", "stage"]


def test_an_unknown_view_name_lists_the_views() -> None:
    views = (View(name="failing"), View(name="exports"))
    assert view_named(views, "exports", "c.toml") is views[1]
    with pytest.raises(ConfigError, match=r"--view nope: no view of that name in c.toml \(its"):
        view_named(views, "nope", "c.toml")


def _zombietop(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zombietop.tui", "--db", str(tmp_path / "z.db"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_dashboard_and_config_check_refuse_a_bad_view_before_a_screen(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, '[views.late]\nrows = "jobs"\ncolumns = ["job", "pid"]\n')
    for args in (("--config", str(path)), ("config", "check", str(path))):
        result = _zombietop(tmp_path, *args)
        assert result.returncode == 2, result
        assert result.stderr.startswith(f"zombietop: {path} [views.late]: columns: 'pid'")
        assert result.stdout == ""
    good = _write(tmp_path, GOOD)
    result = _zombietop(tmp_path, "--config", str(good), "--view", "nope")
    assert result.returncode == 2
    assert "--view nope: no view of that name" in result.stderr
    assert "(its views: failing, exports)" in result.stderr
