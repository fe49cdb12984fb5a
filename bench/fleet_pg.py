"""A platform team's fleet on PostgreSQL, measured as zombietop is today: the dashboard, the
watchdog, the agents' writes and the store's size, at 10,000, 100,000 and 1,000,000 tasks.

    nice -n 19 python bench/fleet_pg.py [--sizes 10000,100000,1000000] [--agents 1000]
        [--beat-every 10] [--settle 15] [--plot docs/fleet_pg.svg]

A throwaway PostgreSQL (tests/pg_server.py: unix socket only, fsync off) holds one database a
size, filled by ``scripts/fleet_store.py`` (COPY, tasks dealt to 1,000 hosts: most running and
beating, some stalled, dead, reclaimable, queued or finished). For each size:

- agents: ``--agents`` agents (asyncio tasks in a second process, ``fleet_store.py``) send
  their host's samples every ``--beat-every`` seconds with ``record_agent_round``; everything
  below is measured after ``--settle`` seconds of that, while they beat;
- first frame: the dashboard in a process of its own, headless (Textual's ``run_test``, 160x48),
  from creating the app to the first whole poll drawn (goal 3 s); before it, on a store of more
  than a screenful of active tasks, the glance (``glance_s``: a screenful of the tasks silent
  longest, judged, drawn while the whole poll runs; none on a smaller store);
- key: ``s`` (the next sort) pressed until Textual is idle again, median of 3 (goal 100 ms),
  each beside a key the dashboard does nothing with (``key_floor_ms``: Pilot's own round trip);
- RSS: the dashboard process's resident memory after those keys, and its peak (goal 500 MB);
- watchdog look: one ``Watchdog.tick`` (what ``zombietop watch --once --dry-run`` does after
  opening the store), the first one, cold (goal 5 s); a look longer than ``[watch] interval``
  withholds its verdicts (the store lags), and the JSON line says so in ``watch_withheld``;
- ingest: the agents stopped, every agent's round at once from asyncio tasks over 8
  connections, beside a bare batched ``INSERT ... ON CONFLICT`` of the same rows over 8
  connections; rows per second, median of 3 rounds each (goal: at least half the bare rate);
- size: ``pg_database_size`` after the fill and the beats, then after a day of retention: the
  pruner (``prune``, keep one day, batches of 1,000) with the store's clock pinned at the fill's
  moment (finished tasks end over the last two days, so it removes those over a day old), then a
  plain ``VACUUM`` (which frees the space for reuse but gives none back to the disk).

Prints a table and writes the plot as plain SVG. Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "scripts")]

import asyncpg  # noqa: E402
import fleet_store  # noqa: E402  (scripts/, beside this folder)
from fleet_ingest import COLUMNS, NAMES, UPDATE  # noqa: E402  (a bench beside this one)

from tests.pg_server import ThrowawayServer, bench_server  # noqa: E402
from zombietop.clock import FakeClock  # noqa: E402
from zombietop.config import default_config  # noqa: E402
from zombietop.store.beats import sample_params  # noqa: E402
from zombietop.store.postgres import PostgresStore  # noqa: E402

DAY = 86_400.0
CONNECTIONS = fleet_store.PG_CONNECTIONS
KEYS = 3
UNBOUND_KEY = "f12"
"""A key the dashboard does nothing with: its round trip is Pilot's and Textual's own, the
floor under every key (the same with 10 tasks or a million)."""
GOALS = {
    "first_frame_s": ("first frame (s)", 3.0, "max"),
    "key_ms": ("key (ms)", 100.0, "max"),
    "watch_s": ("watchdog look (s)", 5.0, "max"),
    "rss_mb": ("dashboard RSS (MB)", 500.0, "max"),
    "ingest_vs_bare": ("ingest / bare insert", 0.5, "min"),
}


# The dashboard, in a process of its own (``--dashboard URL``), so its RSS is its own. ---------


async def dashboard(url: str) -> dict[str, float]:
    from zombietop.judge.monitor import Monitor
    from zombietop.procs import PsutilProbe
    from zombietop.tui.app import ZombietopApp
    from zombietop.tui.textual_compat import install_cropped_updates

    install_cropped_updates()
    started = time.perf_counter()
    store = await PostgresStore.open(url, read_only=True)
    try:
        monitor = Monitor(store, default_config(), probe=PsutilProbe())
        app = ZombietopApp(monitor, refresh=3600, actor="bench")
        async with app.run_test(size=(160, 48)) as pilot:
            glance = None
            while app.snapshot.taken_at is None or app.snapshot.glance_of is not None:
                if glance is None and app.snapshot.glance_of is not None:
                    glance = time.perf_counter() - started
                await pilot.pause(0.01)
            await pilot.pause()
            first = time.perf_counter() - started
            rows = len(app.rows.views)
            counted = app.snapshot.counted
            keys, floor = [], []
            for _ in range(KEYS):
                for key, times in (("s", keys), (UNBOUND_KEY, floor)):
                    pressed = time.perf_counter()
                    await pilot.press(key)
                    await pilot.pause()
                    times.append(time.perf_counter() - pressed)
            rss = _vm("VmRSS")
    finally:
        await store.close()
    peak = _vm("VmHWM")
    return {
        "first_frame_s": first,
        "glance_s": math.nan if glance is None else glance,
        "key_ms": statistics.median(keys) * 1000,
        "key_floor_ms": statistics.median(floor) * 1000,
        "rss_mb": rss,
        "peak_mb": peak,
        "rows": rows,
        "quiet": 0 if counted is None else sum(counted.quiet.values()),
        "unread": 0 if counted is None else counted.unread,
    }


def _vm(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)


def run_dashboard(url: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--dashboard", url],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the dashboard failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# The watchdog, the ingest and the retention, in this process. ---------------------------------


async def watch_once(url: str) -> tuple[float, str]:
    from zombietop.judge.monitor import Monitor
    from zombietop.procs import PsutilProbe
    from zombietop.watch.watchdog import Watchdog

    config = default_config()
    async with await PostgresStore.open(url, read_only=True) as store:
        started = time.perf_counter()
        monitor = Monitor(store, config, probe=PsutilProbe(), reuse_verdicts=True)
        dog = Watchdog(
            monitor, config, executor=None, notifiers=[], dry_run=True, log=lambda _: None
        )
        report = await dog.tick()
        seconds = time.perf_counter() - started
    # A look that took longer than the watchdog's interval withholds its verdicts (the store
    # lags): it is timed all the same, and the table says it acted on nothing.
    return seconds, report.withheld or ""


def bare_sql(rows: int) -> str:
    width = len(NAMES)
    values = ", ".join(
        "(" + ", ".join(f"${row * width + col + 1}" for col in range(width)) + ")"
        for row in range(rows)
    )
    return (
        f"INSERT INTO process_samples ({COLUMNS}) VALUES {values} "
        f"ON CONFLICT (task_id) DO UPDATE SET {UPDATE}"
    )


async def ingest(url: str, tasks: int, agents: int, rounds: int = 3) -> dict[str, float]:
    """Rows per second of every agent's round at once, and of the bare insert of those rows."""
    stores = [await PostgresStore.open(url) for _ in range(CONNECTIONS)]
    conns = [await asyncpg.connect(url) for _ in range(CONNECTIONS)]
    locks = [asyncio.Lock() for _ in range(CONNECTIONS)]
    hosts = range(min(agents, fleet_store.HOSTS))

    async def one_round(tick: int) -> tuple[float, int]:
        now = time.time()
        samples = {n: fleet_store.host_samples(n, tasks, tick, now) for n in hosts}
        started = time.perf_counter()
        await asyncio.gather(
            *(
                stores[n % CONNECTIONS].record_agent_round(
                    f"host-{n:04d}",
                    agent_id=f"agent@host-{n:04d}",
                    pid=1,
                    interval=10.0,
                    reported_at=now,
                    samples=samples[n],
                )
                for n in hosts
            )
        )
        return time.perf_counter() - started, sum(len(each) for each in samples.values())

    async def bare(n: int, samples: dict[str, Any], now: float) -> None:
        if not samples:
            return
        args: list[Any] = []
        for task_id, sample in samples.items():
            params = sample_params(task_id, f"host-{n:04d}", sample, now)
            params["written_at"] = params.pop("now")
            args += [params[name] for name in NAMES]
        async with locks[n % CONNECTIONS]:  # one statement at a time a connection, as a store
            await conns[n % CONNECTIONS].execute(bare_sql(len(samples)), *args)

    async def bare_round(tick: int) -> tuple[float, int]:
        now = time.time()
        samples = {n: fleet_store.host_samples(n, tasks, tick, now) for n in hosts}
        started = time.perf_counter()
        await asyncio.gather(*(bare(n, samples[n], now) for n in hosts))
        return time.perf_counter() - started, sum(len(each) for each in samples.values())

    try:
        await one_round(0)  # every measured row is an update, as in an agent's steady state
        mine, theirs = [], []
        for tick in range(1, rounds + 1):
            seconds, rows = await one_round(tick)
            mine.append(rows / seconds)
            seconds, rows = await bare_round(tick)
            theirs.append(rows / seconds)
    finally:
        for store in stores:
            await store.close()
        for conn in conns:
            await conn.close()
    round_rate, bare_rate = statistics.median(mine), statistics.median(theirs)
    return {
        "ingest_rows_s": round_rate,
        "bare_rows_s": bare_rate,
        "ingest_vs_bare": round_rate / bare_rate,
    }


