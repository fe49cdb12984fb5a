"""Run the dashboard on the sample fleet: ``python -m zombietop.tui.testing``."""

from __future__ import annotations

import sys

from zombietop.clock import FakeClock
from zombietop.tui.app import ZombietopApp
from zombietop.tui.testing.builders import NOW
from zombietop.tui.testing.fakes import RecordingDesk, RecordingExecutor, SampleSource
from zombietop.tui.testing.fleet import counted_snapshot
from zombietop.tui.testing.jobs import (
    SAMPLE_VIEWS,
    SCHEDULES,
    sample_job_runs,
    sample_jobs_snapshot,
)


def main() -> None:
    """Run the dashboard on the sample fleet: ``python -m zombietop.tui.testing [--wall]``.

    ``--read-only`` hides the action keys. The fleet is the one the snapshot tests and
    ``scripts/export_screenshots.py`` use, with the sample jobs (``J``) and saved views (``v``).
    ``--counted`` shows it as a poll of a store past ``[monitor] read_at_most`` says it.
    """
    wall = "--wall" in sys.argv
    read_only = "--read-only" in sys.argv
    snapshot = sample_jobs_snapshot(oncall=True)
    if "--counted" in sys.argv:
        snapshot = counted_snapshot(snapshot)
    ZombietopApp(
        SampleSource([snapshot], read_only=read_only, job_runs=sample_job_runs()),
        executor=None if read_only else RecordingExecutor(),
        desk=None if read_only else RecordingDesk(),
        clock=FakeClock(NOW),
        wall=wall,
        store_label="sample fleet",
        actor="you@sample",
        views=SAMPLE_VIEWS,
        schedules=SCHEDULES,
    ).run()


if __name__ == "__main__":
    main()
