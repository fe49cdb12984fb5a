"""The SHARED lock one poll holds on a rollback-journal Airflow database at 300k task
instances: the read before issue 29 item 9.4 (a scan of task_instance) and the indexed read
after, side by side in one run, and what a writer sees meanwhile.

    python bench/airflow_scan.py [--finished 300000] [--polls 20] [--writer 15]

The database has Airflow's own schema when an Airflow 3 venv is there
(``ZOMBIETOP_AIRFLOW_VENV``, or ``.airflow-venv``: ``airflow db migrate`` makes it), else
Airflow 3's columns and indexes made by hand (``tests/airflow_by_hand.py``). It is switched to
a rollback journal (``journal_mode=DELETE``), where a reader's SHARED lock keeps every writer
out, and filled with ``--finished`` successful task instances over 30 days, 50 running and 20
queued.

Per poll, the time the read's statement runs is the time it holds the SHARED lock: the full
read of before, and zombietop's source as it now polls (its indexed read; its full read, once
every ``FULL_READ_EVERY`` seconds, is reported apart). Then, for ``--writer`` seconds each, a
writer commits a heartbeat every 10 ms with a 100 ms busy timeout (tighter than Airflow's
SQLAlchemy default, as in the issue) while a poll runs every second: its "database is locked"
errors and its commits.

Prints a table; exits 0. Not a test: only the ratio measured in the same run means anything.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.airflow_by_hand import SCHEMA, utc_text  # noqa: E402
from zombietop.sources.airflow import AirflowSource  # noqa: E402
from zombietop.sources.airflow_reads import FULL_READ_EVERY  # noqa: E402

BEFORE = """
SELECT ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, ti.state, ti.hostname,
       ti.pid, ti.operator, ti.custom_operator_name, ti.start_date, ti.end_date, ti.queued_dttm,
       ti.updated_at, ti.last_heartbeat_at AS heartbeat_at, dr.logical_date
FROM task_instance AS ti
LEFT JOIN dag_run AS dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id
WHERE ti.state IS NULL
   OR ti.state NOT IN ('success', 'failed', 'skipped', 'upstream_failed', 'removed')
   OR ?1 IS NULL OR ti.end_date >= ?1
ORDER BY ti.dag_id, ti.task_id, ti.run_id, ti.map_index
"""
"""The read of every poll before item 9.4 (main at e2deac6), verbatim."""

WINDOW = 3600.0
"""zombietop's finished_window: the finished task instances a poll asks for."""

T = TypeVar("T")


def airflow_venv() -> Path | None:
    where = Path(os.environ.get("ZOMBIETOP_AIRFLOW_VENV") or ROOT / ".airflow-venv")
    return where if (where / "bin" / "airflow").exists() else None


def make_schema(path: Path) -> str:
    venv = airflow_venv()
    if venv is None:
        conn = sqlite3.connect(path)
        conn.executescript(SCHEMA)
        conn.close()
        return "Airflow 3's columns and indexes, by hand"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(path.parent),
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{path}",
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
    )
    subprocess.run([str(venv / "bin" / "airflow"), "db", "migrate"], env=env, check=True,
                   capture_output=True)  # fmt: skip
    version = subprocess.run([str(venv / "bin" / "airflow"), "version"], env=env,
                             capture_output=True, text=True).stdout.strip()  # fmt: skip
    return f"Airflow {version}'s own (airflow db migrate)"


def fill(path: Path, finished: int, now: float) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = OFF")
    columns = {row[1] for row in conn.execute("PRAGMA table_info(task_instance)")}
    real = "pool" in columns

    def row(i: int, state: str, start: float, end: float | None, beat: float | None) -> tuple:
        base = (f"dag_{i % 40}", f"task_{i % 1000}", f"scheduled__{i // 1000:06d}", -1, 1, state,
                "worker-1", 4000 + i % 30000, "PythonOperator", None, utc_text(start),
                None if end is None else utc_text(end), utc_text(start - 2),
                utc_text(end or start), None if beat is None else utc_text(beat))  # fmt: skip
        if real:
            return (uuid.uuid4().hex, *base, "default_pool", 1, 0, "default", 1, "LocalExecutor")
        return base

    names = ("dag_id, task_id, run_id, map_index, try_number, state, hostname, pid, operator, "
             "custom_operator_name, start_date, end_date, queued_dttm, updated_at, "
             "last_heartbeat_at")  # fmt: skip
    if real:
        names = ("id, " + names + ", pool, pool_slots, max_tries, queue, priority_weight, "
                 "executor")  # fmt: skip
    marks = ", ".join("?" * len(names.split(", ")))
    insert = f"INSERT INTO task_instance ({names}) VALUES ({marks})"
    span = 30 * 86400.0
    rows = [row(i, "success", now - span + i * span / finished, now - span + i * span / finished
                + 30, None) for i in range(finished)]  # fmt: skip
    rows += [row(finished + i, "running", now - 600, None, now - 1) for i in range(50)]
    rows += [row(finished + 50 + i, "queued", now - 60, None, None) for i in range(20)]
    with conn:
        conn.executemany(insert, rows)
        if not real:  # the DAG runs the indexed read looks through (Airflow's own need more)
            conn.execute(
                "INSERT INTO dag_run (dag_id, run_id, state) SELECT dag_id, run_id, "
                "CASE WHEN min(state) = 'success' THEN 'success' ELSE 'running' END "
                "FROM task_instance GROUP BY dag_id, run_id"
            )
    conn.close()


