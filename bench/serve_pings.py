"""Pings over HTTP: how many beat pings a second one `zombietop serve` answers on this machine,
with p50 and p99 latency, beside the store's own ingest (`bench/ingest.py`) in the same run.

    python bench/serve_pings.py [--seconds 5] [--clients 8] [--jobs 64]

A real `zombietop serve` process on loopback; the clients are aiohttp sessions in this process,
each pinging `/beat` of its own open runs as fast as it is answered. The rate limit is raised
out of the way (it is what is measured, not what is limited).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
KEY = "bench-ping-key-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_up(base: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(200):
            try:
                async with session.get(f"{base}/ping/{KEY}/none") as response:
                    await response.read()
                    return
            except aiohttp.ClientError:
                await asyncio.sleep(0.05)
    raise SystemExit("zombietop serve did not come up")


async def pound(base: str, clients: int, jobs: int, seconds: float) -> list[float]:
    latencies: list[float] = []
    async with aiohttp.ClientSession() as session:
        for job in range(jobs):
            async with session.get(f"{base}/ping/{KEY}/job-{job}/start?create=1") as response:
                assert response.status == 200, await response.text()
        end = time.perf_counter() + seconds

        async def client(number: int) -> None:
            n = 0
            while time.perf_counter() < end:
                job = (number + n * clients) % jobs
                url = f"{base}/ping/{KEY}/job-{job}/beat?stage=copy&p={n % 100}"
                started = time.perf_counter()
                async with session.get(url) as response:
                    await response.read()
                    if response.status != 200:
                        raise SystemExit(f"ping answered {response.status}")
                latencies.append(time.perf_counter() - started)
                n += 1

        await asyncio.gather(*(client(i) for i in range(clients)))
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        config = tmp / "config.toml"
        config.write_text(
            '[thresholds]\nlease_ttl = "10m"\n[serve]\nrate_limit = 100000\nmax_connections = 256\n'
        )
        port = free_port()
        command = Path(sys.executable).with_name("zombietop")
        env = {**os.environ, "ZOMBIETOP_PING_KEY": KEY}
        server = subprocess.Popen(
            [str(command), "--db", str(tmp / "z.db"), "--config", str(config), "serve",
             "--listen", f"127.0.0.1:{port}"],
            env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            asyncio.run(wait_up(base))
            latencies = sorted(asyncio.run(pound(base, args.clients, args.jobs, args.seconds)))
        finally:
            server.terminate()
            server.wait(10)
    count = len(latencies)
    p50 = latencies[count // 2] * 1000
    p99 = latencies[min(count - 1, int(count * 0.99))] * 1000
    print(
        f"zombietop serve: {count / args.seconds:.0f} beat pings/s with {args.clients} clients "
        f"over {args.jobs} jobs, p50 {p50:.1f} ms, p99 {p99:.1f} ms"
    )
    print("the store's own ingest, for comparison (bench/ingest.py, 1 and 8 writers):")
    sys.stdout.flush()
    subprocess.run(
        [sys.executable, str(REPO / "bench" / "ingest.py"), "--seconds", "3", "--writers", "1,8"],
        check=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
