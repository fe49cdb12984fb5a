"""Heartbeat ingest: heartbeats per second through the SDK and through `zombietop run`, with 1, 8
and 32 concurrent writers on one SQLite file, side by side with raw sqlite3 upserts (the limit).
Counts lock errors and lost heartbeats.

    python bench/ingest.py [--seconds 3] [--writers 1,8,32]

`zombietop run` ingests the newest line every heartbeat_interval (last line wins, by design), so
its rate is bounded by writers / interval; what matters there is zero errors and that the last
line written is the one recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zombietop.store.sqlite import SQL  # noqa: E402

CONFIG = """\
[thresholds]
heartbeat_interval = "100ms"
heartbeat_timeout = "2s"
lease_ttl = "10s"
progress_timeout = "30s"
start_grace = "5s"
[timeouts]
request = "5s"
stage = "1m"
task = "10m"
kill_grace = "1s"
"""

RAW_WRITER = """
import sqlite3, sys, time, json
db, task, seconds, sql = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
conn = sqlite3.connect(db, isolation_level=None, timeout=5)
conn.execute("PRAGMA busy_timeout = 5000")
count = errors = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(sql, {"task_id": task, "stage": "s", "progress": count % 100, "counters": json.dumps({"n": count}),
                           "checkpoint": None, "eta_s": None, "request_name": None, "request_at": None,
                           "trace_id": None, "reported_at": None, "now": time.time()}).fetchall()
        conn.execute("COMMIT")
        count += 1
    except sqlite3.OperationalError:
        errors += 1
        conn.execute("ROLLBACK")
print(json.dumps({"count": count, "errors": errors}))
"""

SDK_WRITER = """
import sys, time, json
from zombietop.sdk import Job
db, cfg, task, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
count = errors = 0
with Job(task, db=db, config=cfg, step_type="default") as job:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            job.beat("s", count % 100, n=count)
            count += 1
        except Exception:
            errors += 1
print(json.dumps({"count": count, "errors": errors}))
"""

RUN_CHILD = (
    "i=0; end=$(( $(date +%s) + {seconds} )); while [ $(date +%s) -lt $end ]; do i=$((i+1)); "
    'echo "stage=s p=$((i % 100)) n=$i" >> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 0.02; done; echo $i > {out}'
)


def fresh_store(tmp: Path, name: str, writers: int) -> Path:
    db = tmp / f"{name}-{writers}.db"
    code = (
        "import asyncio, sys\nfrom zombietop.store import open_store\n"
        "async def main():\n"
        f"    async with await open_store({str(db)!r}, create=True) as s:\n"
        f"        for i in range({writers}):\n"
        "            await s.create_task(task_id=f'w{i}', run_id='bench', step='s', step_type='default', actor='bench')\n"
        "            l = await s.acquire_lease(f'w{i}', owner='bench', ttl=3600)\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
    return db


def say_why(writer: str, status: int, stderr: str) -> None:
    """Give the last line a failed writer printed, so an error counted in the table has a cause."""
    reason = stderr.strip().splitlines()[-1:] or ["no message"]
    print(f"  {writer} exited {status}: {reason[0]}", file=sys.stderr)


def recorded(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT task_id, seq, counters FROM heartbeats").fetchall()
    conn.close()
    return {task: seq for task, seq, _ in rows}


def run_raw(tmp: Path, writers: int, seconds: float) -> tuple[float, int, int]:
    db = fresh_store(tmp, "raw", writers)
    sql = SQL["upsert_heartbeat"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RAW_WRITER, str(db), f"w{i}", str(seconds), sql],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]
    results = [json.loads(p.communicate()[0]) for p in procs]
    count = sum(r["count"] for r in results)
    lost = count - sum(recorded(db).values())
    return count / seconds, sum(r["errors"] for r in results), lost


def run_sdk(tmp: Path, writers: int, seconds: float, config: Path) -> tuple[float, int, int]:
    db = tmp / f"sdk-{writers}.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SDK_WRITER, str(db), str(config), f"w{i}", str(seconds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(writers)
    ]
    results = []
    for i, proc in enumerate(procs):
        out, err = proc.communicate()
        if proc.returncode == 0:
            results.append(json.loads(out.strip().splitlines()[-1]))
        else:
            # A writer that never got going (e.g. the store refused to open) is one error.
            say_why(f"SDK w{i}", proc.returncode, err)
            results.append({"count": 0, "errors": 1})
    count = sum(r["count"] for r in results)
    lost = count - sum(recorded(db).values())
    return count / seconds, sum(r["errors"] for r in results), lost


def run_wrapper(tmp: Path, writers: int, seconds: float, config: Path) -> tuple[float, int, int]:
    db = tmp / f"run-{writers}.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outs = [tmp / f"run-{writers}-{i}.out" for i in range(writers)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "zombietop.tui",
                "--db",
                str(db),
                "--config",
                str(config),
                "run",
                "--task",
                f"w{i}",
                "--",
                "sh",
                "-c",
                RUN_CHILD.format(seconds=int(seconds), out=outs[i]),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]
    started = time.monotonic()
    errors = 0
    for i, proc in enumerate(procs):
        _, err = proc.communicate()
        if proc.returncode != 0:
            errors += 1
            say_why(f"run w{i}", proc.returncode, err)
    elapsed = time.monotonic() - started
    conn = sqlite3.connect(db)
    rows = dict(conn.execute("SELECT task_id, counters FROM heartbeats").fetchall())
    seqs = dict(conn.execute("SELECT task_id, seq FROM heartbeats").fetchall())
    conn.close()
    # The newest line each child wrote must be what the store holds: nothing lost at the end.
    # A wrapper that failed may have recorded nothing, or never started its child.
    lost = sum(
        1
        for i, out in enumerate(outs)
        if f"w{i}" not in rows
        or not out.exists()
        or json.loads(rows[f"w{i}"]).get("n") != int(out.read_text())
    )
    return sum(seqs.values()) / elapsed, errors, lost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--writers", default="1,8,32")
    args = parser.parse_args()
    print(f"{args.seconds:g} s per measurement; beats/s summed over writers")
    print(
        f"{'writers':>7} {'raw sqlite3':>12} {'SDK':>8} {'SDK/raw':>8} {'run':>8} {'errors':>7} {'lost':>5}"
    )
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        config = tmp / "config.toml"
        config.write_text(CONFIG)
        for writers in (int(w) for w in args.writers.split(",")):
            raw, raw_err, raw_lost = run_raw(tmp, writers, args.seconds)
            sdk, sdk_err, sdk_lost = run_sdk(tmp, writers, args.seconds, config)
            run, run_err, run_lost = run_wrapper(tmp, writers, args.seconds, config)
            print(
                f"{writers:>7} {raw:>12.0f} {sdk:>8.0f} {sdk / raw:>7.2f}x {run:>8.0f} "
                f"{raw_err + sdk_err + run_err:>7} {raw_lost + sdk_lost + run_lost:>5}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
