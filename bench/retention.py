"""Retention on a big SQLite store: its size and `zombietop status --all` before and after a
prune, and how long each prune batch holds the store while a real job beats beside it.

    python bench/retention.py [--tasks 200000] [--events 1000000] [--vs PYTHON]

The store is filled with plain SQL on the current schema: finished tasks spread over the last
120 days (so about three quarters are older than the default keep_finished, 30d), each with a
lease, a latest heartbeat, three history points and its share of the events; plus 200 running
tasks. Then:

1. size (the file, and the bytes in use: pages minus free pages) and `status --all > /dev/null`
   (wall time and peak RSS of the process), with this checkout and, with ``--vs``, another
   interpreter's zombietop (the code before the change, on a store it made itself);
2. a prune (``zombietop.store.pruner.prune``, as the watchdog runs it) while a second process
   writes a heartbeat every 10 ms through its own connection with a short busy timeout
   (``--writer-timeout``, default 100 ms), counting its "database is locked" errors and its
   slowest write; every batch's time holding the store is recorded;
3. size and `status --all` again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zombietop.store import open_store  # noqa: E402
from zombietop.store.pruner import prune  # noqa: E402

DAY = 86400.0
RUNNING = 200
HISTORY = 3

WRITER = """
import json, sqlite3, sys, time
path, timeout, stop = sys.argv[1], float(sys.argv[2]), sys.argv[3]
db = sqlite3.connect(path, isolation_level=None, timeout=timeout)
writes = locked = 0
slowest = 0.0
import os
while not os.path.exists(stop):
    asked = time.monotonic()
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("UPDATE heartbeats SET written_at = ?, seq = seq + 1 WHERE task_id = 'run-0'",
                   (time.time(),))
        db.execute("COMMIT")
        writes += 1
        slowest = max(slowest, time.monotonic() - asked)
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        locked += 1
        try:
            db.execute("ROLLBACK")
        except sqlite3.OperationalError:
            pass
    time.sleep(0.01)
