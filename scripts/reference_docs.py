"""Write the reference pages (docs/reference/*.md) from the code, so that they cannot drift.

    python scripts/reference_docs.py           # write every page
    python scripts/reference_docs.py --check   # exit 1 naming each page that is stale

Each page is one module of ``scripts/reference_pages/`` (``PAGES`` lists them); each reads
the installed ``zombietop``: the health traits, the config's tables, the command-line parsers,
the metric families, the ping routes and the source registry.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from reference_pages import PAGES  # noqa: E402  (a folder beside this script, not a package)

REFERENCE = HERE.parent / "docs" / "reference"


def stale_pages(folder: Path = REFERENCE) -> list[str]:
    """The pages whose file differs from what the code says now (or is missing)."""
    stale = []
    for name, render in PAGES.items():
        path = folder / f"{name}.md"
        if not path.is_file() or path.read_text(encoding="utf-8") != render():
            stale.append(str(path))
    return stale


def write_pages(folder: Path = REFERENCE) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, render in PAGES.items():
        path = folder / f"{name}.md"
        path.write_text(render(), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a page is stale"
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for name in stale:
            print(f"{name} is stale: run python scripts/reference_docs.py", file=sys.stderr)
        return 1 if stale else 0
    for written in write_pages():
        print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
