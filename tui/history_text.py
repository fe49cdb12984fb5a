"""A job's history as lines of text: its summary, then a line per run, newest first. What
``zombietop history JOB`` prints and the jobs view's history (Enter) shows."""

from __future__ import annotations

import time

from zombietop.durations import format_age
from zombietop.job_summary import JobSummary, run_began, run_duration
from zombietop.model import Task
from zombietop.output import LastOutput
from zombietop.printable import printable

DEFAULT_LAST = 20
"""How many of a job's latest runs its history lists."""


def _words(seconds: float | None) -> str:
    return "-" if seconds is None else format_age(seconds)


def summary_line(summary: JobSummary) -> str:
    """``nightly-export: 12 runs, 92% succeeded, median 40m00s, p95 52m00s, last failed``."""
    rate = summary.success_rate
    share = "no run ended yet" if rate is None else f"{rate:.0%} succeeded"
    last = "" if summary.last_outcome is None else f", last {summary.last_outcome}"
    return (
        f"{summary.name}: {summary.runs} runs, {share}, median {_words(summary.median_s)}, "
        f"p95 {_words(summary.p95_s)}{last}"
    )


def history_lines(
    summary: JobSummary, runs: list[Task], outputs: dict[str, LastOutput | None], now: float
) -> list[str]:
    """The table ``history`` prints: the summary, then a line per run, newest first."""
    lines = [printable(summary_line(summary)), ""]
    lines.append(f"{'RUN':>5}  {'STARTED (UTC)':<20}  {'TOOK':>8}  {'OUTCOME':<11}  ATTEMPTS")
    for run in runs:
        began = run_began(run)
        took = run_duration(run)
        if took is None:
            took = now - began
        number = "-" if run.run_number is None else f"#{run.run_number}"
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(began))
        line = (
            f"{number:>5}  {started:<20}  {format_age(took):>8}  {run.state!s:<11}  {run.attempt}"
        )
        last = outputs.get(run.task_id)
        if last is not None:
            line += f"  last output: {last.line.strip()}"
        lines.append(printable(line))
    return lines