print(json.dumps({"writes": writes, "locked": locked, "slowest_s": slowest}))
"""


def fill(db: Path, tasks: int, events: int) -> None:
    """Write the store's rows with plain SQL (the schema's triggers stamp them as usual)."""
    now = time.time()
    rng = random.Random(7)
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA synchronous = OFF")
    con.execute("BEGIN")
    per_task = max(events // tasks, 1)

    def rows() -> Iterator[tuple[object, ...]]:
        for n in range(tasks):
            finished = now - rng.uniform(0, 120 * DAY)
            yield (
                f"job-{n:07d}",
                f"run-{n}",
                f"step{n % 50}",
                "default",
                "succeeded",
                finished - 600,
                finished - 600,
                finished - 590,
                finished,
                finished,
            )

    con.executemany(
        "INSERT INTO tasks (task_id, run_id, step, step_type, state, created_at, claimed_at,"
        " started_at, finished_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
        rows(),
    )
    con.executemany(
        "INSERT INTO tasks (task_id, run_id, step, step_type, state, created_at, claimed_at,"
        " started_at, updated_at) VALUES (?, 'r', 'live', 'default', 'running', ?, ?, ?, ?)",
        ((f"run-{n}", now - 60, now - 60, now - 60, now) for n in range(RUNNING)),
    )
    con.execute(
        "INSERT INTO leases (task_id, owner, token, acquired_at, renewed_at, expires_at)"
        " SELECT task_id, NULL, 1, created_at, finished_at, NULL FROM tasks"
    )
    con.execute(
        "INSERT INTO heartbeats (task_id, stage, progress, counters, written_at,"
        " progress_changed_at, stage_started_at, seq)"
        " SELECT task_id, 'load', 100, '{\"rows\": 8200000}', updated_at, updated_at,"
        " updated_at, 3 FROM tasks"
    )
    for seq in range(1, HISTORY + 1):
        con.execute(
            "INSERT INTO heartbeat_history (task_id, seq, written_at, stage, progress)"
            f" SELECT task_id, {seq}, updated_at, 'load', {seq * 30} FROM tasks"
        )
    kinds = ["task_created", "lease_acquired", "lease_renewed", "state_changed", "lease_released"]
    data = json.dumps({"owner": "worker@host-17", "token": 1, "expires_at": now})
    con.executemany(
        "INSERT INTO events (at, task_id, kind, actor, message, data) VALUES (?,?,?,?,?,?)",
        (
            (
                now,
                f"job-{n % tasks:07d}",
                kinds[n % len(kinds)],
                "worker@host-17",
                "worker@host-17 renewed token 1 until +5m",
                data,
            )
            for n in range(per_task * tasks)
        ),
    )
    con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def sizes(db: Path) -> dict[str, float]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    page = con.execute("PRAGMA page_size").fetchone()[0]
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    free = con.execute("PRAGMA freelist_count").fetchone()[0]
    counts = {
        table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("tasks", "events", "heartbeat_history")
    }
    con.close()
    wal = Path(f"{db}-wal")
    return {
        "file_mb": (db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)) / 1e6,
        "in_use_mb": (pages - free) * page / 1e6,
        **counts,
    }


def status_all(python: str, db: Path, env: dict[str, str]) -> dict[str, float]:
    """`status --all > /dev/null`: wall time and the process's peak RSS."""
    started = time.monotonic()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(
            [python, "-m", "zombietop.tui", "status", "--all", "--db", str(db)],
            stdout=sink,
            stderr=subprocess.PIPE,
            env=env,
        )
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 2):
        raise SystemExit(f"status --all failed ({code}): {err}")
    return {"seconds": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


async def prune_beside_a_writer(db: Path, timeout: float, tmp: Path) -> dict[str, object]:
    stop = tmp / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(timeout), str(stop)],
        stdout=subprocess.PIPE,
    )
    held: list[float] = []
    async with await open_store(db) as store:
        real = store.prune_finished

        async def timed(*args: object, **kwargs: object) -> object:
            asked = time.monotonic()
            try:
                return await real(*args, **kwargs)  # type: ignore[arg-type]
            finally:
                held.append(time.monotonic() - asked)

        store.prune_finished = timed  # type: ignore[method-assign]
        started = time.monotonic()
        run = await prune(store, 30 * DAY)
        took = time.monotonic() - started
    stop.touch()
    out, _ = writer.communicate(timeout=60)
    beats = json.loads(out)
    held_ms = sorted(h * 1000 for h in held)
    return {
        "pruned": run.tasks,
        "batches": run.batches,
        "prune_seconds": round(took, 1),
        "batch_ms_median": round(statistics.median(held_ms), 1),
        "batch_ms_p99": round(held_ms[int(len(held_ms) * 0.99) - 1], 1),
        "batch_ms_max": round(held_ms[-1], 1),
        "writer_timeout_ms": timeout * 1000,
        "writer_writes": beats["writes"],
        "writer_locked_errors": beats["locked"],
        "writer_slowest_write_ms": round(beats["slowest_s"] * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--writer-timeout", type=float, default=0.1, metavar="SECONDS")
    parser.add_argument("--vs", metavar="PYTHON", help="also time another zombietop's status")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        env = {**os.environ, "XDG_CONFIG_HOME": str(tmp), "PYTHONPATH": str(REPO)}
        env.pop("ZOMBIETOP_DB", None)
        results: dict[str, object] = {}
        if args.vs:
            vs_db = tmp / "vs.db"
            subprocess.run(
                [args.vs, "-m", "zombietop.tui", "init", "--db", str(vs_db)],
                check=True,
                env={**env, "PYTHONPATH": ""},
                capture_output=True,
            )
            fill(vs_db, args.tasks, args.events)
            results["vs_before"] = {
                **sizes(vs_db),
                "status_all": status_all(args.vs, vs_db, {**env, "PYTHONPATH": ""}),
            }
            vs_db.unlink()
        db = tmp / "z.db"
        subprocess.run(
            [sys.executable, "-m", "zombietop.tui", "init", "--db", str(db)],
            check=True,
            env=env,
            capture_output=True,
        )
        built = time.monotonic()
        fill(db, args.tasks, args.events)
        results["fill_seconds"] = round(time.monotonic() - built, 1)
        results["before"] = {**sizes(db), "status_all": status_all(sys.executable, db, env)}
        results["prune"] = asyncio.run(prune_beside_a_writer(db, args.writer_timeout, tmp))
        results["after"] = {**sizes(db), "status_all": status_all(sys.executable, db, env)}
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