def timed(call: Callable[..., T], times: list[float], what: str) -> Callable[..., T]:
    """``call`` (the source's ``_sqlite.read``), its time kept for the reads of ``what``."""

    def run(read: object, said: str) -> T:
        started = time.perf_counter()
        found = call(read, said)
        if said == what:
            times.append(time.perf_counter() - started)
        return found

    return run


class Writer:
    """A heartbeat every 10 ms with a 100 ms busy timeout, as a busy Airflow worker."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.locked = self.commits = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, timeout=0.1, isolation_level=None)
        while not self._stop.is_set():
            try:
                conn.execute("UPDATE task_instance SET last_heartbeat_at = ? WHERE state = "
                             "'running' AND dag_id = 'dag_0'", (utc_text(time.time()),))  # fmt: skip
                self.commits += 1
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                self.locked += 1
            time.sleep(0.01)
        conn.close()

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def before_poll(path: Path) -> Callable[[], float]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)

    def poll() -> float:
        since = utc_text(time.time() - WINDOW)
        started = time.perf_counter()
        conn.execute(BEFORE, (since,)).fetchall()
        return time.perf_counter() - started

    return poll


async def after_source(path: Path) -> tuple[AirflowSource, list[float]]:
    source = AirflowSource(f"airflow+sqlite:///{path}")
    await source.open()
    times: list[float] = []
    assert source._sqlite is not None
    source._sqlite.read = timed(  # type: ignore[method-assign]
        source._sqlite.read, times, "its task instances"
    )
    return source, times


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--finished", type=int, default=300_000)
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--writer", type=float, default=15.0, help="seconds per side; 0: none")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zt-airflow-scan-") as tmp:
        path = Path(tmp) / "airflow.db"
        schema = make_schema(path)
        fill(path, args.finished, time.time())
        size = path.stat().st_size / 2**20
        print(f"{args.finished:,} finished + 70 active task instances, {size:.0f} MiB, "
              f"rollback journal; schema: {schema}")  # fmt: skip

        before = before_poll(path)
        source, times = await after_source(path)
        await source.poll(time.time() - WINDOW, "here")  # the full read, once
        full = times[-1]
        before_times, after_times = [], []
        for _ in range(args.polls):  # alternated, so both see the same machine
            before_times.append(before())
            await source.poll(time.time() - WINDOW, "here")
            after_times.append(times[-1])
        b, a = statistics.median(before_times), statistics.median(after_times)
        print("\nSHARED lock per poll (the read's statement), median of", args.polls)
        print("| read | median | max |\n|---|---:|---:|")
        print(
            f"| before: a full read every poll | {b * 1000:.1f} ms | {max(before_times) * 1000:.1f} ms |"
        )
        print(f"| after: the indexed read | {a * 1000:.2f} ms | {max(after_times) * 1000:.2f} ms |")
        print(
            f"| after: its full read, once every {FULL_READ_EVERY:g} s | {full * 1000:.1f} ms | |"
        )
        print(f"ratio before/after: {b / a:.0f}x")

        if args.writer > 0:
            print(f"\nA writer (10 ms between commits, busy timeout 100 ms), {args.writer:g} s each, "
                  "a poll every second")  # fmt: skip
            print("| polls | database is locked | commits |\n|---|---:|---:|")
            for name, poll in (("none", None), ("before", before), ("after", None)):
                with Writer(path) as writer:
                    deadline = time.monotonic() + args.writer
                    while time.monotonic() < deadline:
                        if name == "before":
                            assert poll is not None
                            poll()
                        elif name == "after":
                            await source.poll(time.time() - WINDOW, "here")
                        await asyncio.sleep(1.0)
                print(f"| {name} | {writer.locked} | {writer.commits} |")
        await source.close()


if __name__ == "__main__":
    asyncio.run(main())
