"""Real Dagster for the source tests: its own venv, its own ``dagster job execute``.

Dagster (about 150 MB) lives in a venv of its own beside zombietop's, so the test venv stays
small: ``.dagster-venv``, or the venv ``ZOMBIETOP_DAGSTER_VENV`` names, made by ``.ci/run`` or
by hand (docs/howto/dagster.md). A test that needs it skips, saying how to make it, when it is
absent, and fails instead where ``ZOMBIETOP_REQUIRE_DAGSTER`` is set (in CI).

Each run is one ``dagster job execute`` process (the run worker: it writes the run's start)
in a session of its own, on an instance folder of the test's (``DAGSTER_HOME``). Its ops write
their process's pid into a marker file first, so the test waits for that, never for a guess.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL = (
    "python3 -m venv .dagster-venv && .dagster-venv/bin/pip install 'dagster>=1.13,<2' "
    "'dagster-postgres>=0.29,<0.30' (pyproject's [dagster] group)"
)

JOBS = '''
import os
import threading
import time

from dagster import Definitions, in_process_executor, job, op


def _mark(name):
    with open(os.environ["ZQ_MARK"], "a") as marker:
        marker.write(f"{os.getpid()} {name}\\n")


@op
def nap(context):
    """Sleep: no CPU, no I/O, no event (the run worker looks idle)."""
    _mark("nap")
    time.sleep(float(os.environ.get("ZQ_SECONDS", "0")))


@op
def boom(context):
    _mark("boom")
    raise RuntimeError("boom: the op failed on purpose")


@op
def linger(context):
    """End the run but keep its process: a thread nobody joins holds the interpreter."""
    _mark("linger")
    threading.Thread(target=time.sleep, args=(float(os.environ["ZQ_SECONDS"]),)).start()


@job(executor_def=in_process_executor)
def napper():
    nap()


@job(executor_def=in_process_executor)
def failer():
    boom()


@job(executor_def=in_process_executor)
def lingerer():
    linger()


defs = Definitions(jobs=[napper, failer, lingerer])
'''


STATUSES = """
import json
from dagster import DagsterInstance

with DagsterInstance.get() as instance:
    print(json.dumps({run.run_id: run.status.value for run in instance.get_runs()}))
"""

FLEET = """
import os
import sys
import time

from dagster import DagsterInstance, job, op
from dagster._core.events import DagsterEvent
from dagster._core.events.log import EventLogEntry


@op
def nap():
    pass


@job
def fleet():
    nap()


def event(run_id, kind, pid, step=None):
    return EventLogEntry(
        error_info=None,
        level=10,
        user_message="",
        run_id=run_id,
        timestamp=time.time(),
        step_key=step,
        job_name="fleet",
        dagster_event=DagsterEvent(
            event_type_value=kind, job_name="fleet", pid=pid, step_key=step
        ),
    )


count, pid = int(sys.argv[1]), int(sys.argv[2])
with DagsterInstance.get() as instance:
    for _ in range(count):
        run = instance.create_run_for_job(job_def=fleet)
        instance.handle_new_event(event(run.run_id, "PIPELINE_START", pid))
        instance.handle_new_event(event(run.run_id, "STEP_START", pid, "nap"))
"""
"""Writes ``COUNT`` running runs of the job ``fleet`` through Dagster's own instance, each
with its start and its step's start naming ``PID`` as their process: runs in flight on this
host, as many as a benchmark needs, without as many processes."""


def venv() -> Path | None:
    """The venv with Dagster installed, or None."""
    where = Path(os.environ.get("ZOMBIETOP_DAGSTER_VENV") or ROOT / ".dagster-venv")
    return where if (where / "bin" / "dagster").exists() else None


def need_venv() -> Path:
    found = venv()
    if found is None:
        if os.environ.get("ZOMBIETOP_REQUIRE_DAGSTER"):
            pytest.fail(f"Dagster REQUIRED (ZOMBIETOP_REQUIRE_DAGSTER): {INSTALL}")
        pytest.skip(f"Dagster tests SKIPPED: no Dagster venv; make one: {INSTALL}")
    return found


class DagsterRun:
    """One ``dagster job execute`` process: the run worker of one run."""

    def __init__(self, proc: subprocess.Popen[bytes], marker: Path, log: Path) -> None:
        self.proc, self.marker, self.log = proc, marker, log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def started(self, timeout: float = 60.0) -> int:
        """Wait until the op starts; the pid of the process that runs it."""
        deadline = time.monotonic() + timeout
        while not (self.marker.exists() and self.marker.read_text().endswith("\n")):
            if self.proc.poll() is not None:
                raise AssertionError(f"the run ended before its op started:\n{self.said()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout:g}s for the op to start:\n{self.said()}")
            time.sleep(0.1)
        return int(self.marker.read_text().split()[0])

    def said(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def wait(self, timeout: float = 120.0) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        """End the run's whole session: the run worker and whatever it left."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)


class DagsterInstance:
    """A Dagster instance folder (``DAGSTER_HOME``) and the runs started on it."""

    def __init__(self, root: Path, *, postgres_url: str | None = None) -> None:
        self.venv = need_venv()
        self.home = root / "dagster-home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.postgres_url = postgres_url
        # The SQLite storage in the folder (an empty dagster.yaml, as Dagster asks of one), or
        # dagster-postgres's storage on ``postgres_url``.
        storage = ""
        if postgres_url is not None:
            # psycopg2 (dagster-postgres's own dependency): SQLAlchemy would pick psycopg 3.
            driver = postgres_url.replace("postgresql://", "postgresql+psycopg2://", 1)
            storage = f"storage:\n  postgres:\n    postgres_url: {json.dumps(driver)}\n"
        (self.home / "dagster.yaml").write_text(storage)
        self.jobs = root / "zq_jobs.py"
        self.jobs.write_text(JOBS)
        self.root = root
        self.runs: list[DagsterRun] = []

    @property
    def url(self) -> str:
        if self.postgres_url is not None:
            return f"dagster+{self.postgres_url}"
        return f"dagster+sqlite:///{self.home}"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER")}
        env.update(DAGSTER_HOME=str(self.home), DAGSTER_DISABLE_TELEMETRY="1", **extra)
        return env

    def start(self, job: str, *, seconds: float = 0.0) -> DagsterRun:
        """Start ``job`` as Dagster's CLI runs it, in a session of its own."""
        marker = self.root / f"mark-{len(self.runs)}"
        log = self.root / f"run-{len(self.runs)}.log"
        command = [str(self.venv / "bin" / "dagster"), "job", "execute"]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*command, "-f", str(self.jobs), "-j", job],
                env=self.env(ZQ_MARK=str(marker), ZQ_SECONDS=str(seconds)),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        run = DagsterRun(proc, marker, log)
        self.runs.append(run)
        return run

    def statuses(self) -> dict[str, str]:
        """Each run's status as Dagster itself says it (``DagsterInstance.get_runs``)."""
        done = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", STATUSES],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"Dagster could not list its runs:\n{done.stderr[-3000:]}")
        found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
        return found

    def fleet(self, count: int, pid: int) -> None:
        """Write ``count`` running runs whose processes are ``pid`` (``FLEET``)."""
        done = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", FLEET, str(count), str(pid)],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"writing the runs failed:\n{done.stderr[-3000:]}")

    def stop(self) -> None:
        for run in self.runs:
            run.stop()
