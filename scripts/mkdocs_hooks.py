"""Serve the repository's screenshots/ on the documentation site (a MkDocs hook).

A page links to a screenshot as GitHub resolves it, out of docs/ to the repository's root
(``../../screenshots/wall.svg`` from ``docs/howto/``). MkDocs reads only docs/, so this hook
adds screenshots/ to the site's files and points those links one folder lower, where the
site has them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = "screenshots"


def on_files(files: Files, config: Any) -> Files:
    """Add every file of screenshots/ to the site, under its root."""
    for path in sorted((ROOT / SCREENSHOTS).iterdir()):
        if path.is_file():
            files.append(
                File(
                    f"{SCREENSHOTS}/{path.name}",
                    src_dir=str(ROOT),
                    dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"],
                )
            )
    return files


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    """Point the page's links to ../screenshots/ (as seen from the repository) into the site."""
    depth = page.file.src_uri.count("/")
    from_repo = "../" * (depth + 1) + SCREENSHOTS + "/"
    on_site = "../" * depth + SCREENSHOTS + "/"
    return re.sub(r"\]\(" + re.escape(from_repo), "](" + on_site, markdown)
