"""The documentation site builds, every page is in its nav, and every page reads in one sitting.

``mkdocs build --strict`` (mkdocs.yml sets ``strict`` and the link, anchor and nav checks) fails
on a broken link, a missing anchor, a nav entry with no page, and a page that no nav entry
lists, so a new page must be given its place. README.md stays a front door (under 250 lines);
every other page is under 400 lines, except the generated references in docs/reference/. The
screenshots of the built site are made by scripts/site_screenshots.py with headless Chromium.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests import docs_pages
from tests.chromium import chromium_path

REPO = docs_pages.REPO
README_LINES = 250
PAGE_LINES = 400
GENERATED = REPO / "docs" / "reference"
SITE_SHOTS = ("site-home.png", "site-howto.png")


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    built = build(REPO / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    assert (tmp_path / "site" / "index.html").exists()
    # The screenshots the pages show are on the site, where the pages' links point.
    assert (tmp_path / "site" / "screenshots" / "dashboard.svg").exists()
    wall = (tmp_path / "site" / "howto" / "wall" / "index.html").read_text(encoding="utf-8")
    assert 'src="../../screenshots/wall.svg"' in wall


@pytest.fixture
def copy_of_the_docs(tmp_path: Path) -> Path:
    """The site's sources, copied where a test may break them; the copy's mkdocs.yml."""
    copy = tmp_path / "repo"
    for name in ("docs", "screenshots", "scripts"):
        shutil.copytree(REPO / name, copy / name)
    for name in ("mkdocs.yml", *docs_pages.ROOT_PAGES):
        shutil.copy2(REPO / name, copy / name)
    return copy / "mkdocs.yml"


def test_a_page_left_out_of_the_nav_or_a_broken_link_fails_the_build(
    copy_of_the_docs: Path, tmp_path: Path
) -> None:
    docs = copy_of_the_docs.parent / "docs"
    (docs / "howto" / "forgotten.md").write_text("# A page nobody listed\n")
    with (docs / "howto" / "paging.md").open("a") as page:
        page.write(
            "\nSee [a page that is not there](nowhere.md) and [an anchor](oncall.md#nope).\n"
        )
    built = build(copy_of_the_docs, tmp_path / "site")
    assert built.returncode != 0
    assert "howto/forgotten.md" in built.stderr, built.stderr
    assert "'nowhere.md'" in built.stderr, built.stderr
    assert "'#nope'" in built.stderr, built.stderr


def test_the_readme_is_a_front_door() -> None:
    lines = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines < README_LINES, f"README.md has {lines} lines; move the detail to docs/"


def test_every_other_page_reads_in_one_sitting() -> None:
    long = {
        str(page.relative_to(REPO)): lines
        for page in docs_pages.pages()
        if GENERATED not in page.parents
        and (lines := len(page.read_text(encoding="utf-8").splitlines())) > PAGE_LINES
    }
    assert not long, f"pages over {PAGE_LINES} lines (split them by task): {long}"


def png_size(path: Path) -> tuple[int, int]:
    """The width and height of a PNG file, from its header."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_site_screenshots_are_in_the_repository() -> None:
    for name in SITE_SHOTS:
        assert png_size(REPO / "screenshots" / name) == (1280, 900), name


@pytest.mark.slow
def test_the_screenshot_script_draws_the_site(tmp_path: Path) -> None:
    chromium_path()
    made = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "site_screenshots.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert made.returncode == 0, made.stdout + made.stderr
    for name in SITE_SHOTS:
        shot = tmp_path / name
        assert png_size(shot) == (1280, 900)
        # A page drawn, not a blank one: a PNG of one colour compresses to almost nothing.
        assert shot.stat().st_size > 30_000, f"{name} looks blank ({shot.stat().st_size} bytes)"
