"""core is the engine and never loads the screen."""

import subprocess
import sys
from pathlib import Path

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
