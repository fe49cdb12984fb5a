"""Slow scrapers: 1,000 hostile clients against a real `zombietop watch --metrics`.

    python bench/scrapers.py [--tasks 10000] [--clients 1000] [--seconds 60] [--interval 10]

The store holds ``--tasks`` live tasks (thresholds long enough that they stay healthy without
beating), so ``/metrics`` is about 4 MB. The watch runs as a real child process with
``NOTIFY_SOCKET`` set: each look ends with ``WATCHDOG=1``, which times the looks. Then, for
``--seconds``, ``--clients`` clients attack at once and again as soon as they are let go: half
send only the request line and wait (slowloris), half send a whole request and never read the
answer. Meanwhile one well-behaved scraper asks once a second.

Prints the watch's RSS before and at its peak, the gaps between looks before and during the
attack, and how the good scraper fared. Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zombietop.heartbeat_line import parse_line
from zombietop.store import open_store

CONFIG = """\
[thresholds]
heartbeat_interval = "10s"
heartbeat_timeout = "5h"
lease_ttl = "6h"
progress_timeout = "7h"
start_grace = "10s"

[timeouts]
request = "90s"
stage = "7h"
task = "8h"
kill_grace = "30s"

[watch]
interval = "{interval}s"
"""


async def fleet(db: Path, tasks: int) -> None:
    async with await open_store(db, create=True, inline=True) as store:
        for i in range(tasks):
            task_id = f"job-{i:05d}"
            await store.create_task(
                task_id=task_id,
                run_id=f"run-{i}",
                step="export",
                step_type="batch",
                actor="bench",
                host=f"batch-{i % 10:02d}",
            )
            lease = await store.acquire_lease(task_id, owner=f"w{i}", ttl=6 * 3600)
            await store.record_heartbeat(
                task_id, parse_line(f"stage=load p={i % 100}"), owner=f"w{i}", token=lease.token
            )


class Looks(threading.Thread):
    """Hear the watch's ``WATCHDOG=1`` (one per look) and note when each came."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.5)
        self.at: list[float] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            if b"WATCHDOG=1" in data:
                self.at.append(time.monotonic())


class Rss(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.peak = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.1):
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return


async def attacker(
    host: str, port: int, until: float, slowloris: bool, tally: dict[str, int]
) -> None:
    """Attack until ``until``: slowloris sends a request line only and waits for the end; the
    other sends a whole request, reads 64 bytes and then nothing for 11 s. Again and again."""
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    while time.monotonic() < until:
        try:
            reader, writer = await asyncio.open_connection(host, port, limit=2**16)
        except OSError:
            tally["connect failed"] += 1
            await asyncio.sleep(0.5)
            continue
        writer.write(b"GET /metrics HTTP/1.1\r\n" if slowloris else request)
        try:
            left = max(until - time.monotonic(), 0.1)
            first = await asyncio.wait_for(reader.read(64), left)
            tally["bad: answer began" if first else "bad: closed unanswered"] += 1
            if slowloris:
                await asyncio.wait_for(reader.read(), max(until - time.monotonic(), 0.1))
            else:
                await asyncio.sleep(min(11.0, max(until - time.monotonic(), 0.0)))
        except (TimeoutError, ValueError):
            pass
        except OSError:
            tally["bad: reset"] += 1
        finally:
            writer.close()


def good_scraper(url: str, until: float, tally: dict[str, int]) -> None:
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                body = response.read()
            tally["good: answered"] += 1
            tally["good: bytes"] = len(body)
        except Exception:  # a 503, a refusal, a reset
            tally["good: not answered"] += 1
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))


def gaps(at: list[float], start: float, end: float) -> str:
    inside = [b - a for a, b in itertools.pairwise(at) if start <= b <= end]
    if not inside:
        return "no looks"
    return f"{len(inside)} looks, gap median {sorted(inside)[len(inside) // 2]:.1f}s, max {max(inside):.1f}s"


async def attack(host: str, port: int, clients: int, seconds: float, tally: dict[str, int]) -> None:
    until = time.monotonic() + seconds
    await asyncio.gather(*(attacker(host, port, until, i % 2 == 0, tally) for i in range(clients)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        db, config = folder / "z.db", folder / "config.toml"
        config.write_text(CONFIG.format(interval=args.interval))
        asyncio.run(fleet(db, args.tasks))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        looks = Looks(folder / "notify")
        looks.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZOMBIETOP_")}
        env["NOTIFY_SOCKET"] = str(folder / "notify")
        watch = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "zombietop.tui",
                "--db",
                str(db),
                "--config",
                str(config),
                "watch",
                "--metrics",
                f"127.0.0.1:{port}",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while len(looks.at) < 3:  # its first looks, quarantining nothing: all healthy
                time.sleep(0.1)
            calm = psutil.Process(watch.pid).memory_info().rss
            rss = Rss(watch.pid)
            rss.start()
            url = f"http://127.0.0.1:{port}/metrics"
            tally: collections.defaultdict[str, int] = collections.defaultdict(int)
            good = threading.Thread(
                target=good_scraper, args=(url, time.monotonic() + args.seconds, tally)
            )
            before = time.monotonic()
            good.start()
            asyncio.run(attack("127.0.0.1", port, args.clients, args.seconds, tally))
            good.join()
            after = time.monotonic()
            rss.stopping.set()
            rss.join()
        finally:
            watch.terminate()
            watch.wait(30)
            looks.stopping.set()
        print(
            f"{args.tasks} tasks, {args.clients} hostile clients for {args.seconds:.0f}s, "
            f"looks every {args.interval:g}s"
        )
        print(f"watch RSS: {calm / 2**20:.0f} MiB before, peak {rss.peak / 2**20:.0f} MiB during")
        print(f"looks before: {gaps(looks.at, 0, before)}")
        print(f"looks during: {gaps(looks.at, before, after)}")
        print("tally:", dict(sorted(tally.items())))


if __name__ == "__main__":
    main()
