"""core is the engine and never loads the screen; the job side loads none of the extras."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_importing_core_loads_neither_textual_nor_rich() -> None:
    code = (
        "import sys, pkgutil, importlib, zombietop\n"
        "for m in pkgutil.iter_modules(zombietop.__path__):\n"
        "    importlib.import_module('zombietop.' + m.name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


EXTRAS = {"textual", "rich", "apprise", "prometheus_client", "asyncpg", "tomli_w"}
"""The packages of zombietop's extras (pyproject.toml): the job side never loads them."""


@pytest.mark.parametrize(
    ("job_side", "never"),
    [
        # A job's own process: not even the cron parser, which only a schedule needs.
        ("import zombietop", EXTRAS | {"cronsim"}),
        ("from zombietop import Job", EXTRAS | {"cronsim"}),
        # `zombietop run` and `zombietop beat`: the command line, its parser and every module
        # a command's handler is in (the status part reads schedules, with cronsim).
        ("from zombietop.tui.cli.main import build_parser; build_parser()", EXTRAS),
    ],
)
def test_the_job_side_loads_none_of_the_extras(job_side: str, never: set[str]) -> None:
    code = (
        f"import sys\n{job_side}\n"
        f"print(sorted({{n.split('.')[0] for n in sys.modules}} & set({sorted(never)!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", f"{job_side} loaded {result.stdout.strip()}"


def test_core_sources_do_not_import_the_face() -> None:
    for path in (REPO / "core").rglob("*.py"):
        text = path.read_text()
        for banned in (
            "import textual",
            "from textual",
            "import rich",
            "from rich",
            "from zombietop.tui",
            "import zombietop.tui",
        ):
            assert banned not in text, f"{path.relative_to(REPO)} has {banned!r}"
