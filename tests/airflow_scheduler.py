"""One real Airflow 3: api-server, scheduler and dag-processor, LocalExecutor, real DAGs.

For the tests that need Airflow itself to run tasks (``tests/core/test_airflow_scheduler.py``):
Airflow runs from its own venv (``tests/airflow_env.py``), with everything it reads in a home
of its own (a free port for its api-server and its log server, a short
``task_instance_heartbeat_timeout``), on SQLite in WAL mode (Airflow sets it on every
connection) or on a PostgreSQL database.

The three run under ``tests/airflow_reaper.py``, a child subreaper: every process Airflow starts
stays its descendant (a task process cut off from its supervisor too), and ``stop()`` ends and
reaps them all.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psutil

from tests.airflow_env import _airflow_env, migrate

T = TypeVar("T")

REAPER = Path(__file__).with_name("airflow_reaper.py")

HEARTBEAT_TIMEOUT = 12
"""Airflow's ``[scheduler] task_instance_heartbeat_timeout`` in these tests, in seconds (300 by
default): past it, the scheduler fails a running task whose heartbeat stopped."""

START_TIMEOUT = 180.0
"""Seconds for the three to start and the DAGs to be parsed, on a busy 2-core machine."""

POOL = "zt_empty"
"""A pool with no slot: its task stays scheduled for ever."""

DAGS: dict[str, str] = {
    "zt_orphan": """
    def work():
        time.sleep(3600)
    PythonOperator(task_id="sleep", python_callable=work)
    """,
    "zt_idle": """
    def work():
        time.sleep(3600)
    sleep = PythonOperator(task_id="sleep", python_callable=work)
    sleep >> PythonOperator(task_id="then", python_callable=lambda: None)
    """,
    "zt_clear": """
    def work():
        time.sleep(3600)
    PythonOperator(task_id="sleep", python_callable=work)
    """,
    "zt_pool": f"""
    PythonOperator(task_id="wait", python_callable=lambda: None, pool={POOL!r})
    """,
    "fe_fail": """
    def boom():
        raise RuntimeError("extract failed")
    extract = PythonOperator(task_id="extract", python_callable=boom, retries=0)
    extract >> [PythonOperator(task_id=t, python_callable=lambda: None) for t in LOADS]
    """,
    "fe_fail_retry": """
    def boom():
        raise RuntimeError("extract failed")
    extract = PythonOperator(
        task_id="extract", python_callable=boom, retries=1, retry_delay=timedelta(hours=1)
    )
    extract >> [PythonOperator(task_id=t, python_callable=lambda: None) for t in LOADS]
    """,
}
"""The DAGs, by id: each a body inside ``with DAG(...)``, indented by four."""

DAG_FILE = """\
import time
from datetime import datetime, timedelta

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

LOADS = ("load_a", "load_b")

