"""``zombietop jobs``: one line per job, as the dashboard's jobs view (``J``) shows it.

Each job says how many of its runs ended, its success rate, the median and p95 of its
successful runs (from each run's claim), its latest 20 durations as a sparkline, how its latest
run ended and when, when its schedule fires next, and its open incident.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from zombietop.durations import format_age
from zombietop.errors import ZombietopError
from zombietop.heartbeat_line import format_timestamp
from zombietop.judge.job_table import JobRow, JobSort, sorted_rows
from zombietop.judge.monitor import Monitor
from zombietop.printable import printable
from zombietop.procs import PsutilProbe
from zombietop.sources import open_sources
from zombietop.store import open_store
from zombietop.tui.cli.context import EXIT_OK, add_command, context_of, source_flags
from zombietop.tui.job_rows import TREND_RUNS, rate_words, rows_of
from zombietop.watch.failed_runs import older_failures

JSON_VERSION = 1
"""The shape of ``jobs --json``; it grows by new keys only, and changes number otherwise."""


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``jobs`` on the ``zombietop`` subparsers."""
    jobs = add_command(
        sub,
        "jobs",
        parents=[common, source_flags()],
        summary="one line per job: runs, success rate, durations, trend, next run",
        about="List every job (`zombietop run --job JOB`, an engine's DAG/TASK, a scheduled "
        "job): how many of its runs ended, the share that succeeded, the median and p95 "
        "duration of its successful runs (each from its claim, not its first heartbeat), its "
        f"latest {TREND_RUNS} durations as a sparkline (a bar per success, x for any other "
        "end), how its latest run ended and when, when its schedule fires next, and the task "
        "of its open incident. Jobs with an open incident come first. Exit 0, 2 on an error.",
        examples=("zombietop jobs", "zombietop jobs --sort p95", "zombietop jobs --json"),
    )
    jobs.add_argument("--json", action="store_true", help="print one JSON object")
    jobs.add_argument(
        "--sort",
        choices=[str(sort) for sort in JobSort],
        default=str(JobSort.URGENCY),
        help="the order: urgency (open incident, then a failed last run), name, success rate "
        "(lowest first), p95 (slowest first) or last run (most recent first)",
    )
    jobs.set_defaults(handler=cmd_jobs)


async def cmd_jobs(args: argparse.Namespace) -> int:
    ctx = context_of(args)
    async with (
        await open_store(ctx.db, read_only=True) as store,
        open_sources(ctx.sources) as sources,
    ):
        monitor = Monitor(store, ctx.config, probe=PsutilProbe(), sources=sources)
        snapshot = await monitor.poll()
        if snapshot.error:
            raise ZombietopError(snapshot.error)
        snapshot = await older_failures(store, ctx.config, snapshot)
        latest = await monitor.latest_ended_runs(TREND_RUNS)
    rows = sorted_rows(rows_of(snapshot, latest, ctx.config.schedules), JobSort(args.sort))
    now = snapshot.taken_at if snapshot.taken_at is not None else 0.0
    if args.json:
        print(json.dumps(jobs_json(rows, now), indent=2))
    elif not rows:
        print(
            printable(
                f"no job in {store.describe()} yet; start one with zombietop run --job NAME -- CMD"
            )
        )
    else:
        print("\n".join(jobs_lines(rows, now)))
    return EXIT_OK


def jobs_json(rows: tuple[JobRow, ...], now: float) -> dict[str, Any]:
    """The object ``jobs --json`` prints: its version, when, and a row per job."""
    return {
        "version": JSON_VERSION,
        "generated_at": format_timestamp(now),
        "jobs": [row.as_json() for row in rows],
    }


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else format_age(seconds)


def last_words(row: JobRow, now: float) -> str:
    """``failed 2h10m ago``; ``-`` when no run ended."""
    summary = row.summary
    if summary.last_outcome is None or summary.last_finished_at is None:
        return "-"
    return f"{summary.last_outcome} {format_age(now - summary.last_finished_at)} ago"


def next_words(row: JobRow, now: float) -> str:
    """``in 5h12m``; ``-`` without a schedule."""
    return "-" if row.next_run_at is None else f"in {format_age(row.next_run_at - now)}"


def jobs_lines(rows: tuple[JobRow, ...], now: float) -> list[str]:
    """The table ``jobs`` prints: a header, then a line per job."""
    width = max(len("JOB"), *(len(printable(row.name)) for row in rows))
    lines = [
        f"{'JOB':<{width}}  {'RUNS':>5}  {'OK':>4}  {'MEDIAN':>7}  {'P95':>7}  "
        f"{'LAST ' + str(TREND_RUNS):<{TREND_RUNS}}  {'LAST RUN':<22}  {'NEXT':<10}  INCIDENT"
    ]
    for row in rows:
        summary = row.summary
        name = printable(row.name)
        lines.append(
            printable(
                f"{name:<{width}}  {summary.runs:>5}  {rate_words(row):>4}  "
                f"{_age(summary.median_s):>7}  {_age(summary.p95_s):>7}  "
                f"{row.trend:<{TREND_RUNS}}  {last_words(row, now):<22}  "
                f"{next_words(row, now):<10}  {row.incident or '-'}"
            ).rstrip()
        )
    return lines