async def retention(url: str, filled_at: float) -> dict[str, float]:
    from zombietop.store.pruner import prune

    conn = await asyncpg.connect(url)
    try:
        before = await conn.fetchval("SELECT pg_database_size(current_database())")
        async with await PostgresStore.open(url, pinned_clock=FakeClock(filled_at)) as store:
            started = time.perf_counter()
            run = await prune(store, DAY, batch=1000)
            seconds = time.perf_counter() - started
        await conn.execute("VACUUM")
        after = await conn.fetchval("SELECT pg_database_size(current_database())")
        left = await conn.fetchval("SELECT count(*) FROM tasks")
    finally:
        await conn.close()
    return {
        "size_mb": before / 2**20,
        "size_day_mb": after / 2**20,
        "pruned": run.tasks,
        "prune_s": seconds,
        "tasks_left": left,
    }


# One size, then all of them. ------------------------------------------------------------------


async def measure(server: ThrowawayServer, tasks: int, args: argparse.Namespace) -> dict[str, Any]:
    url = await server.new_database()
    started = time.perf_counter()
    filled_at = await fleet_store.fill_postgres(url, tasks)
    row: dict[str, Any] = {"tasks": tasks, "fill_s": time.perf_counter() - started}
    beating = subprocess.Popen(
        [
            *(sys.executable, str(ROOT / "scripts" / "fleet_store.py"), "--db", url),
            *("--no-fill", "--tasks", str(tasks), "--agents", str(args.agents)),
            *("--beat-every", str(args.beat_every)),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        await asyncio.sleep(args.settle)
        if beating.poll() is not None:
            raise RuntimeError(f"the agents stopped (exit {beating.returncode})")
        row.update(await asyncio.to_thread(run_dashboard, url))
        print(json.dumps(row), file=sys.stderr, flush=True)  # a long run keeps what it has
        row["watch_s"], row["watch_withheld"] = await watch_once(url)
    finally:
        # SIGTERM, not SIGINT: a shell that starts this bench in the background has its
        # children ignore SIGINT, and the agents would beat on.
        beating.terminate()
        beating.wait()
    row.update(await ingest(url, tasks, args.agents))
    row.update(await retention(url, filled_at))
    return row


LINES = (
    ("tasks", "{:,.0f}"),
    ("fill_s", "{:.1f}"),
    ("glance_s", "{:.2f}"),
    ("first_frame_s", "{:.2f}"),
    ("rows", "{:,.0f}"),
    ("quiet", "{:,.0f}"),
    ("unread", "{:,.0f}"),
    ("key_ms", "{:.0f}"),
    ("key_floor_ms", "{:.0f}"),
    ("watch_s", "{:.2f}"),
    ("rss_mb", "{:.0f}"),
    ("peak_mb", "{:.0f}"),
    ("ingest_rows_s", "{:,.0f}"),
    ("bare_rows_s", "{:,.0f}"),
    ("ingest_vs_bare", "{:.2f}"),
    ("size_mb", "{:.0f}"),
    ("size_day_mb", "{:.0f}"),
    ("pruned", "{:,.0f}"),
)


def table(rows: list[dict[str, Any]]) -> str:
    lines = []
    for key, form in LINES:
        label, goal = key, ""
        if key in GOALS:
            label, limit, kind = GOALS[key]
            goal = f"{'<=' if kind == 'max' else '>='} {limit:g}"
        cells = "".join(f"{form.format(row[key]):>14}" for row in rows)
        lines.append(f"{label:<24}{cells}  {goal}")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Each goal's figure over the fleet's size, as a share of its goal on a log scale, turned
    so that under the goal's line is met for every figure (plain SVG)."""
    width, height, left, top, right, bottom = 680, 360, 60, 30, 210, 50
    sizes = [row["tasks"] for row in rows]
    shares = {
        key: [row[key] / limit if kind == "max" else limit / row[key] for row in rows]
        for key, (_, limit, kind) in GOALS.items()
    }
    low = math.floor(math.log10(min(min(values) for values in shares.values())))
    high = max(1, math.ceil(math.log10(max(max(values) for values in shares.values()))))
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(i: int) -> float:
        return left + 20 + ((plot_w - 40) * i / max(1, len(sizes) - 1))

    def y(value: float) -> float:
        return top + plot_h * (high - math.log10(value)) / (high - low)

    colours = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18">zombietop on PostgreSQL: each figure against its goal '
        "(under the line: met)</text>",
        f'<line x1="{left}" y1="{y(1)}" x2="{left + plot_w}" y2="{y(1)}" stroke="grey" '
        'stroke-dasharray="4 3"/>',
        f'<text x="{left + plot_w - 30}" y="{y(1) - 4}" fill="grey">goal</text>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="black"/>',
    ]
    for power in range(low, high + 1):
        parts.append(
            f'<text x="{left - 8}" y="{y(10.0**power) + 4}" text-anchor="end">{10.0**power:g}x</text>'
        )
    for i, size in enumerate(sizes):
        parts.append(
            f'<text x="{x(i)}" y="{top + plot_h + 18}" text-anchor="middle">{size:,} tasks</text>'
        )
    for n, (key, values) in enumerate(shares.items()):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        colour = colours[n % len(colours)]
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        parts += [
            f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>'
            for i, v in enumerate(values)
        ]
        label, _, kind = GOALS[key]
        label = label if kind == "max" else "half the bare insert / ingest"
        parts.append(
            f'<text x="{left + plot_w + 12}" y="{top + 14 + 18 * n}" fill="{colour}">{label}</text>'
        )
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n")


async def main_async(args: argparse.Namespace, server: ThrowawayServer) -> list[dict[str, Any]]:
    rows = []
    for tasks in args.sizes:
        rows.append(await measure(server, tasks, args))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dashboard", help=argparse.SUPPRESS)
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(each) for each in text.split(",")],
        default=[10_000, 100_000, 1_000_000],
    )
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--beat-every", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "fleet_pg.svg")
    args = parser.parse_args()
    if args.dashboard:
        print(json.dumps(asyncio.run(dashboard(args.dashboard))))
        return 0
    # The machine is shared: the server (a child) and the agents inherit this niceness.
    os.nice(max(0, 19 - os.nice(0)))
    with bench_server("fleet_pg") as server:
        rows = asyncio.run(main_async(args, server))
    print(table(rows))
    plot(rows, args.plot)
    print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
