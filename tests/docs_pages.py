"""The Markdown pages a reader reads: README.md, CONTRIBUTING.md, CHANGELOG.md and docs/.

Tests that check what the documentation says (an example line, the alert rules) look for it on
any of these pages, so that a section can move from one page to another without breaking them.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT_PAGES = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")


def pages() -> list[Path]:
    """Every Markdown page of the documentation, the root's first, then docs/ in order."""
    return [REPO / name for name in ROOT_PAGES] + sorted((REPO / "docs").rglob("*.md"))


def text() -> str:
    """The text of every page, one after the other."""
    return "\n".join(page.read_text(encoding="utf-8") for page in pages())


def line(starts: str) -> str:
    """The one line of the documentation that starts with ``starts``."""
    found = [
        (page, each)
        for page in pages()
        for each in page.read_text(encoding="utf-8").splitlines()
        if each.startswith(starts)
    ]
    assert len(found) == 1, f"the docs have {len(found)} lines that start with {starts!r}: {found}"
    return found[0][1]
