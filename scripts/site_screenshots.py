"""Build the documentation site and take screenshots of it with headless Chromium.

    python scripts/site_screenshots.py            # screenshots/site-home.png, site-howto.png
    python scripts/site_screenshots.py --out DIR  # elsewhere (tests/test_docs_site.py does)

The site is built with ``mkdocs build --strict`` into a temporary folder and served from there on
a loopback port picked at run time; Chromium (Debian's ``chromium``) loads the home page and one
how-to page at 1280x900 and saves each as a PNG.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = {"site-home.png": "", "site-howto.png": "howto/cron-and-pings/"}
SIZE = (1280, 900)


def build(site: Path) -> None:
    """Build the site into ``site``, failing on any warning, as the suite does."""
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
        cwd=ROOT,
        check=True,
    )


@contextlib.contextmanager
def served(site: Path) -> Iterator[str]:
    """Serve ``site`` on a free loopback port; yield its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()


def shoot(chromium: str, url: str, png: Path, profile: Path) -> None:
    """Save a screenshot of ``url`` as ``png``."""
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--window-size={SIZE[0]},{SIZE[1]}",
            f"--screenshot={png}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    if not png.exists():
        raise SystemExit(f"chromium wrote no screenshot of {url} to {png}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots", help="the folder")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zombietop-site-") as scratch:
        site = Path(scratch) / "site"
        build(site)
        with served(site) as base:
            for name, page in SHOTS.items():
                shoot(chromium, base + page, args.out / name, Path(scratch) / "profile")
                print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
