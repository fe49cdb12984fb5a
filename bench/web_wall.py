"""One wall viewer in a browser against the wall in a terminal, at rest, in one run.

    python bench/web_wall.py [--rounds 2] [--seconds 40] [--warmup 10] [--tasks 1000]

scripts/fleet_store.py keeps ``--tasks`` live tasks beating in a fresh store (the healthy fleet
of bench/dashboard_rest.py: every task beats every 10 s, the worst offenders change every
second). Each round, in turn:

- web: a real ``zombietop serve --wall`` on loopback and headless Chromium showing
  ``/wall?token=...`` (tests/chromium.py, 1280x720); after the warm-up, the CPU of the serve
  process and its wall child (user + system from /proc, over wall time, 100% = one core), and
  Chromium's beside it (what the viewer's machine pays, not the server);
- terminal: ``zombietop --wall`` in a private tmux server of the size the browser's terminal
  had, its CPU and the bytes it writes to the terminal (bench/dashboard_rest.py's ``measure``).

Both read the same config (``[monitor] refresh = "1s"``, as in sections 8 and 19). Prints each
round and the medians; exits 0. Not a test: only figures taken in the same run compare.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from dashboard_rest import (  # noqa: E402
    TMUX_CONF,
    BenchError,
    Tmux,
    beating_fleet,
    child_env,
    measure,
    tree_cpu,
)

from tests.chromium import browser  # noqa: E402

TOKEN = "bench-wall-token-0123456789"
SERVING = re.compile(r"serving the wall at http://([\d.]+:\d+)/wall")
WATCHING = re.compile(r"a browser watches \(pid (\d+), (\d+)x(\d+)\)")


async def watch_in_browser(
    url: str, warmup: float, seconds: float, serve: int
) -> tuple[float, float, float]:
    """CPU% of ``serve``'s tree, of its wall process alone, and of Chromium's, while one
    browser shows the wall."""
    async with browser(url) as (page, chrome):
        if not await page.wait_for("document.body.classList.contains('-first-byte')", 30):
            raise BenchError("the browser never heard from the wall process")
        await asyncio.sleep(warmup)
        served, shown = psutil.Process(serve), psutil.Process(chrome.pid)
        walls = served.children()
        if len(walls) != 1:
            raise BenchError(f"serve runs {len(walls)} wall processes, not 1")
        cpu, wall, chrome_cpu = tree_cpu(served), tree_cpu(walls[0]), tree_cpu(shown)
        started = time.monotonic()
        await asyncio.sleep(seconds)
        elapsed = time.monotonic() - started
        return (
            100 * (tree_cpu(served) - cpu) / elapsed,
            100 * (tree_cpu(walls[0]) - wall) / elapsed,
            100 * (tree_cpu(shown) - chrome_cpu) / elapsed,
        )


def measure_web(
    db: Path, env: dict[str, str], args: argparse.Namespace
) -> tuple[float, float, tuple[int, int]]:
    """One browser on one ``serve --wall``: serve's CPU%, Chromium's, the terminal's size."""
    argv = ["serve", "--wall", "--listen", "127.0.0.1:0", "--db", str(db)]
    serve = subprocess.Popen(
        [sys.executable, "-m", "zombietop.tui", *argv],
        env={**env, "ZOMBIETOP_WALL_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert serve.stdout is not None
    lines: list[str] = []
    try:
        address = None
        while address is None:
            line = serve.stdout.readline()
            if not line:
                raise BenchError("serve --wall did not start:\n" + "".join(lines))
            lines.append(line)
            found = SERVING.search(line)
            address = found[1] if found else None
        url = f"http://{address}/wall?token={TOKEN}"
        cpu, wall, chrome = asyncio.run(watch_in_browser(url, args.warmup, args.seconds, serve.pid))
    finally:
        serve.send_signal(signal.SIGTERM)
        rest, _ = serve.communicate(timeout=30)
        lines.append(rest)
    sizes = WATCHING.findall("".join(lines))
    if not sizes:
        raise BenchError("no browser watched:\n" + "".join(lines))
    _, width, height = sizes[0]
    return cpu, wall, chrome, (int(width), int(height))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=40.0, help="measurement window")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before measuring")
    parser.add_argument("--tasks", type=int, default=1000)
    args = parser.parse_args()
    if shutil.which("tmux") is None or shutil.which("chromium") is None:
        print("needs tmux and chromium (apt-get install tmux chromium); nothing measured")
        return 0
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}; load average at "
        f"start: {' '.join(f'{a:.2f}' for a in os.getloadavg())}"
    )
    print(
        f"{args.tasks:,} live tasks (scripts/fleet_store.py, all beating), refresh 1 s; "
        f"{args.warmup:g} s warm-up, {args.rounds} rounds of {args.seconds:g} s"
    )
    web: list[float] = []
    child: list[float] = []
    chrome: list[float] = []
    terminal: list[float] = []
    written: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="zombietop-web-wall-") as folder:
            tmp = Path(folder)
            env = child_env(tmp)
            config = tmp / "config.toml"
            config.write_text('[monitor]\nrefresh = "1s"\n')
            env["ZOMBIETOP_CONFIG"] = str(config)
            db = tmp / "fleet.db"
            (tmp / "tmux.conf").write_text(TMUX_CONF)
            with beating_fleet(db, args.tasks, 0, env):
                time.sleep(10)  # every task has beaten once
                for number in range(1, args.rounds + 1):
                    cpu, wall, shown, size = measure_web(db, env, args)
                    tmux = Tmux(f"zombietop-web-wall-{os.getpid()}", tmp / "tmux.conf", env)
                    args.size = size
                    argv = [sys.executable, "-m", "zombietop.tui", "--wall", "--db", str(db)]
                    sample = measure("wall", argv, tmux, tmp / "pane.out", args)
                    web.append(cpu)
                    child.append(wall)
                    chrome.append(shown)
                    terminal.append(sample.cpu_pct)
                    written.append(sample.bytes_per_s)
                    print(
                        f"round {number}: web {cpu:.2f}% (its wall process {wall:.2f}%; "
                        f"Chromium {shown:.1f}%), terminal "
                        f"{sample.cpu_pct:.2f}% ({sample.bytes_per_s:,.0f} B/s), "
                        f"{size[0]}x{size[1]}"
                    )
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; cleaned up", file=sys.stderr)
        return 130
    median = statistics.median

    def line(what: str, values: list[float]) -> str:
        return f"| {what} | {median(values):.2f}% | {min(values):.2f}-{max(values):.2f}% |"

    print("| wall | CPU (median) | range |")
    print("| --- | ---: | ---: |")
    print(line("in a browser: serve + its wall process", web))
    print(line("of which the wall process", child))
    print(line("in tmux: `zombietop --wall`", terminal))
    print(line("(the browser itself, headless Chromium)", chrome))
    ratio = median(web) / max(median(terminal), 0.01)
    print(f"terminal wall writes {median(written):,.0f} B/s; web / terminal: {ratio:.2f}x")
    print(f"load average at the end: {' '.join(f'{a:.2f}' for a in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
