"""``zombietop history JOB``: a job's latest runs and what they add up to.

Each run says when it started, how long it took, how it ended and in how many attempts, and a
failed run its last output line; above them, the job's summary (runs, success rate, median and
p95 of the successful runs), read from the store's summary rather than from every run.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from zombietop.errors import TaskNotFound, ZombietopError
from zombietop.heartbeat_line import format_timestamp
from zombietop.job_summary import JobSummary, run_began, run_duration
from zombietop.model import Task, TaskState
from zombietop.output import LastOutput, last_output_of
from zombietop.procs import this_host
from zombietop.store import Store, open_store
from zombietop.tui.cli.context import EXIT_OK, add_command, context_of
from zombietop.tui.history_text import DEFAULT_LAST, history_lines


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``history`` on the ``zombietop`` subparsers."""
    history = add_command(
        sub,
        "history",
        parents=[common],
        summary="a job's runs, durations and outcomes",
        about="List the latest runs of a job (`zombietop run --job JOB`), newest first: when "
        "each started, how long it took, how it ended, its attempts, and the last output line "
        "of a failed run; above them the job's runs, success rate, and the median and p95 "
        "duration of its successful runs. Exit 0, or 2 when the store has no run of JOB.",
        examples=("zombietop history nightly-export", "zombietop history nightly-export --json"),
    )
    history.add_argument(
        "job",
        metavar="JOB",
        help="the job's name, as given to --job (a task run alone with --task: its id)",
    )
    history.add_argument("--json", action="store_true", help="print one JSON object")
    history.add_argument(
        "--last",
        type=int,
        default=DEFAULT_LAST,
        metavar="N",
        help=f"how many of the latest runs to list (default {DEFAULT_LAST})",
    )
    history.set_defaults(handler=cmd_history)


async def cmd_history(args: argparse.Namespace) -> int:
    ctx = context_of(args)
    if args.last < 1:
        raise ZombietopError(f"--last {args.last}: give at least 1, e.g. --last 20")
    async with await open_store(ctx.db, read_only=True) as store:
        runs = await store.job_runs(args.job, args.last)
        summary = await _summary(store, args.job)
        now = await store.now()
        if not runs and summary.runs == 0:
            runs, summary = await _task_alone(store, args.job, now)
        host = this_host()
        outputs = {
            run.task_id: last_output_of(store, run, host)
            for run in runs
            if run.state is TaskState.FAILED
        }
    if not runs and summary.runs == 0:
        raise ZombietopError(
            f"no run of job {args.job} in {store.describe()}; start one with "
            f"zombietop run --job {args.job} -- CMD"
        )
    if args.json:
        print(json.dumps(history_json(summary, runs, outputs, now), indent=2))
    else:
        print("\n".join(history_lines(summary, runs, outputs, now)))
    return EXIT_OK


async def _task_alone(store: Store, task_id: str, now: float) -> tuple[list[Task], JobSummary]:
    """A task named alone (``run --task ID``) as its own job of one run: that run, and the
    summary it makes (none when there is no such task)."""
    try:
        task = await store.get_task(task_id)
    except TaskNotFound:
        return [], JobSummary(name=task_id)
    if task.job is not None:
        return [], JobSummary(name=task_id)
    summary = JobSummary(name=task_id)
    return [task], summary.with_run(task, now) if task.state.finished else summary


async def _summary(store: Store, job: str) -> JobSummary:
    for summary in await store.job_summaries():
        if summary.name == job:
            return summary
    return JobSummary(name=job)


def history_json(
    summary: JobSummary, runs: list[Task], outputs: dict[str, LastOutput | None], now: float
) -> dict[str, Any]:
    """The object ``history --json`` prints."""
    return {
        "job": summary.as_json(),
        "runs": [_run_json(run, outputs.get(run.task_id), now) for run in runs],
    }


def _run_json(run: Task, last: LastOutput | None, now: float) -> dict[str, Any]:
    began = run_began(run)
    return {
        "task_id": run.task_id,
        "run_number": run.run_number,
        "started_at": format_timestamp(began),
        "finished_at": None if run.finished_at is None else format_timestamp(run.finished_at),
        "duration_s": run_duration(run),
        "running_s": None if run.finished_at is not None else now - began,
        "outcome": str(run.state),
        "attempts": run.attempt,
        "exit_code": run.exit_code,
        "last_output": None if last is None else last.line.strip(),
    }