with DAG({dag_id!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
{body}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(what: str, check: Callable[[], T | None], timeout: float, step: float = 0.5) -> T:
    """``check()`` once it returns something other than None; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for {what}")
        time.sleep(step)


class AirflowScheduler:
    """A running Airflow 3 with the DAGs above, and how a test talks to it."""

    def __init__(self, venv: Path, home: Path, conn: str) -> None:
        self.venv = venv
        self.home = home
        self.conn = conn
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}"
        self._reaper: subprocess.Popen[str] | None = None
        self._token: str | None = None

    @property
    def env(self) -> dict[str, str]:
        env = _airflow_env(self.home, self.conn)
        env.update(
            AIRFLOW__CORE__EXECUTOR="LocalExecutor",
            AIRFLOW__CORE__DAGS_FOLDER=str(self.home / "dags"),
            AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="False",
            AIRFLOW__CORE__PARALLELISM="8",
            AIRFLOW__CORE__AUTH_MANAGER=(
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="True",
            AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"{self.api}/execution/",
            AIRFLOW__API__HOST="127.0.0.1",
            AIRFLOW__API__PORT=str(self.port),
            AIRFLOW__API__WORKERS="1",
            AIRFLOW__API__SECRET_KEY="zombietop-tests-only",
            AIRFLOW__API_AUTH__JWT_SECRET="zombietop-tests-only-jwt-secret-0123456789",
            AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=str(free_port()),
            AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT=str(HEARTBEAT_TIMEOUT),
            AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL="2",
            AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL="2",
            AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES="1",
            AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
        )
        return env

    # Starting and stopping ---------------------------------------------------------------

    def start(self) -> None:
        dags = self.home / "dags"
        dags.mkdir(parents=True, exist_ok=True)
        for dag_id, body in DAGS.items():
            text = DAG_FILE.format(dag_id=dag_id, body=body.strip("\n"))
            (dags / f"{dag_id}.py").write_text(text)
        migrate(self.venv, self.home, self.conn)
        airflow = str(self.venv / "bin" / "airflow")
        commands = [
            [str(self.home / f"{argv[0]}.log"), airflow, *argv]
            for argv in (["api-server", "--port", str(self.port)], ["scheduler"], ["dag-processor"])
        ]
        self._reaper = subprocess.Popen(
            [sys.executable, str(REAPER), json.dumps(commands)],
            env=self.env,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        wait_until("Airflow's api-server", self._token_if_up, START_TIMEOUT)
        self.request("POST", "/api/v2/pools", {"name": POOL, "slots": 0})
        for dag_id in DAGS:
            wait_until(f"DAG {dag_id} parsed", lambda d=dag_id: self._parsed(d), START_TIMEOUT)

    def stop(self) -> None:
        """End every process this Airflow started (the reaper kills and reaps them all)."""
        reaper = self._reaper
        if reaper is None:
            return
        reaper.terminate()
        try:
            reaper.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            for proc in self.processes():
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(reaper.pid, signal.SIGKILL)
            reaper.wait()

    def processes(self) -> list[psutil.Process]:
        """Every live process this Airflow started, the task processes and orphans too."""
        if self._reaper is None:
            return []
        try:
            return psutil.Process(self._reaper.pid).children(recursive=True)
        except psutil.Error:
            return []

    def check_alive(self) -> None:
        """Fail, with the logs, when one of the three has exited."""
        if self._reaper is not None and self._reaper.poll() is not None:
            _, said = self._reaper.communicate()
            logs = "".join(
                f"--- {name} ---\n{self.log_tail(name)}\n"
                for name in ("api-server", "scheduler", "dag-processor")
            )
            raise AssertionError(f"{said.strip()}\n{logs}")

    def log_tail(self, name: str, size: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return (self.home / f"{name}.log").read_text(errors="replace")[-size:]
        return ""

    # Talking to it ------------------------------------------------------------------------

    def _token_if_up(self) -> str | None:
        self.check_alive()
        try:
            with urllib.request.urlopen(f"{self.api}/auth/token", timeout=5) as answer:
                self._token = str(json.load(answer)["access_token"])
        except (OSError, ValueError):
            return None
        return self._token

    def _parsed(self, dag_id: str) -> bool | None:
        self.check_alive()
        try:
            self.request("GET", f"/api/v2/dags/{dag_id}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
        return True

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One REST call as an admin; its JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        ask = urllib.request.Request(f"{self.api}{path}", data=data, method=method)
        ask.add_header("Authorization", f"Bearer {self._token}")
        if data is not None:
            ask.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(ask, timeout=30) as answer:
            return json.load(answer)

    def trigger(self, dag_id: str) -> str:
        """Start a manual run (no logical date, as every Airflow 3 manual run); its run id."""
        run = self.request("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None})
        return str(run["dag_run_id"])

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.request(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
        )
        return found

    def wait_state(
        self, dag_id: str, run_id: str, task_id: str, want: Callable[[dict[str, Any]], bool],
        what: str, timeout: float = 120.0,
    ) -> dict[str, Any]:  # fmt: skip
        """The task instance once ``want`` holds for it (checked every half second)."""

        def check() -> dict[str, Any] | None:
            self.check_alive()
            found = self.task_instance(dag_id, run_id, task_id)
            return found if want(found) else None

        return wait_until(f"{dag_id}/{task_id}/{run_id} {what}", check, timeout)


@contextlib.contextmanager
def running_airflow(venv: Path, home: Path, conn: str) -> Iterator[AirflowScheduler]:
    """Airflow started, and everything it started ended after, however the block ends."""
    airflow = AirflowScheduler(venv, home, conn)
    try:
        airflow.start()
        yield airflow
    except BaseException:
        for name in ("api-server", "scheduler", "dag-processor"):
            print(f"--- airflow {name} log ---\n{airflow.log_tail(name)}")
        raise
    finally:
        airflow.stop()
