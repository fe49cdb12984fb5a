"""The house rules, run by the suite: ruff (lint and format), mypy strict on the engine and the
face, and the import contracts in pyproject.toml, all over the code under its installed names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(tool: str, *args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(
        [str(BIN / tool), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{tool} {' '.join(args)}:\n{result.stdout}{result.stderr}"


def test_ruff_lint() -> None:
    run("ruff", "check", "--no-cache", ".")


def test_ruff_format() -> None:
    run("ruff", "format", "--no-cache", "--check", ".")


def test_mypy_strict_on_the_engine_and_the_face(tmp_path: Path) -> None:
    # MYPYPATH comes before pyproject.toml's mypy_path (core/ alone), so mypy reads the wheel's
    # layout, the face included as zombietop.tui.
    env = {**os.environ, "MYPYPATH": str(staged(tmp_path))}
    run("mypy", "--no-incremental", "--cache-dir", os.devnull, env=env)


def staged(tmp_path: Path) -> Path:
    """The package as a wheel lays it out (``zombietop/`` holding ``tui/``), in links."""
    package = tmp_path / "zombietop"
    package.mkdir()
    for entry in (REPO / "core").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "tui").symlink_to(REPO / "tui")
    return tmp_path


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    # .ci/ holds the contract type for private modules (.ci/private_imports.py).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(REPO / ".ci")])}
    return subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache", str(REPO / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_contracts(tmp_path: Path) -> None:
    # An editable install maps two folders onto one name; import-linter reads a real tree.
    result = lint_imports(staged(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_private_textual_import_outside_the_compat_module_breaks_a_contract(
    tmp_path: Path,
) -> None:
    root = staged(tmp_path)
    (root / "zombietop" / "private_probe.py").write_text(
        "from textual._two_way_dict import TwoWayDict\n"
    )
    result = lint_imports(root)
    assert result.returncode == 1
    assert "zombietop.private_probe imports textual._two_way_dict" in result.stdout


def unfolded(root: Path, package: str) -> Path:
    """Make ``zombietop/<package>`` a real folder of links, so a test can add a module to it
    without writing into the repository."""
    folder = root / "zombietop" / package
    folder.unlink()
    folder.mkdir()
    for entry in (REPO / "core" / package).iterdir():
        if entry.name != "__pycache__":
            (folder / entry.name).symlink_to(entry)
    return folder


@pytest.mark.parametrize(
    ("package", "line", "broken"),
    [
        ("sources", "from zombietop.store.sqlite import SQLiteStore\n", "Sources import nothing"),
        ("sources", "from zombietop.store import open_store\n", "Sources import nothing"),
        ("store", "from zombietop.sources import Origin\n", "The store never imports a source"),
        # The job side: a job's environment never loads the operator's parts, even indirectly.
        ("run", "from zombietop.judge.monitor import Monitor\n", "The job side never loads"),
        ("run", "from zombietop.paging import notify\n", "The job side never loads"),
        ("run", "import rich\n", "The job side never loads"),
        # The wings' floors: the judge decides, and never acts, watches or pages.
        ("judge", "from zombietop.act.executor import Executor\n", "The wings stand in floors"),
        ("judge", "from zombietop.watch import watchdog\n", "The wings stand in floors"),
        ("paging", "from zombietop.watch import watchdog\n", "The wings stand in floors"),
    ],
)
def test_an_import_across_the_wings_the_wrong_way_breaks_a_contract(
    tmp_path: Path, package: str, line: str, broken: str
) -> None:
    root = staged(tmp_path)
    (unfolded(root, package) / "probe.py").write_text(line)
    result = lint_imports(root)
    assert result.returncode == 1
    assert f"zombietop.{package}.probe" in result.stdout
    verdict = next(line for line in result.stdout.splitlines() if line.startswith(broken))
    assert " BROKEN" in verdict, result.stdout


@pytest.mark.parametrize("name", ["core", "tui"])
def test_the_folders_names_are_not_importable(tmp_path: Path, name: str) -> None:
    """Outside the checkout, only ``zombietop`` is installed: no ``core``, no ``tui``."""
    result = subprocess.run(
        [sys.executable, "-c", f"import {name}"], cwd=tmp_path, capture_output=True, text=True
    )
    assert f"No module named '{name}'" in result.stderr
